"""who and clean against real processes in a private mount + IPC namespace.

A holder process opens, maps-then-closes, flocks, deletes-while-open and
binds files on a private tmpfs mounted as /dev/shm and on a private tmpfs
used as TMPDIR, and attaches a SysV segment. `who` must find every one;
`clean --yes` must remove exactly the stale ones and none of the held ones.
"""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import HEADROOM, PYTHON, build_fuse_helper, in_namespace, require_root

HOLDER = r'''
import ctypes, fcntl, mmap, os, socket, sys, time
shm, tmp = sys.argv[1], sys.argv[2]
keep = []
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def map_and_close(path, size):
    # Python's mmap.mmap keeps a dup of the fd; libc's mmap does not.
    fd = os.open(path, os.O_RDWR)
    assert libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0) not in (None, 2**64 - 1)
    os.close(fd)
def touch(path, size=4096):
    with open(path, "wb") as f:
        f.write(b"x" * size)
# /dev/shm: open, mapped after close, flocked, deleted while open, deleted while mapped
touch(f"{shm}/torch_999_1_1", 65536); keep.append(open(f"{shm}/torch_999_1_1", "rb"))
touch(f"{shm}/nccl-MAPPED", 1 << 20)
map_and_close(f"{shm}/nccl-MAPPED", 1 << 20)
touch(f"{shm}/sem.locked", 32); locked = open(f"{shm}/sem.locked", "rb")
fcntl.flock(locked, fcntl.LOCK_EX); keep.append(locked)
touch(f"{shm}/torch_5_5_5", 2 << 20); keep.append(open(f"{shm}/torch_5_5_5", "rb"))
os.unlink(f"{shm}/torch_5_5_5")
touch(f"{shm}/psm_gone", 3 << 20)
map_and_close(f"{shm}/psm_gone", 3 << 20)
os.unlink(f"{shm}/psm_gone")
# temp dir: an open file in an old dir, an old dir that is a cwd, a live socket
os.makedirs(f"{tmp}/pymp-held"); touch(f"{tmp}/pymp-held/data")
keep.append(open(f"{tmp}/pymp-held/data", "rb"))
os.makedirs(f"{tmp}/cwd-dir"); os.chdir(f"{tmp}/cwd-dir")
sock = socket.socket(socket.AF_UNIX); sock.bind(f"{tmp}/listener"); sock.listen(); keep.append(sock)
touch(f"{tmp}/old-mapped", 8192)
map_and_close(f"{tmp}/old-mapped", 8192)
# SysV: one attached (held), one not
libc.shmat.restype = ctypes.c_void_p
held_id = libc.shmget(0, 1 << 20, 0o1600)
assert libc.shmat(held_id, None, 0) not in (None, ctypes.c_void_p(-1).value)
stale_id = libc.shmget(0, 2 << 20, 0o1600)
print(f"READY {held_id} {stale_id}", flush=True)
time.sleep(600)
'''

SCRIPT = r'''
mount -t tmpfs -o size=1m,mode=1777 headroom-test-shield /tmp
mount -t tmpfs -o size=64m tmpfs /dev/shm
mkdir -p "$WORK/tmp" && mount -t tmpfs -o size=64m tmpfs "$WORK/tmp"
T="$WORK/tmp"
# stale segments and old unused temp entries
head -c 4096 /dev/zero > /dev/shm/torch_12345_678_9
head -c 8192 /dev/zero > /dev/shm/nccl-AbCdEf
head -c 32 /dev/zero > /dev/shm/sem.mp-stale
head -c 100 /dev/zero > /dev/shm/unknown-producer
head -c 500 /dev/zero > "$T/old-file"
mkdir -p "$T/pymp-stale/sub" && head -c 700 /dev/zero > "$T/pymp-stale/sub/f"
mkdir -p "$T/.X11-unix" "$T/systemd-private-abc"
head -c 10 /dev/zero > "$T/new-file"; touch -d '3 days' "$T/new-file"
$PY -c "$HOLDER" /dev/shm "$T" > "$WORK/holder.out" &
holder=$!
for _ in $(seq 100); do grep -q READY "$WORK/holder.out" 2>/dev/null && break; sleep 0.1; done
touch -h -d '3 days ago' "$T/old-file" "$T/pymp-stale/sub/f" "$T/pymp-stale/sub" "$T/pymp-stale" \
  "$T/pymp-held/data" "$T/pymp-held" "$T/cwd-dir" "$T/listener" "$T/old-mapped" "$T/.X11-unix" \
  "$T/systemd-private-abc"
echo "=== holder $holder $(cat "$WORK/holder.out")"
echo "=== who"
$HEADROOM --json who /dev/shm "$T" > "$WORK/who.json" || echo "who rc=$?"
echo "=== check"
$HEADROOM --json check --only shm.stale > "$WORK/check.json" || true
echo "=== plan"
# headroom 3 days later: what was just created is 3 days old to it (ctime cannot be set back).
TMPDIR="$T" faketime -f +3d $HEADROOM --json clean --shm --tmp --all-users --ignore-unreadable 1 \
  > "$WORK/plan.json" || echo "plan rc=$?"
echo "=== apply"
TMPDIR="$T" faketime -f +3d $HEADROOM --json clean --shm --tmp --all-users --ignore-unreadable 1 \
  --yes --grace 0.5s --audit-log "$WORK/audit.log" > "$WORK/apply.json" || echo "apply rc=$?"
ls -A /dev/shm > "$WORK/shm.after"; ls -A "$T" > "$WORK/tmp.after"
cut -c1-200 /proc/sysvipc/shm > "$WORK/sysv.after"
kill -9 $holder
'''


def run_scenario(scratch) -> dict:
    require_root()
    env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON, HOLDER=HOLDER, WORK=str(scratch))
    result = subprocess.run(
        ["unshare", "-m", "-i", "--propagation", "private", "bash", "-euo", "pipefail", "-c", SCRIPT],
        capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    out = {"log": result.stdout}
    for name in ("who", "check", "plan", "apply"):
        out[name] = json.loads((scratch / f"{name}.json").read_text())
    out["shm_after"] = set((scratch / "shm.after").read_text().split())
    out["tmp_after"] = set((scratch / "tmp.after").read_text().split())
    out["sysv_after"] = (scratch / "sysv.after").read_text()
    out["audit"] = [json.loads(line) for line in (scratch / "audit.log").read_text().splitlines()]
    out["ids"] = [int(x) for x in (scratch / "holder.out").read_text().split()[1:]]
    return out


def test_who_finds_every_holder_and_clean_removes_only_stale(scratch):
    result = run_scenario(scratch)
    shm_holders = result["who"]["paths"][0]["holders"]
    tmp_holders = result["who"]["paths"][1]["holders"]
    seen = {(h["file"].rsplit("/", 1)[1], h["how"], h["deleted"]) for h in shm_holders + tmp_holders}
    for expected in [("torch_999_1_1", "fd", False), ("nccl-MAPPED", "mmap", False),
                     ("sem.locked", "fd", False), ("torch_5_5_5", "fd", True),
                     ("psm_gone", "mmap", True), ("data", "fd", False), ("cwd-dir", "cwd", False),
                     ("old-mapped", "mmap", False)]:
        assert expected in seen, (expected, sorted(seen))
    assert not any(h["how"] == "fd" and h["file"].endswith("nccl-MAPPED") for h in shm_holders)

    # The plan names exactly the stale items; held, new, protected and unknown ones are kept.
    planned = {item["path"] for item in result["plan"]["items"]}
    tmp = str(scratch / "tmp")
    stale_id = result["ids"][1]
    assert planned == {"/dev/shm/torch_12345_678_9", "/dev/shm/nccl-AbCdEf", "/dev/shm/sem.mp-stale",
                       f"{tmp}/old-file", f"{tmp}/pymp-stale",
                       f"sysv shmid {stale_id} key 0x00000000"}, planned
    kept = {k["path"]: k["reason"] for k in result["plan"]["kept"]}
    assert "in use by pid" in kept["/dev/shm/nccl-MAPPED"]
    assert "in use by pid" in kept[f"{tmp}/pymp-held"]
    assert "in use by pid" in kept[f"{tmp}/cwd-dir"]
    assert "live socket" in kept[f"{tmp}/listener"]
    assert "protected" in kept[f"{tmp}/.X11-unix"]
    assert "younger" in kept[f"{tmp}/new-file"]
    assert "not a known segment name" in kept["/dev/shm/unknown-producer"]

    # --yes removed exactly those, and every held file is still there.
    removed = {item["path"] for item in result["apply"]["removed"]}
    assert removed == planned, result["apply"]
    assert result["apply"]["skipped"] == []
    assert result["shm_after"] == {"torch_999_1_1", "nccl-MAPPED", "sem.locked", "unknown-producer"}
    assert result["tmp_after"] == {"pymp-held", "cwd-dir", "listener", "old-mapped", ".X11-unix",
                                   "systemd-private-abc", "new-file"}
    held_id = result["ids"][0]
    sysv_ids = [line.split()[1] for line in result["sysv_after"].splitlines()[1:]]
    assert sysv_ids == [str(held_id)]
    assert {entry["path"] for entry in result["audit"]} == removed
    assert all(entry["action"] == "removed" and entry["bytes"] >= 0 for entry in result["audit"])

    # shm.stale saw the same stale bytes and the unlinked-but-held segments.
    finding = next(f for f in result["check"]["findings"] if f["id"] == "shm.stale")
    evidence = {e["name"]: e["value"] for e in finding["evidence"]}
    assert evidence["stale_files"] == 4  # 3 known names + unknown-producer
    assert evidence["sysv_stale_segments"] == 1
    assert evidence["unlinked_held_segments"] == 2
    assert evidence["unlinked_held_bytes"] == (2 << 20) + (3 << 20)
    assert "headroom clean --shm" in " ".join(finding["remedy"])


def test_who_exit_codes(scratch, headroom):
    empty = scratch / "empty"
    empty.mkdir()
    nobody = subprocess.run([headroom, "who", str(empty)], capture_output=True, text=True)
    assert nobody.returncode == 1 and "no process holds it" in nobody.stdout
    missing = subprocess.run([headroom, "who", str(scratch / "nope")], capture_output=True, text=True)
    assert missing.returncode == 2 and "No such file" in missing.stderr
    with open(empty / "f", "w") as handle:
        found = subprocess.run([headroom, "who", str(empty)], capture_output=True, text=True)
        assert found.returncode == 0
        assert str(os.getpid()) in found.stdout and "fd " in found.stdout
        handle.write("x")


def test_clean_needs_a_target(headroom):
    result = subprocess.run([headroom, "clean"], capture_output=True, text=True)
    assert result.returncode == 2 and "--shm and/or --tmp" in result.stderr


UNREADABLE = r'''
mount -t tmpfs -o size=16m,mode=1777 tmpfs /dev/shm
head -c 4096 /dev/zero > /dev/shm/torch_77_1_1 && chown 65534:65534 /dev/shm/torch_77_1_1
head -c 8192 /dev/zero > /dev/shm/nccl-mapped && chown 65534:65534 /dev/shm/nccl-mapped
$PY -c "
import mmap, os, time
fd = os.open('/dev/shm/nccl-mapped', os.O_RDWR); m = mmap.mmap(fd, 8192); os.close(fd)
print('MAPPED', flush=True); time.sleep(600)" > /dev/shm/mapper.out &
held=$!
for _ in $(seq 50); do grep -q MAPPED /dev/shm/mapper.out && break; sleep 0.1; done
as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$HEADROOM" "$@"; }
echo "=== plan"; as_nobody clean --shm || echo "rc=$?"
echo "=== apply"; as_nobody clean --shm --yes --grace 0 --audit-log /dev/shm/audit.log || echo "rc=$?"
echo "=== left"; ls -A /dev/shm
echo "=== zero"; as_nobody clean --shm --ignore-unreadable 0 || echo "rc=$?"
kill -9 $held
'''


def test_a_user_who_is_not_root_cleans_own_segments_even_where_processes_are_unreadable(scratch):
    """As nobody in a private pid namespace, root's bash (pid 1) and a root process mapping
    one of nobody's segments cannot be inspected: the kernel's lease answer decides."""
    require_root()
    env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON)
    result = subprocess.run(
        ["unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private", "bash", "-eu", "-c",
         UNREADABLE], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    parts = dict(part.split("\n", 1) for part in result.stdout.split("=== ")[1:])

    plan = parts["plan"]
    assert "rc=" not in plan and "/dev/shm/torch_77_1_1" in plan, plan
    assert "nccl-mapped: open or mapped by a process headroom cannot inspect" in plan, plan

    applied = parts["apply"]
    assert "rc=" not in applied and "removed 1 item" in applied, applied
    left = parts["left"].split()
    assert "torch_77_1_1" not in left and "nccl-mapped" in left

    zero = parts["zero"]
    assert zero.rstrip().endswith("rc=2"), zero
    assert "--ignore-unreadable: 0 is not a pid" in result.stderr


BY_USER = r'''
mount -t tmpfs -o size=16m,mode=1777 tmpfs /dev/shm
for owner in 65534 0; do
  head -c 4096 /dev/zero > /dev/shm/nccl-stale-$owner && chown $owner:$owner /dev/shm/nccl-stale-$owner
done
head -c 8192 /dev/zero > /dev/shm/torch_held && chown 65534:65534 /dev/shm/torch_held
$PY -c "
import mmap, os, time
fd = os.open('/dev/shm/torch_held', os.O_RDWR); m = mmap.mmap(fd, 8192); os.close(fd)
print('MAPPED', flush=True); time.sleep(600)" > /dev/shm/mapper.out &
held=$!
for _ in $(seq 50); do grep -q MAPPED /dev/shm/mapper.out && break; sleep 0.1; done
echo "=== apply"; "$HEADROOM" clean --shm --user nobody --yes --grace 0 --audit-log /dev/shm/audit.log || echo "rc=$?"
echo "=== left"; ls -A /dev/shm
echo "=== unknown"; "$HEADROOM" clean --shm --user no-such-user-hr || echo "rc=$?"
echo "=== both"; "$HEADROOM" clean --shm --user 65534 --all-users || echo "rc=$?"
echo "=== not-root"; setpriv --reuid 65534 --regid 65534 --clear-groups "$HEADROOM" clean --shm --user 0 || echo "rc=$?"
kill -9 $held
'''


def test_root_cleans_one_users_stale_segments_with_user(scratch):
    """`clean --user nobody` as root (a Slurm epilog after nobody's job): nobody's stale
    segment goes; nobody's mapped segment and root's stale one stay; bad uses exit 2."""
    require_root()
    env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON)
    result = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-eu", "-c", BY_USER],
        capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    parts = dict(part.split("\n", 1) for part in result.stdout.split("=== ")[1:])
    applied = parts["apply"]
    assert "rc=" not in applied and "removed 1 item" in applied, applied
    assert "/dev/shm/nccl-stale-65534" in applied, applied
    left = parts["left"].split()
    assert "nccl-stale-65534" not in left
    assert "torch_held" in left and "nccl-stale-0" in left, left
    for part in ("unknown", "both", "not-root"):
        assert parts[part].rstrip().endswith("rc=2"), (part, parts[part])
    assert "--user: no user 'no-such-user-hr'" in result.stderr
    assert "--user and --all-users exclude each other" in result.stderr
    assert "--user needs root" in result.stderr


LEASE_HOLDER = r'''
import ctypes, mmap, os, sys, time
shm = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def map_and_close(path, size, flags):
    fd = os.open(path, flags)
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if flags == os.O_RDWR else 0)
    assert libc.mmap(None, size, prot, mmap.MAP_SHARED, fd, 0) not in (None, 2**64 - 1)
    os.close(fd)
keep = [open(f"{shm}/torch_1_2_3", "rb")]                       # an open fd
map_and_close(f"{shm}/nccl-rw", 1 << 20, os.O_RDWR)             # mapped after close, read-write
map_and_close(f"{shm}/nccl-ro", 1 << 20, os.O_RDONLY)           # mapped after close, read-only
print("READY", flush=True)
sys.stdin.readline()                                             # "unlink": one goes, still mapped
os.unlink(f"{shm}/nccl-ro")
print("UNLINKED", flush=True)
time.sleep(600)
'''

LEASE_SCRIPT = r'''
mount -t tmpfs -o size=64m tmpfs /dev/shm
for name in torch_1_2_3 nccl-rw nccl-ro torch_9_9_9 nccl-stale; do
  head -c 1048576 /dev/zero > /dev/shm/$name
done
chown 4001 /dev/shm/nccl-stale            # another user's stale segment: root takes the lease
mkfifo "$WORK/in"
$PY -c "$HOLDER" /dev/shm < "$WORK/in" > "$WORK/holder.out" &
holder=$!
exec 3>"$WORK/in"
for _ in $(seq 100); do grep -q READY "$WORK/holder.out" 2>/dev/null && break; sleep 0.1; done
$HEADROOM --json check --only shm.stale > "$WORK/lease.json" || true
echo unlink >&3
for _ in $(seq 100); do grep -q UNLINKED "$WORK/holder.out" 2>/dev/null && break; sleep 0.1; done
$HEADROOM --json check --only shm.stale > "$WORK/proc.json" || true
kill -9 $holder
'''


def test_check_counts_stale_segments_from_the_kernels_leases_without_reading_proc(scratch):
    """check's stale count needs no holder names: where the kernel's lease answers for every
    segment and /dev/shm's used space is all in its files, /proc is not read. The lease must
    see every kind of use a scan would: an open fd, a mapping after close, read-write and
    read-only. Once a mapped segment is unlinked its space is in no file and the scan runs."""
    require_root()
    env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON, HOLDER=LEASE_HOLDER, WORK=str(scratch))
    result = subprocess.run(
        ["unshare", "-m", "-i", "--propagation", "private", "bash", "-euo", "pipefail", "-c",
         LEASE_SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr

    def evidence(name: str) -> dict:
        report = json.loads((scratch / name).read_text())
        finding = next(f for f in report["findings"] if f["id"] == "shm.stale")
        return {e["name"]: e["value"] for e in finding["evidence"]}

    lease = evidence("lease.json")
    assert lease["holders_from"] == "lease" and lease["processes_scanned"] == 0, lease
    assert lease["stale_files"] == 2 and lease["stale_bytes"] == 2 << 20, lease
    assert lease["unknown_files"] == 0 and lease["unlinked_held_segments"] == 0, lease
    unlinked = evidence("proc.json")
    assert unlinked["holders_from"] == "proc" and unlinked["processes_scanned"] > 0, unlinked
    assert unlinked["stale_files"] == 2, unlinked
    assert unlinked["unlinked_held_segments"] == 1, unlinked
    assert unlinked["unlinked_held_bytes"] == 1 << 20, unlinked


UNLINKED_HELD = r'''
import ctypes, mmap, os, sys, time
path = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(path, os.O_RDWR)
assert libc.mmap(None, 4 << 20, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0) not in (None, 2**64 - 1)
os.close(fd)
os.unlink(path)                                                  # gone from ls, df still counts it
print("READY", flush=True)
time.sleep(600)
'''


@pytest.mark.parametrize("mount_options,extra", [
    ("size=0", ""),                          # no size limit: statfs reports no blocks at all
    ("size=64m", "ln /dev/shm/stale /dev/shm/stale-link"),  # one inode listed twice
])
def test_check_sees_an_unlinked_held_segment_the_listing_seems_to_explain(
        scratch, mount_options, extra):
    """check takes the lease path only when /dev/shm's used space is all in its listed files.
    A tmpfs without a size limit reports 0 used, and a hard link lists one inode's bytes twice:
    either hid a 4 MiB segment unlinked but still mapped, which `who` names and check then
    said nothing of."""
    require_root()
    script = f'''
mount -t tmpfs -o {mount_options} tmpfs /dev/shm
head -c 4194304 /dev/zero > /dev/shm/torch_held
head -c 4194304 /dev/zero > /dev/shm/stale
{extra}
$PY -c "$HOLDER" /dev/shm/torch_held > "$WORK/holder.out" &
holder=$!
for _ in $(seq 100); do grep -q READY "$WORK/holder.out" 2>/dev/null && break; sleep 0.1; done
$HEADROOM --json check --only shm.stale > "$WORK/check.json" || true
kill -9 $holder
'''
    env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON, HOLDER=UNLINKED_HELD, WORK=str(scratch))
    result = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-euo", "pipefail", "-c", script],
        capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((scratch / "check.json").read_text())
    found = next(f for f in report["findings"] if f["id"] == "shm.stale")
    values = {e["name"]: e["value"] for e in found["evidence"]}
    assert values["holders_from"] == "proc", values
    assert values["unlinked_held_segments"] == 1, values
    assert values["unlinked_held_bytes"] == 4 << 20, values
    assert "unlinked but still held" in found["summary"], found["summary"]


HUNG_HOLDER = r'''
mount -t tmpfs -o size=8m headroom-data "$DATA"
head -c 4096 /dev/zero > "$DATA/f"
head -c 4096 /dev/zero > /dev/shm/torch_1_2_3
"$FS" -f -s -o attr_timeout=0,entry_timeout=0 "$FUSE" &
fs=$!
for _ in $(seq 50); do grep -q " $FUSE " /proc/self/mountinfo && break; sleep 0.1; done
"$PY" -c '
import os, sys, time
fd = os.open(sys.argv[1] + "/held", os.O_RDONLY)
print("OPEN", flush=True); time.sleep(600)' "$FUSE" > "$OUT/holder.out" &
holder=$!
for _ in $(seq 50); do grep -q OPEN "$OUT/holder.out" && break; sleep 0.1; done
# A stat of the held file now waits for a daemon that never answers.
for command in "clean --shm" "who $DATA" "who /dev/shm"; do
  rc=0; timeout -s KILL 20 "$HEADROOM" --json $command > "$OUT/out" || rc=$?
  echo "=== $command rc=$rc"; cat "$OUT/out"; echo
done
kill $holder
kill -TERM $fs
wait $fs || true
'''


@pytest.fixture(scope="module")
def hung_getattr_fs() -> str:
    """The FUSE file system whose held file stops answering getattr."""
    return build_fuse_helper("hung_getattr_fs")


def test_a_holder_on_a_dead_mount_does_not_hang_the_scans(scratch, hung_getattr_fs):
    """A scan by device (clean's) stats every fd of every process, and who stats the
    files whose names are under its path. A process holding a file on a mount whose
    server or daemon no longer answers must not make them wait for it: the stat answers
    from the attributes in memory (AT_STATX_DONT_SYNC), as a readlink never asks either."""
    data, fuse = scratch / "hung-data", scratch / "hung-fuse"
    data.mkdir()
    fuse.mkdir()
    result = in_namespace(HUNG_HOLDER, timeout=120, env={
        "DATA": str(data), "FUSE": str(fuse), "FS": hung_getattr_fs, "OUT": str(scratch)})
    assert result.returncode == 0, result.stderr
    sections = {name: (int(rc), body) for name, rc, body in
                re.findall(r"=== (.+?) rc=(\d+)\n(.*?)(?=\n=== |\Z)", result.stdout, re.S)}
    assert set(sections) == {"clean --shm", f"who {data}", "who /dev/shm"}, result.stdout
    rc, body = sections["clean --shm"]
    assert rc == 0, result.stdout
    assert "/dev/shm/torch_1_2_3" in body, body
    for who in (f"who {data}", "who /dev/shm"):
        rc, body = sections[who]
        assert rc == 1, (who, result.stdout)  # answered: nobody holds it
        assert json.loads(body)["paths"][0]["holders"] == [], body


HIDDEN_HOLDER = r'''
import ctypes, mmap, os, sys, time
scratch = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
log = open(f"{scratch}/early.log", "rb")
fd = os.open(f"{scratch}/run7/ckpt", os.O_RDONLY)
assert libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0) not in (None, 2**64 - 1)
os.close(fd)
os.chdir(f"{scratch}/run7")
print("READY", flush=True)
time.sleep(600)
'''

HIDDEN = r'''
mount -t tmpfs headroom-test-root "$WORK"
mkdir -p "$WORK/scratch/run7"
head -c 4096 /dev/zero > "$WORK/scratch/early.log"
head -c 4096 /dev/zero > "$WORK/scratch/run7/ckpt"
"$PY" -c "$HIDDEN_HOLDER" "$WORK/scratch" > "$OUT/holder.out" &
holder=$!
for _ in $(seq 100); do grep -q READY "$OUT/holder.out" 2>/dev/null && break; sleep 0.1; done
# The local disk is mounted on the scratch dir after the job started writing there.
mount -t tmpfs headroom-test-disk "$WORK/scratch"
mkdir "$WORK/scratch/run7"
"$HEADROOM" --json who "$WORK/scratch" > "$OUT/scratch.json" || echo "who rc=$?"
"$HEADROOM" --json who "$WORK/scratch/run7" > "$OUT/run7.json" || echo "who rc=$?"
kill -9 $holder
'''


def test_who_lists_the_files_a_later_mount_hid(scratch):
    """A job opened files in a scratch dir before a disk was mounted on it (or on a dir
    above it): they are on the filesystem mounted over, hidden, and still read as
    scratch/... `who` listed them by that name before its scan tested devices first; the
    devices it tests must include those of the mounts on the way, not only the ones at
    and below the path."""
    work = scratch / "hidden"
    work.mkdir()
    result = in_namespace(HIDDEN, env={"WORK": str(work), "OUT": str(scratch),
                                       "HIDDEN_HOLDER": HIDDEN_HOLDER})
    assert result.returncode == 0, result.stdout + result.stderr
    held = {}
    for name in ("scratch", "run7"):
        answer = json.loads((scratch / f"{name}.json").read_text())
        held[name] = sorted((holder["how"], os.path.relpath(holder["file"], work))
                            for holder in answer["paths"][0]["holders"])
    assert held["scratch"] == [("cwd", "scratch/run7"), ("fd", "scratch/early.log"),
                               ("mmap", "scratch/run7/ckpt")], held
    assert held["run7"] == [("cwd", "scratch/run7"), ("mmap", "scratch/run7/ckpt")], held
