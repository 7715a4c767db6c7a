# Runs inside tests/deb/run's private mount and pid namespace: mounts an overlay of
# the cached Debian 12 root, installs the package with apt and checks it there.
# Arguments: BASE WORK DEB APT_ARCHIVES.
set -euo pipefail
base=$1 work=$2 deb=$3 archives=$4
root=$work/root
failures=0
pass() { echo "    ok: $*"; }
fail() { echo "    FAIL: $*" >&2; failures=$((failures + 1)); }

mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/upper,workdir=$work/work" "$root"
mount -t proc proc "$root/proc"                    # this pid namespace's, not the host's
mount --rbind /sys "$root/sys" && mount -o remount,bind,ro "$root/sys"
for node in null zero full random urandom tty; do  # whatever debootstrap could mknod
  [ -e "$root/dev/$node" ] || touch "$root/dev/$node"
  mount --bind "/dev/$node" "$root/dev/$node"
done
# The root's own /dev/shm (64 MiB, Docker's default) and /tmp: tmpfs of this namespace.
mkdir -p "$root/dev/shm"
mount -t tmpfs -o size=64m,mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount --bind "$archives" "$root/var/cache/apt/archives"  # downloads survive the run
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/root/"
package=/root/$(basename "$deb")

in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    TERM=dumb DEBIAN_FRONTEND=noninteractive "$@"
}

in_root dpkg-query -W -f '${Package}\n' | sort >"$work/out/before"
in_root apt-get update -qq
if ! in_root apt-get install -y -qq --no-install-recommends "$package" >"$work/out/apt.log" 2>&1; then
  tail -30 "$work/out/apt.log" >&2
  exit 1
fi
in_root dpkg-query -W -f '${Package}\n' | sort >"$work/out/after"
echo "    apt installed $(comm -13 "$work/out/before" "$work/out/after" | wc -l) packages:" \
  "$(comm -13 "$work/out/before" "$work/out/after" | tr '\n' ' ')"
in_root dpkg-query -W -f '    Depends: ${Depends}\n' headroom

# headroom check: the verdict line first, exit 0 (nothing critical) or 1 (something is).
rc=0
in_root headroom check >"$work/out/check" 2>&1 || rc=$?
sed 's/^/      /' "$work/out/check" | head -8
if [[ $rc -le 1 ]] && head -1 "$work/out/check" | grep -Eq '^(OK|WARN|CRITICAL): [0-9]+ critical, [0-9]+ warnings?, [0-9]+ ok'; then
  pass "headroom check (exit $rc)"
else
  fail "headroom check: exit $rc"
fi
# It reads the root's /dev/shm: the 64 MiB tmpfs cannot hold this loader's batches.
rc=0
in_root headroom check --only shm.capacity --workers 8 --batch-bytes 32MiB >"$work/out/shm" 2>&1 || rc=$?
if [[ $rc -eq 1 ]] && grep -q 'critical shm.capacity .*/dev/shm has 64.0 MiB free of 64.0 MiB' "$work/out/shm"; then
  pass "headroom check sees the root's 64 MiB /dev/shm (exit 1, critical)"
else
  fail "headroom check --only shm.capacity: exit $rc: $(cat "$work/out/shm")"
fi
rc=0
in_root headroom --json check --fail-on never >"$work/out/check.json" 2>&1 || rc=$?
if [[ $rc -eq 0 ]] && in_root python3 -c 'import json, sys; json.load(sys.stdin)["findings"][0]["id"]' \
    <"$work/out/check.json"; then
  pass "headroom --json check"
else
  fail "headroom --json check: exit $rc"
fi
rc=0
in_root headroom watch --once --json --dir /root >"$work/out/watch.json" 2>"$work/out/watch.err" || rc=$?
if [[ $rc -le 1 ]] && in_root python3 -c 'import json, sys; json.load(sys.stdin)["filesystems"]' \
    <"$work/out/watch.json"; then
  pass "headroom watch --once (headroom-watch, exit $rc)"
else
  fail "headroom watch --once: exit $rc: $(cat "$work/out/watch.err")"
fi
if out=$(in_root python3 -c 'import headroom; r = headroom.check(only=["shm.capacity"]); print(headroom.__version__, headroom.__file__, r.findings[0].id)' 2>&1) &&
    [[ $out == *"/usr/lib/python3/dist-packages/headroom/__init__.py shm.capacity"* ]]; then
  pass "python3 -c 'import headroom': $out"
else
  fail "import headroom: $out"
fi
unit=$root/lib/systemd/system/headroom-watch.service
if grep -q '^ExecStart=/usr/bin/headroom watch --config /etc/headroom/watch.toml$' "$unit" &&
    [ -f "$root/etc/headroom/watch.toml" ] &&
    ! ls "$root"/etc/systemd/system/*.wants/headroom-watch.service >/dev/null 2>&1; then
  pass "systemd unit installed with /usr/bin paths and its config, not enabled"
else
  fail "systemd unit"
fi
for file in prometheus/headroom.rules.yml alertmanager/alertmanager.yml kubernetes/daemonset.yaml; do
  [ -f "$root/usr/share/headroom/$file" ] || fail "missing /usr/share/headroom/$file"
done
# The Slurm hooks where docs/slurm.md's slurm.conf lines point; the prolog finds its
# shared functions beside it and says how to use it when Slurm did not start it.
for hook in headroom-prolog headroom-epilog headroom-task-prolog headroom-healthcheck; do
  [ -x "$root/usr/lib/headroom/slurm/$hook" ] || fail "missing /usr/lib/headroom/slurm/$hook"
done
if out=$(in_root bash -n /usr/lib/headroom/slurm/headroom-prolog 2>&1) &&
    [ -f "$root/usr/lib/headroom/slurm/headroom-slurm.sh" ]; then
  pass "Slurm hooks in /usr/lib/headroom/slurm"
else
  fail "Slurm hooks: $out"
fi

# Tools a Debian host has but headroom does not depend on: man and bash-completion.
if ! in_root apt-get install -y -qq --no-install-recommends man-db bash-completion \
    >"$work/out/apt-tools.log" 2>&1; then
  tail -30 "$work/out/apt-tools.log" >&2
  exit 1
fi
for page in headroom headroom-check headroom-clean headroom-watch; do
  in_root man -w "$page" >/dev/null 2>&1 || fail "man -w $page"
done
if in_root env MANWIDTH=100 man headroom-check >"$work/out/man" 2>"$work/out/man.err" &&
    grep -q '^NAME' "$work/out/man" && grep -q -- '--fail-on' "$work/out/man" &&
    [ ! -s "$work/out/man.err" ]; then
  pass "man headroom-check renders ($(wc -l <"$work/out/man") lines): $(grep -A1 '^NAME' "$work/out/man" | tail -1 | sed 's/^ *//')"
else
  fail "man headroom-check: $(cat "$work/out/man.err")"
fi
# bash-completion loads /usr/share/bash-completion/completions/headroom on the first TAB.
completion=$(in_root bash -c '
  source /usr/share/bash-completion/bash_completion
  __load_completion headroom || exit 3
  complete -p headroom >&2
  COMP_WORDS=(headroom cl); COMP_CWORD=1; COMP_LINE="headroom cl"; COMP_POINT=${#COMP_LINE}
  _headroom headroom cl headroom
  echo "${COMPREPLY[*]}"' 2>&1) || true
if [[ ${completion##*$'\n'} == clean ]]; then
  pass "bash: headroom cl<TAB> -> clean"
else
  fail "bash completion of 'headroom cl': $completion"
fi
exit $((failures > 0))
