#!/usr/bin/env bash
# Run by tests/slurm/run inside private mount, UTS, network and IPC namespaces:
#   in-namespace.sh STATE_DIR REPO HEADROOM_BIN
# Starts a one-node Slurm whose Prolog, Epilog and TaskProlog are deploy/slurm's, and shows:
#   a. stale /dev/shm segments and temp dirs a job leaves are reclaimed by the epilog, while
#      a segment a still-running job of the same user holds (and another user's) is kept;
#   b. a job whose declared shape does not fit this node's /dev/shm is requeued and held,
#      with the reason in `scontrol show job` and in its output, and the node stays up;
#   c. a node whose /tmp is broken (read-only) is drained with a readable reason;
#   d. as HealthCheckProgram, headroom drains the broken node again after an admin resumed
#      it, and resumes it once /tmp works, but not a node drained for another reason;
#   e. when headroom crashes or is missing, jobs run and no node is drained.
# Every daemon started here is stopped by pid on exit, also on failure.
# shellcheck disable=SC2016  # the job scripts are single-quoted: they expand in the job
set -euo pipefail
STATE=$1
REPO=$2
HEADROOM_BIN=$3
source "$REPO/tests/slurm/cluster.sh"
trap stop_daemons EXIT
trap 'exit 143' TERM INT

failures=0
pass() { echo "  ok: $*"; }
fail() {
  echo "  FAIL: $*" >&2
  failures=$((failures + 1))
}
expect() {  # expect DESCRIPTION CMD...
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

# The job's /dev/shm and /tmp: 64 MiB tmpfs each, seen only in this mount namespace.
mount -t tmpfs -o size=64m,mode=1777 headroom-test-shm /dev/shm
mount -t tmpfs -o size=64m,mode=1777 headroom-test-tmp /tmp

# syslog: logger -u writes datagrams to this socket; the listener keeps them in syslog.log.
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as out:
    while True:
        out.write(s.recv(65536) + b"\n")
' "$STATE/syslog.sock" "$STATE/syslog.log" &
daemon_pids+=($!)

mkdir -p "$STATE/bin"
cat >"$STATE/headroom-slurm.defaults" <<EOF
HEADROOM=$HEADROOM_BIN
HEADROOM_SLURM_AUDIT_LOG=$STATE/log/clean-audit.log
HEADROOM_SLURM_LOG_SOCKET=$STATE/syslog.sock
SLURM_CONF=$STATE/slurm.conf
HEADROOM_SLURM_STATE=$STATE/run
EOF
# Some sandboxes hide their pid 1 even from root (/proc/1/exe cannot be read). clean
# then keeps every directory that pid 1 could enter; it runs outside this mount namespace
# and cannot reach the private /tmp, which the epilog is told with the documented flag.
if ! readlink /proc/1/exe >/dev/null 2>&1; then
  echo "HEADROOM_SLURM_CLEAN_FLAGS='--ignore-unreadable 1'" >>"$STATE/headroom-slurm.defaults"
fi
# slurmd gives its scripts a clean environment: these wrappers point them at the settings.
for script in prolog epilog task-prolog healthcheck; do
  printf '#!/bin/sh\nHEADROOM_SLURM_DEFAULTS=%s exec %s "$@"\n' \
    "$STATE/headroom-slurm.defaults" "$REPO/deploy/slurm/headroom-$script" >"$STATE/bin/$script"
  chmod 0755 "$STATE/bin/$script"
done
SLURM_EXTRA_CONF="Prolog=$STATE/bin/prolog
Epilog=$STATE/bin/epilog
TaskProlog=$STATE/bin/task-prolog"
started=$(date +%s)
start_cluster
echo "cluster up in $(($(date +%s) - started)) s: $(sinfo -h -o '%N %T')"

home=$STATE/home
submit() {  # submit NAME [sbatch options...] -- SCRIPT
  local name=$1
  shift
  local options=()
  while [ "$1" != -- ]; do
    options+=("$1")
    shift
  done
  shift
  sbatch --parsable --uid=hrjob --gid=hrjob --chdir="$home" -J "$name" -o "$home/$name.out" \
    "${options[@]}" --wrap "$1"
}
job_state() { scontrol show job "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
wait_state() {  # wait_state JOB STATE... : until the job is in one of the states (60 s)
  local job=$1 state
  shift
  for _ in $(seq 600); do
    state=$(job_state "$job")
    for wanted in "$@"; do [ "$state" = "$wanted" ] && return 0; done
    sleep 0.1
  done
  echo "job $job is $state, not $*" >&2
  scontrol show job "$job" >&2
  return 1
}
wait_file() { retry 600 test -e "$1"; }

echo "== a. the epilog reclaims what a finished job left, keeps what a running job holds"
# Another user's stale segment: --user keeps the epilog to the job owner's files.
head -c 1M /dev/zero >/dev/shm/nccl-shm-root-stale
holder=$(submit holder -- 'exec 3<>/dev/shm/torch_holder_1
head -c 4M /dev/zero >&3
touch holder.ready
exec sleep 300')  # one process, holding fd 3: proctrack/linuxproc loses orphaned children
wait_file "$home/holder.ready"
leaver=$(submit leaver -- 'head -c 2M /dev/zero >/dev/shm/nccl-shm-00c0ffee
head -c 1M /dev/zero >/dev/shm/torch_4242_1_2
echo "$TMPDIR" >leaver.tmpdir
mkdir "$TMPDIR/pymp-abc123" && head -c 1M /dev/zero >"$TMPDIR/pymp-abc123/batch"
mkdir /tmp/torchinductor_hrjob && head -c 1M /dev/zero >/tmp/torchinductor_hrjob/kernel.so
ls -la /dev/shm "$TMPDIR" /tmp')
wait_state "$leaver" COMPLETED
leaver_tmpdir=$(cat "$home/leaver.tmpdir")
expect "the task prolog gave the job its own TMPDIR ($leaver_tmpdir)" \
  test "$leaver_tmpdir" = "/tmp/slurm-$leaver"
expect "its stale nccl-* segment is gone" test ! -e /dev/shm/nccl-shm-00c0ffee
expect "its stale torch_* segment is gone" test ! -e /dev/shm/torch_4242_1_2
expect "its TMPDIR is gone" test ! -e "$leaver_tmpdir"
expect "the segment the running job holds is kept" test -e /dev/shm/torch_holder_1
expect "another user's segment is kept" test -e /dev/shm/nccl-shm-root-stale
expect "its /tmp entries wait while the user still runs a job" test -e /tmp/torchinductor_hrjob
scancel "$holder"
wait_state "$holder" CANCELLED
retry 100 test ! -e /dev/shm/torch_holder_1 || true
expect "the held segment is reclaimed once its job ended" test ! -e /dev/shm/torch_holder_1
expect "the user's /tmp entries are reclaimed once no job of theirs runs" \
  test ! -e /tmp/torchinductor_hrjob
expect "another user's segment is still kept" test -e /dev/shm/nccl-shm-root-stale
expect "the epilog logged what it freed" grep -q "job $leaver: Freed" "$STATE/syslog.log"
grep -h "headroom-slurm" "$STATE/syslog.log" | sed 's/^/  syslog: /'

echo "== b. a job whose declared shape does not fit /dev/shm is requeued and held"
wait_held() {  # until the job was requeued and held (60 s)
  for _ in $(seq 600); do
    scontrol show job "$1" | grep -q 'JobState=PENDING Reason=job_requeued_in_held_state' &&
      return 0
    sleep 0.1
  done
  scontrol show job "$1" >&2
  return 1
}
unfit=$(submit unfit --comment "headroom:workers=4,batch=32MiB" -- 'touch unfit.ran')
wait_held "$unfit"
show=$(scontrol show job "$unfit")
printf '%s\n' "$show" | grep -E 'JobState|AdminComment|Comment' | sed 's/^/  /'
expect "the job is held" grep -q 'JobState=PENDING Reason=job_requeued_in_held_state' <<<"$show"
expect "scontrol show job gives the reason" \
  grep -q 'AdminComment=headroom: shm.capacity: /dev/shm has .* free of .* but the job needs' <<<"$show"
expect "the job's output gives the reason" retry 50 grep -q "slurm job $unfit was not started on hrnode and is held: headroom: shm.capacity" \
  "$home/unfit.out"
expect "the job's script never ran" test ! -e "$home/unfit.ran"
sed 's/^/  unfit.out: /' "$home/unfit.out"
shm_job=$(submit shm-need --comment "run 7 headroom:shm=1G" -- 'touch shm-need.ran')
wait_held "$shm_job"
expect "shm=1G is refused too, in words" \
  grep -q 'AdminComment=headroom: /dev/shm has [0-9.]*MiB free but the job declared shm=1.0GiB' \
  <<<"$(scontrol show job "$shm_job")"
expect "the node was not drained for a job that does not fit" retry 100 node_is_idle
fits=$(submit fits --comment "headroom:workers=2,batch=1MiB" -- 'touch fits.ran')
wait_state "$fits" COMPLETED
expect "a job whose shape fits runs" test -e "$home/fits.ran"
scancel "$unfit" "$shm_job"

echo "== c. a node whose /tmp is broken is drained with a readable reason"
mount -o remount,ro /tmp
broken=$(submit broken -- 'touch broken.ran')
for _ in $(seq 300); do
  sinfo -h -n hrnode -o %T | grep -q drain && break
  sleep 0.1
done
node=$(scontrol show node hrnode)
printf '%s\n' "$node" | grep -E 'State=|Reason=' | sed 's/^/  /'
expect "the node is drained" grep -q 'State=[A-Z+]*DRAIN' <<<"$node"
expect "scontrol show node gives headroom's reason" \
  grep -q 'Reason=headroom: tmp.space: /tmp is not usable' <<<"$node"
expect "the job did not run on the broken node" test ! -e "$home/broken.ran"
scancel "$broken" || true

echo "== d. HealthCheckProgram drains a broken node and resumes it once it works again"
scontrol update nodename=hrnode state=resume
expect "an admin resumed the node" retry 300 node_is_up
cp "$SLURM_CONF" "$STATE/slurm.conf.before-healthcheck"
sed -i "s|^NodeName=|HealthCheckProgram=$STATE/bin/healthcheck\\nHealthCheckInterval=2\\nNodeName=|" \
  "$SLURM_CONF"
scontrol reconfigure
wait_drained() {
  for _ in $(seq 200); do
    sinfo -h -n hrnode -o %T | grep -q drain && return 0
    sleep 0.1
  done
  return 1
}
expect "the health check drained it again" wait_drained
expect "with headroom's reason" \
  grep -q 'Reason=headroom: tmp.space: /tmp is not usable' <<<"$(scontrol show node hrnode)"
mount -o remount,rw /tmp
expect "the health check resumed it once /tmp worked again" retry 200 node_is_idle
expect "and said so in syslog" grep -q 'resumed hrnode: healthy again' "$STATE/syslog.log"
scontrol update nodename=hrnode state=drain reason="disk replacement"
sleep 5  # two health-check intervals
expect "a node drained for another reason stays drained" \
  grep -q 'Reason=disk replacement' <<<"$(scontrol show node hrnode)"

echo "== e. headroom crashing or missing never drains a node"
scontrol update nodename=hrnode state=resume
retry 300 node_is_idle
cp "$STATE/slurm.conf.before-healthcheck" "$SLURM_CONF"
scontrol reconfigure
printf '#!/bin/sh\nkill -SEGV $$\n' >"$STATE/bin/headroom-crashes"
chmod 0755 "$STATE/bin/headroom-crashes"
for binary in "$STATE/bin/headroom-crashes" /nonexistent/headroom; do
  sed -i "s|^HEADROOM=.*|HEADROOM=$binary|" "$STATE/headroom-slurm.defaults"
  name=runs-$(basename "$(dirname "$binary")")
  job=$(submit "$name" --comment "headroom:workers=4,batch=32MiB" -- "touch $name.ran")
  wait_state "$job" COMPLETED
  expect "with HEADROOM=$binary a job runs" test -e "$home/$name.ran"
  expect "and the node stays up" retry 300 node_is_idle
done
expect "the crash is logged, not taken for a verdict" \
  grep -q 'headroom check could not run (exit 139), not judging the node' "$STATE/syslog.log"
expect "the missing binary is logged" \
  grep -q 'headroom not found (set HEADROOM in /etc/default/headroom-slurm): job not checked' \
  "$STATE/syslog.log"

echo "== done: $failures failure(s)"
[ "$failures" = 0 ]
