#!/usr/bin/env bash
# Sourced by tests/slurm/in-namespace.sh: starts munged, slurmctld and slurmd of a
# one-node cluster "hrnode" on 127.0.0.1, all state under $STATE. The caller is already in
# private mount, UTS, network and IPC namespaces (tests/slurm/run), so nothing here touches
# the host's /dev/shm, /tmp, /etc or ports.

daemon_pids=()
stop_daemons() {
  local pid
  for pid in "${daemon_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${daemon_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  daemon_pids=()
}

# Runs "$@" until it succeeds, at most $1 tenths of a second.
retry() {
  local tenths=$1
  shift
  for _ in $(seq "$tenths"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  "$@"
}

start_cluster() {
  hostname hrnode
  # Slurm resolves its listening address with AI_ADDRCONFIG, which finds nothing in a
  # network namespace that has only loopback: a veth pair gives it a non-loopback address.
  ip link set lo up
  ip link add hr0 type veth peer name hr1
  ip addr add 10.254.0.1/24 dev hr0
  ip link set hr0 up
  ip link set hr1 up
  # A private /etc/hosts, passwd and group: the node's name and the job user "hrjob"
  # exist only in this namespace.
  printf '127.0.0.1 localhost hrnode\n' >"$STATE/hosts"
  cp /etc/passwd "$STATE/passwd"
  cp /etc/group "$STATE/group"
  mkdir -p "$STATE/home"
  chown 4242:4242 "$STATE/home"
  echo "hrjob:x:4242:4242:headroom slurm test:$STATE/home:/bin/sh" >>"$STATE/passwd"
  echo "hrjob:x:4242:" >>"$STATE/group"
  mount --bind "$STATE/hosts" /etc/hosts
  mount --bind "$STATE/passwd" /etc/passwd
  mount --bind "$STATE/group" /etc/group

  mkdir -p "$STATE/munge" "$STATE/munge-socket" "$STATE/spool" "$STATE/ctld" "$STATE/log"
  chmod 0700 "$STATE/munge"
  chmod 0755 "$STATE/munge-socket"
  head -c 1024 /dev/urandom >"$STATE/munge/munge.key"
  chmod 0400 "$STATE/munge/munge.key"
  munged --force --foreground --socket="$STATE/munge-socket/munge.sock" \
    --key-file="$STATE/munge/munge.key" --pid-file="$STATE/munge/munged.pid" \
    --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge/seed" \
    >"$STATE/log/munged.out" 2>&1 &
  daemon_pids+=($!)
  retry 50 test -S "$STATE/munge-socket/munge.sock"

  export SLURM_CONF="$STATE/slurm.conf"
  local cpus
  cpus=$(nproc)
  cat >"$SLURM_CONF" <<CONF
ClusterName=headroom-test
SlurmctldHost=hrnode(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$STATE/munge-socket/munge.sock
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=30
MessageTimeout=20
InactiveLimit=0
KillWait=2
MinJobAge=600
$SLURM_EXTRA_CONF
NodeName=hrnode NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=main Nodes=hrnode Default=YES MaxTime=INFINITE State=UP
CONF
  slurmctld -D -i -f "$SLURM_CONF" >"$STATE/log/slurmctld.out" 2>&1 &
  daemon_pids+=($!)
  retry 100 scontrol ping
  slurmd -D -N hrnode -f "$SLURM_CONF" >"$STATE/log/slurmd.out" 2>&1 &
  daemon_pids+=($!)
  retry 200 node_is_idle
}

node_is_idle() {
  sinfo -h -n hrnode -o %T | grep -qx idle
}

# Up and taking jobs (jobs that waited for it may start at once: idle, mixed or allocated).
node_is_up() {
  sinfo -h -n hrnode -o %T | grep -qxE 'idle|mixed|allocated|completing'
}
