"""`clean` against what a shared host really has (issue 15; docs/safety.md).

Each test builds the situation for real in a private mount namespace (tmpfs mounts, bind
mounts, a second network or pid namespace, a second uid via setpriv, processes that use
files the way jobs do) and checks that nothing in use is removed and nothing outside is
touched. Ages: clean counts ctime, which cannot be set back, so headroom's clock is moved
forward with libfaketime (`faketime -f +3d`) and entries meant to be fresh are given
future mtimes instead.
"""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import HEADROOM, PYTHON, in_namespace, require_root

# headroom three days from now: everything created by the test is 3 days old to it.
LATER = "faketime -f +3d"
# Some sandboxes (this project's CI among them) keep pid 1's cwd and fds from root; a
# directory could then be pid 1's cwd, so root's clean keeps directories unless the caller
# vouches for it. The tests run as root in the host's pid namespace do.
VOUCH = "--ignore-unreadable 1"


def sections(stdout: str) -> dict[str, str]:
    """The '=== name' sections a scenario script prints."""
    return {part.split("\n", 1)[0].strip(): part.split("\n", 1)[1] if "\n" in part else ""
            for part in stdout.split("=== ")[1:]}


# Inside the test's mount namespace the host's /tmp and /var/tmp are covered by empty
# tmpfs mounts: a clean that fell back to its default temp dir (a dropped flag, an old
# binary) would clean those, never the machine's own.
SHIELD = """
mount -t tmpfs -o size=1m,mode=1777 headroom-test-shield /tmp
mount -t tmpfs -o size=1m,mode=1777 headroom-test-shield /var/tmp
"""


def run(script: str, timeout: float = 120, env: dict | None = None) -> dict[str, str]:
    result = in_namespace(SHIELD + script, timeout=timeout, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return sections(result.stdout)


def kept_reasons(report: dict) -> dict[str, str]:
    return {item["path"]: item["reason"] for item in report["kept"]}


def test_a_bind_mount_of_the_same_file_system_inside_an_old_entry_is_not_entered(scratch):
    """mount --bind ~/thesis /tmp/job/data: same st_dev, so only STATX_ATTR_MOUNT_ROOT tells."""
    parts = run(r'''
F="$WORK/fs"; mkdir -p "$F" && mount -t tmpfs -o size=16m tmpfs "$F"
T="$F/tmp"; mkdir -m 1777 "$T"
mkdir -p "$F/home/thesis" "$T/job/data" "$T/job/logs"
echo "chapter one" > "$F/home/thesis/chapter1.tex"
echo "log" > "$T/job/logs/run.log"
mount --bind "$F/home/thesis" "$T/job/data"
echo "=== same-device"; stat -c %d "$F/home/thesis" "$T/job/data" "$T/job"
echo "=== apply"; $LATER $HEADROOM --json clean --tmp --tmp-dir "$T" --yes --grace 0 $VOUCH \
  --audit-log "$WORK/audit.log" || echo "rc=$?"
echo "=== thesis"; cat "$F/home/thesis/chapter1.tex"; ls "$T/job/data"
''', env={"WORK": str(scratch), "LATER": LATER, "VOUCH": VOUCH})
    devices = parts["same-device"].split()
    assert len(set(devices)) == 1, devices  # really one file system
    report = json.loads(parts["apply"].split("rc=")[0])
    assert report["removed"] == [], report
    assert "a mount point" in kept_reasons(report)[str(scratch / "fs/tmp/job")]
    assert parts["thesis"].split() == ["chapter", "one", "chapter1.tex"]


SOCKETS = r'''
import multiprocessing, os, socket, sys, time
T = sys.argv[1]
keep = []
def listen(path):
    s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(); keep.append(s)
os.makedirs(f"{T}/tmux-0", mode=0o700); listen(f"{T}/tmux-0/default")
os.makedirs(f"{T}/rel-dir"); os.chdir(f"{T}/rel-dir"); listen("s"); os.chdir("/")
# A real multiprocessing Manager: its listener is $TMPDIR/pymp-*/listener-*.
manager = multiprocessing.Manager()
shared = manager.dict(answer=42)
print("READY", manager.address, flush=True)
for line in sys.stdin:
    print("ANSWER", shared["answer"], flush=True)
'''


def test_live_sockets_below_the_top_level_and_in_other_network_namespaces_stay(scratch):
    parts = run(r'''
T="$WORK/tmp"; mkdir -p "$T" && mount -t tmpfs -o size=16m,mode=1777 tmpfs "$T"
mkfifo "$WORK/in"
TMPDIR="$T" $PY -c "$SOCKETS" "$T" < "$WORK/in" > "$WORK/out" &
exec 3>"$WORK/in"
mkdir -p "$T/netns-dir"
unshare -n $PY -c "
import socket, time
s = socket.socket(socket.AF_UNIX); s.bind('$T/netns-dir/sock'); s.listen()
print('BOUND', flush=True); time.sleep(600)" > "$WORK/netns.out" &
netns=$!
for _ in $(seq 100); do grep -q READY "$WORK/out" && grep -q BOUND "$WORK/netns.out" && break; sleep 0.1; done
mkdir -p "$T/stale-dir"; $PY -c "
import socket; s = socket.socket(socket.AF_UNIX); s.bind('$T/stale-dir/dead.sock')"
echo "=== apply"; $LATER $HEADROOM --json clean --tmp --yes --grace 0 $VOUCH \
  --audit-log "$WORK/audit.log" || echo "rc=$?"
echo "=== left"; find "$T" -type s | sort
echo ask >&3
for _ in $(seq 50); do grep -q ANSWER "$WORK/out" && break; sleep 0.1; done
echo "=== manager"; cat "$WORK/out"
exec 3>&-; kill $netns
''', env={"WORK": str(scratch), "LATER": LATER, "VOUCH": VOUCH, "SOCKETS": SOCKETS, "TMPDIR": str(scratch / "tmp")})
    tmp = scratch / "tmp"
    report = json.loads(parts["apply"].split("rc=")[0])
    removed = {item["path"] for item in report["removed"]}
    assert removed == {f"{tmp}/stale-dir"}, report  # the dead socket's dir goes, nothing else
    left = parts["left"].split()
    assert f"{tmp}/tmux-0/default" in left
    assert f"{tmp}/rel-dir/s" in left
    assert f"{tmp}/netns-dir/sock" in left
    assert any("/pymp-" in path and "/listener-" in path for path in left), left
    kept = kept_reasons(report)
    for name in ("tmux-0", "rel-dir", "netns-dir"):
        assert "live socket" in kept[f"{tmp}/{name}"], kept
    assert "ANSWER 42" in parts["manager"], parts["manager"]


READER = r'''
import os, random, sys, time
root, seconds = sys.argv[1], float(sys.argv[2])
names = sorted(os.listdir(root))
errors = reads = 0
end = time.time() + seconds
print("READING", flush=True)
while time.time() < end:
    try:
        with open(os.path.join(root, random.choice(names)), "rb") as f:
            f.read()
        reads += 1
    except OSError:
        errors += 1
    time.sleep(0.003)
print("READS", reads, "ERRORS", errors, flush=True)
'''


def test_a_dataset_read_file_by_file_is_not_removed_under_its_reader(scratch):
    """A loader opens, reads and closes files every few ms: never held when /proc is read."""
    parts = run(r'''
T="$WORK/tmp"; mkdir -p "$T" && mount -t tmpfs -o size=64m,mode=1777 tmpfs "$T"
mkdir "$T/dataset"
for i in $(seq 200); do head -c 4096 /dev/urandom > "$T/dataset/sample-$i.bin"; done
touch -d '3 days ago' "$T/dataset" "$T/dataset"/*
mkdir "$T/old-unused"; head -c 100 /dev/zero > "$T/old-unused/x"; touch -d '3 days ago' "$T/old-unused"/x "$T/old-unused"
$PY -c "$READER" "$T/dataset" 8 > "$WORK/reader.out" &
reader=$!
for _ in $(seq 50); do grep -q READING "$WORK/reader.out" && break; sleep 0.1; done
echo "=== apply"; $LATER $HEADROOM --json clean --tmp --yes $VOUCH --audit-log "$WORK/audit.log" \
  || echo "rc=$?"
wait $reader
echo "=== reader"; cat "$WORK/reader.out"
echo "=== left"; ls "$T/dataset" | wc -l; ls "$T"
''', env={"WORK": str(scratch), "LATER": LATER, "VOUCH": VOUCH, "READER": READER, "TMPDIR": str(scratch / "tmp")})
    tmp = scratch / "tmp"
    report = json.loads(parts["apply"].split("rc=")[0])
    assert {item["path"] for item in report["removed"]} == {f"{tmp}/old-unused"}, report
    skipped = {item["path"]: item["reason"] for item in report["skipped"]}
    kept = kept_reasons(report)
    reason = skipped.get(f"{tmp}/dataset") or kept.get(f"{tmp}/dataset", "")
    assert "used" in reason, report
    words = parts["reader"].split()
    assert words[words.index("ERRORS") + 1] == "0", parts["reader"]
    assert int(words[words.index("READS") + 1]) > 100
    assert parts["left"].split()[0] == "200"


def test_freshly_extracted_files_with_old_mtimes_are_not_stale(scratch):
    """tar -x restores 2021 mtimes; the ctime says the files were written just now."""
    parts = run(r'''
T="$WORK/tmp"; mkdir -p "$T" && mount -t tmpfs -o size=16m,mode=1777 tmpfs "$T"
mkdir -p "$WORK/src/imagenet-mini"
for i in 1 2 3; do echo "$i" > "$WORK/src/imagenet-mini/$i.jpg"; done
touch -d '2021-03-01' "$WORK/src/imagenet-mini"/* "$WORK/src/imagenet-mini"
tar -C "$WORK/src" -cf "$WORK/data.tar" imagenet-mini
tar -C "$T" -xf "$WORK/data.tar"
echo "=== mtime"; stat -c %y "$T/imagenet-mini/1.jpg"
echo "=== apply"; $HEADROOM --json clean --tmp --older-than 1d --yes --grace 0 $VOUCH \
  --audit-log "$WORK/audit.log" || echo "rc=$?"
echo "=== left"; ls "$T/imagenet-mini"
''', env={"WORK": str(scratch), "VOUCH": VOUCH, "TMPDIR": str(scratch / "tmp")})
    assert parts["mtime"].startswith("2021-03-01")
    report = json.loads(parts["apply"].split("rc=")[0])
    assert report["removed"] == [], report
    reason = kept_reasons(report)[str(scratch / "tmp/imagenet-mini")]
    assert re.match(r"used \d+s ago, younger than 1d", reason), reason
    assert parts["left"].split() == ["1.jpg", "2.jpg", "3.jpg"]


MAPPER = r'''
import ctypes, mmap, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDWR)
assert libc.mmap(None, 65536, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0) not in (None, 2**64 - 1)
os.close(fd)  # only the mapping holds it now, as NCCL and torch workers do
print("MAPPED", flush=True)
time.sleep(600)
'''


def test_inside_a_pid_namespace_a_segment_mapped_outside_is_kept(scratch):
    """--ipc=host / a shared emptyDir: headroom in its own pid namespace cannot see the holder."""
    parts = run(r'''
head -c 65536 /dev/zero > /dev/shm/nccl-shared-ring
head -c 8192 /dev/zero > /dev/shm/torch_1_2_3
T="$WORK/tmp"; mkdir -p "$T" && mount -t tmpfs -o size=16m,mode=1777 tmpfs "$T"
mkdir "$T/pymp-old"; touch -d '3 days ago' "$T/pymp-old"
$PY -c "$MAPPER" /dev/shm/nccl-shared-ring > "$WORK/mapper.out" &
mapper=$!
for _ in $(seq 50); do grep -q MAPPED "$WORK/mapper.out" && break; sleep 0.1; done
echo "=== inside"; unshare -p -f --mount-proc $LATER $HEADROOM --json clean --shm --tmp --yes \
  --grace 0 --audit-log "$WORK/audit.log" || echo "rc=$?"
echo "=== left"; ls /dev/shm; ls "$T"
kill $mapper
''', env={"WORK": str(scratch), "LATER": LATER, "VOUCH": VOUCH, "MAPPER": MAPPER, "TMPDIR": str(scratch / "tmp")})
    report = json.loads(parts["inside"].split("rc=")[0])
    assert {item["path"] for item in report["removed"]} == {"/dev/shm/torch_1_2_3"}, report
    kept = kept_reasons(report)
    assert "cannot inspect" in kept["/dev/shm/nccl-shared-ring"], kept
    assert "pid namespace" in kept[str(scratch / "tmp/pymp-old")], kept
    assert parts["left"].split() == ["nccl-shared-ring", "pymp-old"]


def test_another_users_file_below_the_top_level_is_not_root_s_to_remove(scratch):
    parts = run(r'''
T="$WORK/tmp"; mkdir -p "$T" && mount -t tmpfs -o size=16m,mode=1777 tmpfs "$T"
mkdir -m 1777 "$T/shared"
echo "epoch,acc" > "$T/shared/alice-results.csv"; chown 4242:4242 "$T/shared/alice-results.csv"
echo "x" > "$T/shared/root-scratch"
mkdir "$T/root-only"; echo y > "$T/root-only/f"
echo "=== apply"; $LATER $HEADROOM --json clean --tmp --yes --grace 0 $VOUCH \
  --audit-log "$WORK/audit.log" || echo "rc=$?"
echo "=== left"; ls "$T" "$T/shared"
''', env={"WORK": str(scratch), "LATER": LATER, "VOUCH": VOUCH, "TMPDIR": str(scratch / "tmp")})
    tmp = scratch / "tmp"
    report = json.loads(parts["apply"].split("rc=")[0])
    assert {item["path"] for item in report["removed"]} == {f"{tmp}/root-only"}, report
    assert "alice-results.csv: owned by 4242" in kept_reasons(report)[f"{tmp}/shared"]
    assert "alice-results.csv" in parts["left"]


@pytest.mark.parametrize("tmpdir, message", [
    ("/etc", "system directory"),
    ("/", "system directory"),
    ("/usr/lib", "system directory"),
    ("/tmp/../etc", "'..'"),
    ("relative/dir", "not an absolute path"),
])
def test_a_system_directory_in_tmpdir_is_refused(headroom, tmpdir, message):
    result = subprocess.run([headroom, "clean", "--tmp"], env=dict(os.environ, TMPDIR=tmpdir),
                            capture_output=True, text=True)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and result.stdout == ""
    named = subprocess.run([headroom, "clean", "--tmp", "--tmp-dir", tmpdir],
                           capture_output=True, text=True)
    assert named.returncode == 2 and message in named.stderr


def test_an_alias_of_a_system_directory_is_refused_and_a_private_dir_needs_the_flag(scratch, headroom):
    require_root()
    (scratch / "root-link").symlink_to("/")
    via_link = subprocess.run([headroom, "clean", "--tmp", "--tmp-dir", str(scratch / "root-link/etc")],
                              capture_output=True, text=True)
    assert via_link.returncode == 2 and "it is /etc" in via_link.stderr, via_link.stderr
    private = scratch / "private"
    private.mkdir(mode=0o700)
    from_env = subprocess.run([headroom, "clean", "--tmp"], env=dict(os.environ, TMPDIR=str(private)),
                              capture_output=True, text=True)
    assert from_env.returncode == 2 and f"--tmp-dir {private}" in from_env.stderr, from_env.stderr
    named = subprocess.run([headroom, "clean", "--tmp", "--tmp-dir", str(private)],
                           capture_output=True, text=True)
    assert named.returncode == 0, named.stderr


NOBODY = r'''
T="$WORK/tmp"; mkdir -p "$T" && mount -t tmpfs -o size=16m,mode=1777 tmpfs "$T"
as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
as_nobody sh -c 'head -c 8192 /dev/zero > /dev/shm/torch_10_1_1; head -c 65536 /dev/zero > /dev/shm/nccl-held-by-root
  mkdir -m 700 "$0/mine-private" && echo a > "$0/mine-private/f"
  mkdir -m 755 "$0/mine-open" && echo b > "$0/mine-open/f"' "$T"
chmod 666 /dev/shm/nccl-held-by-root
$PY -c "$MAPPER" /dev/shm/nccl-held-by-root > "$WORK/mapper.out" &
mapper=$!
# Another user's process, which nobody cannot inspect; it could cd into mine-open.
setpriv --reuid 65533 --regid 65533 --clear-groups sleep 600 &
other=$!
for _ in $(seq 50); do grep -q MAPPED "$WORK/mapper.out" && break; sleep 0.1; done
echo "=== other $other"
echo "=== plan"; as_nobody $LATER $HEADROOM clean --shm --tmp || echo "rc=$?"
echo "=== apply"; as_nobody $LATER $HEADROOM --json clean --shm --tmp --yes --grace 0 \
  --audit-log "$WORK/nobody.log" || echo "rc=$?"
echo "=== vouched"; as_nobody $LATER $HEADROOM --json clean --tmp --yes --grace 0 \
  --ignore-unreadable "$other" --audit-log "$WORK/nobody.log" || echo "rc=$?"
echo "=== left"; ls /dev/shm "$T"
kill $mapper $other
'''


def test_a_user_who_is_not_root_cleans_their_own_leftovers_on_a_real_host(scratch):
    """Host pid namespace: kernel threads, root's daemons and other users' processes are all
    there and unreadable to nobody; their own stale segment and private dir still go."""
    parts = run(NOBODY, env={"WORK": str(scratch), "LATER": LATER, "VOUCH": VOUCH, "MAPPER": MAPPER,
                             "TMPDIR": str(scratch / "tmp")})
    tmp = scratch / "tmp"
    other = next(name for name in parts if name.startswith("other ")).split()[1]
    plan = parts["plan"]
    assert "/dev/shm/torch_10_1_1" in plan and f"{tmp}/mine-private" in plan, plan
    assert plan.rstrip().endswith("rc=1"), plan  # something kept for want of inspection
    vouch = re.findall(r"--ignore-unreadable ([0-9,]+)", plan)
    assert vouch and other in vouch[-1].split(","), plan

    applied = json.loads(parts["apply"].split("rc=")[0])
    assert {item["path"] for item in applied["removed"]} == {"/dev/shm/torch_10_1_1",
                                                             f"{tmp}/mine-private"}, applied
    kept = kept_reasons(applied)
    assert "cannot inspect" in kept["/dev/shm/nccl-held-by-root"], kept
    assert f"{other} (sleep)" in kept[f"{tmp}/mine-open"], kept
    assert "could be using it" in kept[f"{tmp}/mine-open"], kept
    assert int(other) in applied["blocking_pids"]

    vouched = json.loads(parts["vouched"].split("rc=")[0])
    assert {item["path"] for item in vouched["removed"]} == {f"{tmp}/mine-open"}, vouched
    left = parts["left"].split()
    assert "nccl-held-by-root" in left and "torch_10_1_1" not in left
    assert "mine-private" not in left and "mine-open" not in left


def test_a_signal_during_removal_finishes_the_batch_and_then_ends_clean_by_that_signal(scratch):
    """Ctrl-C or SIGTERM while clean removes: nothing is left under a quarantine name, the
    report says what was removed and what was not touched, and the process still ends by
    the signal it got (a shell loop or a scheduler sees it)."""
    parts = run(r'''
T="$WORK/tmp"; mkdir -p "$T" && mount -t tmpfs -o size=64m,mode=1777 tmpfs "$T"
for delay in 0 0.1 0.3; do
  rm -rf "$T"/*
  (cd "$T" && for i in $(seq 1500); do echo "$i" > "f$i"; done)
  # libfaketime preloaded, not the faketime wrapper: the signal must reach headroom itself.
  LD_PRELOAD=$(ls /usr/lib/*/faketime/libfaketime.so.1) FAKETIME=+3d \
    $HEADROOM --json clean --tmp --tmp-dir "$T" --yes --grace 0.2s $VOUCH \
    --audit-log "$WORK/audit.log" > "$WORK/out" &
  pid=$!
  # Removal has begun (the first file is gone or renamed), then a little later: SIGTERM.
  while [ "$(ls "$T" | wc -l)" -ge 1500 ] && kill -0 $pid 2>/dev/null; do sleep 0.005; done
  sleep $delay; kill -TERM $pid 2>/dev/null || true  # it may have finished already
  rc=0; wait $pid || rc=$?
  echo "=== rc $delay"; echo $rc
  echo "=== report $delay"; cat "$WORK/out"
  echo "=== left $delay"; ls -a "$T"
done
''', env={"WORK": str(scratch), "LATER": LATER, "VOUCH": VOUCH})
    interrupted = 0
    for delay in ("0", "0.1", "0.3"):
        report = json.loads(parts[f"report {delay}"])
        # 128 + SIGTERM; 0 only when clean had finished before the signal came.
        finished = not report["interrupted"] and len(report["removed"]) == 1500
        assert parts[f"rc {delay}"].split() in ([["0"], ["143"]] if finished else [["143"]]), parts
        left = set(parts[f"left {delay}"].split()) - {".", ".."}
        assert not [name for name in left if name.startswith(".headroom-clean-")], left
        removed = {item["path"].rsplit("/", 1)[1] for item in report["removed"]}
        untouched = {item["path"].rsplit("/", 1)[1] for item in report["skipped"]
                     if "interrupted" in item["reason"]}
        # Every file is either removed (and gone) or reported untouched (and still there).
        assert removed | untouched == {f"f{i}" for i in range(1, 1501)}, report["skipped"][:3]
        assert not removed & left and untouched <= left
        if report["interrupted"]:
            interrupted += 1
            assert untouched, report
    assert interrupted >= 1  # the signal came while there was still work to do
