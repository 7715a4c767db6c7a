# Shared by headroom-prolog, headroom-epilog, headroom-task-prolog and headroom-healthcheck
# (sourced, not run). docs/slurm.md explains what each does and how to install them.
#
# Settings (all optional) come from /etc/default/headroom-slurm (HEADROOM_SLURM_DEFAULTS
# names another file), else from the environment:
#   HEADROOM                the headroom binary (default: `headroom` on PATH, then
#                           /usr/bin/headroom, /usr/local/bin/headroom)
#   HEADROOM_SLURM_TMPBASE  where each job's TMPDIR is made (default /tmp)
#   HEADROOM_SLURM_DRAIN    1 (default): drain a node that is broken; 0: only log it
#   HEADROOM_SLURM_NOEXEC   warn (default) or drain: a noexec temp dir (tmp.exec) only logs,
#                           or drains like a broken one (for clusters that run torch.compile)
#   HEADROOM_SLURM_REFUSE   1 (default): requeue-hold a job that does not fit; 0: only log
#   HEADROOM_SLURM_GRACE    clean's --grace in the epilog (default 1s)
#   HEADROOM_SLURM_AUDIT_LOG clean's --audit-log (default: clean's, /var/log/headroom/clean.log)
#   HEADROOM_SLURM_CLEAN_FLAGS more flags for the epilog's clean, word-split (e.g.
#                           "--ignore-unreadable 1" where a sandbox hides pid 1 even from root)
#   HEADROOM_SLURM_LOG_SOCKET the syslog socket for logger -u (default: logger's, /dev/log)
#   HEADROOM_SLURM_STATE    where the prolog leaves notes for the task prolog (default
#                           /run/headroom-slurm)
#   HEADROOM_SLURM_TIMEOUT  seconds any one headroom run may take (default 30)
#   HEADROOM_SLURM_CHECK_USER the user headroom-healthcheck checks as (default nobody)
#   SLURM_CONF              for scontrol, when slurm.conf is not /etc/slurm/slurm.conf

# shellcheck disable=SC2034  # HR_SHAPE and HR_SHM_NEED are set here for the scripts that source this
readonly HEADROOM_SLURM_TAG=headroom-slurm

headroom_slurm_load_settings() {
  local defaults=${HEADROOM_SLURM_DEFAULTS:-/etc/default/headroom-slurm}
  # shellcheck disable=SC1090
  if [ -r "$defaults" ]; then . "$defaults"; fi
  HEADROOM_SLURM_TMPBASE=${HEADROOM_SLURM_TMPBASE:-/tmp}
  HEADROOM_SLURM_DRAIN=${HEADROOM_SLURM_DRAIN:-1}
  HEADROOM_SLURM_NOEXEC=${HEADROOM_SLURM_NOEXEC:-warn}
  HEADROOM_SLURM_REFUSE=${HEADROOM_SLURM_REFUSE:-1}
  HEADROOM_SLURM_GRACE=${HEADROOM_SLURM_GRACE:-1s}
  HEADROOM_SLURM_TIMEOUT=${HEADROOM_SLURM_TIMEOUT:-30}
  HEADROOM_SLURM_STATE=${HEADROOM_SLURM_STATE:-/run/headroom-slurm}
  # slurmd sets SLURM_CONF for a Prolog and Epilog but not for a HealthCheckProgram; a
  # slurm.conf outside /etc/slurm is named in the defaults file for scontrol.
  if [ -n "${SLURM_CONF:-}" ]; then export SLURM_CONF; fi
  export NO_COLOR=1
}

# log PRIORITY MESSAGE: one line to syslog (daemon facility, tag headroom-slurm) and stderr
# (slurmd keeps neither by default, so syslog is where an admin looks). A missing syslog
# socket is not an error of the job.
hr_log() {
  local priority=$1
  shift
  local line="${SLURM_JOB_ID:+job $SLURM_JOB_ID: }$*"
  logger ${HEADROOM_SLURM_LOG_SOCKET:+-u "$HEADROOM_SLURM_LOG_SOCKET"} \
    -t "$HEADROOM_SLURM_TAG" -p "daemon.$priority" -- "$line" 2>/dev/null || true
  echo "$HEADROOM_SLURM_TAG: $line" >&2
}

# Sets HEADROOM to a runnable binary, or returns 1 (the caller lets the job run).
hr_find_headroom() {
  local candidate
  for candidate in "${HEADROOM:-}" "$(command -v headroom 2>/dev/null)" /usr/bin/headroom \
    /usr/local/bin/headroom; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      HEADROOM=$candidate
      return 0
    fi
  done
  return 1
}

# hr_run_as UID GID CMD...: runs CMD as the job's user (setpriv), with a time limit. The
# temp-dir checks must see what the job will: root ignores directory permissions and writes
# into ext4's reserved blocks (docs/checks.md, tmp.space).
hr_run_as() {
  local uid=$1 gid=$2
  shift 2
  if [ "$uid" = 0 ] || [ "$(id -u)" != 0 ]; then
    timeout -k 5 "$HEADROOM_SLURM_TIMEOUT" "$@"
  else
    timeout -k 5 "$HEADROOM_SLURM_TIMEOUT" setpriv --reuid="$uid" --regid="$gid" \
      --clear-groups -- "$@"
  fi
}

# The finding lines of a text report at SEVERITY ("critical", "warn"): "<id> <summary>", one
# per line. The report's finding lines start with the severity padded to 9 columns.
hr_findings() {
  local severity=$1
  awk -v severity="$severity" '$1 == severity && NF >= 3 {
    $1 = ""; sub(/^ +/, ""); id = $1; $1 = ""; sub(/^ +/, ""); print id ": " $0 }'
}

# Node health: the checks a job cannot fix, run without a job shape as UID:GID with
# TMPDIR=<HEADROOM_SLURM_TMPBASE>. Prints the reasons the node is broken, one per line
# (empty: healthy). Returns 0 when headroom gave an answer, 1 when it could not run (missing,
# crashed, timed out: never a reason to drain).
hr_node_problems() {
  local uid=$1 gid=$2 report status base=$HEADROOM_SLURM_TMPBASE
  local only=(--only tmp.space --only tmp.socket --only shm.capacity)
  if [ "$HEADROOM_SLURM_NOEXEC" = drain ]; then only+=(--only tmp.exec); fi
  report=$(cd / && hr_run_as "$uid" "$gid" env -u TEMP -u TMP TMPDIR="$base" \
    "$HEADROOM" check "${only[@]}" --fail-on warn 2>&1)
  status=$?
  case $status in
    0) return 0 ;;
    1) ;;
    *)
      hr_log warning "headroom check could not run (exit $status), not judging the node:" \
        "$(printf '%s' "$report" | tail -n 3 | tr '\n' ' ')"
      return 1
      ;;
  esac
  # Critical: no usable temp dir at all, /dev/shm missing, read-only or not writable (with
  # no job shape, shm.capacity's size verdicts are warnings, which are not node problems).
  printf '%s\n' "$report" | hr_findings critical
  # The node's temp dir itself unusable (read-only, not writable, full) is only a warning
  # for check when Python would fall back to /var/tmp, but jobs and tools that use the temp
  # dir by name fail on this node.
  printf '%s\n' "$report" | hr_findings warn |
    sed -n "s|^tmp\.space: TMPDIR=$base is not usable (\(.*\)): Python's tempfile skips it.*|tmp.space: $base is not usable (\1)|p"
  if [ "$HEADROOM_SLURM_NOEXEC" = drain ]; then
    printf '%s\n' "$report" | hr_findings warn | grep '^tmp\.exec: ' || true
  fi
  return 0
}

# Drains this node with "headroom: REASON" (at most 200 characters), unless it is already
# drained or draining, or HEADROOM_SLURM_DRAIN=0.
hr_drain() {
  local node=$1 reason="headroom: $2"
  reason=${reason:0:200}
  if [ "$HEADROOM_SLURM_DRAIN" != 1 ]; then
    hr_log warning "node $node is unfit, not draining (HEADROOM_SLURM_DRAIN=0): $reason"
    return 0
  fi
  hr_log err "draining $node: $reason"
  local error
  if ! error=$(scontrol update nodename="$node" state=drain reason="$reason" 2>&1); then
    hr_log err "scontrol update nodename=$node state=drain failed: $error"
    return 1
  fi
}

# The job's shape as `headroom check` flags, from the words "headroom:KEY=VALUE,..." in the
# job's comment (sbatch --comment) and from SLURM_JOB_GPUS. Keys: workers, prefetch, batch
# (or batch-bytes), ranks, gpus, worker-rss, ckpt (or ckpt-size), keep, dir, and shm (the
# /dev/shm bytes the job needs, when it knows that rather than its DataLoader shape).
# Sets HR_SHAPE (the flags) and HR_SHM_NEED (bytes or empty). Unknown keys and malformed
# sizes are logged and ignored: a typo must not block a job.
hr_shape_flags() {
  local comment=$1 spec pair key value gpus=""
  HR_SHAPE=()
  HR_SHM_NEED=""
  spec=$(printf '%s' "$comment" | grep -o 'headroom:[^ ]*' | head -n 1)
  spec=${spec#headroom:}
  local IFS=,
  for pair in $spec; do
    key=${pair%%=*}
    value=${pair#*=}
    if [ "$key" = "$pair" ] || [ -z "$value" ]; then
      hr_log warning "ignoring '$pair' in the job comment (want KEY=VALUE)"
      continue
    fi
    case $key in
      workers | prefetch | ranks | keep | worker-rss) HR_SHAPE+=("--$key" "$value") ;;
      gpus) gpus=$value ;;
      batch | batch-bytes) HR_SHAPE+=(--batch-bytes "$value") ;;
      ckpt | ckpt-size) HR_SHAPE+=(--ckpt-size "$value") ;;
      dir) HR_SHAPE+=(--dir "$value") ;;
      shm)
        if ! HR_SHM_NEED=$(hr_bytes "$value"); then
          hr_log warning "ignoring shm=$value in the job comment (not a size)"
          HR_SHM_NEED=""
        fi
        ;;
      *) hr_log warning "ignoring unknown key '$key' in the job comment" ;;
    esac
  done
  # SLURM_JOB_GPUS lists the GPU indexes allocated on this node ("0,1,3").
  if [ -z "$gpus" ] && [ -n "${SLURM_JOB_GPUS:-}" ]; then
    gpus=$(printf '%s' "$SLURM_JOB_GPUS" | tr ',' '\n' | grep -c .)
  fi
  if [ -n "$gpus" ]; then HR_SHAPE+=(--gpus "$gpus"); fi
}

# Size text ("8G", "8GiB", "512M", "1.5T", "1048576") to bytes; binary units, as headroom.
hr_bytes() {
  local text=${1%B}
  text=${text%i}
  [ -n "$text" ] || return 1
  numfmt --from=iec "$text" 2>/dev/null
}

# /dev/shm's free bytes as headroom sees them (statvfs), as UID:GID: the evidence
# {"name": "avail_bytes", "value": N} of shm.capacity (docs/json.md).
hr_shm_avail() {
  local uid=$1 gid=$2
  hr_run_as "$uid" "$gid" "$HEADROOM" check --only shm.capacity --json --fail-on never \
    2>/dev/null | tr -d ' \n' | grep -o '"name":"avail_bytes","value":[0-9]*' | head -n 1 |
    grep -o '[0-9]*$'
}

# The per-job temp dir: short (multiprocessing's socket paths must stay under 108 bytes).
hr_job_tmpdir() {
  printf '%s/slurm-%s\n' "$HEADROOM_SLURM_TMPBASE" "$1"
}

# The note the prolog leaves for a job it refused (root's, readable by the task prolog).
hr_refusal_note() {
  printf '%s/refused.%s\n' "$HEADROOM_SLURM_STATE" "$1"
}
