"""`who` by the kernel's BPF task iterators against the /proc scan, on real processes.

A path scan as root reads fds and mappings with BPF task iterators where the
kernel allows it (docs/who-clean.md) and /proc otherwise (HEADROOM_NO_BPF, or a
kernel that refuses). Both must give the same answer, holder for holder, in the
situations the iterators could get wrong: a child pid namespace (the iterators
number pids as the initial one does), a process in a mount namespace of its
own (scanned through /proc), threads, a file mapped after close and one mapped
then deleted, a file deleted while open, and a name that is only a prefix.
"""
from __future__ import annotations

import json
import platform
import shlex

import pytest

from conftest import in_namespace

SCRIPT = r'''
D=$(mktemp -d -p "$WORK"); mount -t tmpfs -o size=64m tmpfs "$D"
head -c 8192 /dev/zero > "$D/mapped-after-close"; head -c 20000 /dev/zero > "$D/mapped-deleted"
mkdir "$D/sub" "$D/f"; head -c 10 /dev/zero > "$D/sub/gone"
$PY -c '
import ctypes, mmap, os, sys, threading, time
libc = ctypes.CDLL(None); libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
d = sys.argv[1]
for name in ("mapped-after-close", "mapped-deleted"):
    fd = os.open(d + "/" + name, os.O_RDWR)
    libc.mmap(None, 8192, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0); os.close(fd)
os.unlink(d + "/mapped-deleted")
keep = [open(d + "/sub/gone", "rb")]; os.unlink(d + "/sub/gone")
def worker():
    keep.append(open(d + "/mapped-after-close", "rb")); time.sleep(3600)
threading.Thread(target=worker, daemon=True).start()
print("ready", flush=True); time.sleep(3600)
' "$D" > "$WORK/py.out" &
for i in $(seq 1 40); do head -c 64 /dev/zero > "$D/f$i"; sleep 3600 3<"$D/f$i" & done
# One holder in a mount namespace of its own (the same tmpfs, seen through its copy).
head -c 64 /dev/zero > "$D/other-ns"
unshare -m --propagation private sleep 3600 3<"$D/other-ns" &
until grep -q ready "$WORK/py.out" 2>/dev/null; do sleep 0.05; done
sleep 0.3
for asked in "$D" "$D/sub" "$D/f1" "$D/f"; do
  # Exit 1: nothing holds it.
  "$HEADROOM" --json who "$asked" > "$WORK/bpf.json" || [ $? = 1 ]
  HEADROOM_NO_BPF=1 "$HEADROOM" --json who "$asked" > "$WORK/proc.json" || [ $? = 1 ]
  echo "== $asked"; cat "$WORK/bpf.json"; echo; echo "--"; cat "$WORK/proc.json"; echo
done
kill $(jobs -p) 2>/dev/null || true
'''


def test_who_by_iterators_and_by_proc_agree_in_a_child_pid_namespace(scratch):
    result = in_namespace(
        "WORK=" + str(scratch) + "\nexport WORK\n"
        "unshare -p -f --mount-proc bash -euo pipefail -c " + shlex.quote(SCRIPT),
        timeout=120)
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("== ")[1:]
    assert len(blocks) == 4, result.stdout[-2000:]
    counts = []
    for block in blocks:
        asked, rest = block.split("\n", 1)
        by_bpf, by_proc = rest.split("\n--\n")
        bpf, proc = json.loads(by_bpf), json.loads(by_proc)
        assert bpf == proc, asked
        counts.append(len(bpf["paths"][0]["holders"]))
    # The directory: 40 sleepers, the other namespace's sleeper, python's two mappings,
    # its deleted open file and its thread's fd; the deleted file under sub/; f1 alone;
    # the empty directory "f" is no parent of f1.
    assert counts == [45, 1, 1, 0], counts
    holders = json.loads(blocks[0].split("\n", 1)[1].split("\n--\n")[0])["paths"][0]["holders"]
    assert {h["file"].rsplit("/", 1)[1] for h in holders if h["how"] == "mmap"} == {
        "mapped-after-close", "mapped-deleted"}
    assert all(h["pid"] < 1000 for h in holders)  # numbered in the child namespace


def both_scans(scratch, script: str, asked: str) -> tuple[str, dict, dict]:
    """Runs `script` (which sets up holders under a tmpfs $D) in a child pid namespace,
    then `who --json <asked>` both ways: $D, and the answers by the iterators and by /proc."""
    tail = r'''
"$HEADROOM" --json who "ASKED" > "$WORK/bpf.json" || [ $? = 1 ]
HEADROOM_NO_BPF=1 "$HEADROOM" --json who "ASKED" > "$WORK/proc.json" || [ $? = 1 ]
echo "$D"; cat "$WORK/bpf.json"; echo; echo "--"; cat "$WORK/proc.json"
kill $(jobs -p) 2>/dev/null || true
'''.replace("ASKED", asked)
    result = in_namespace(
        "WORK=" + str(scratch) + "\nexport WORK\n"
        "unshare -p -f --mount-proc bash -euo pipefail -c " + shlex.quote(script + tail),
        timeout=60)
    assert result.returncode == 0, result.stderr
    where, rest = result.stdout.split("\n", 1)
    by_bpf, by_proc = rest.split("\n--\n")
    return where, json.loads(by_bpf), json.loads(by_proc)


# A process that unmapped its own executable (as a packer's stub or a restored checkpoint
# does): only /proc/<pid>/exe says it holds the file. The holder is a copy of python
# that copies a few instructions to anonymous memory, jumps there, unmaps every mapping
# of itself and pauses (x86-64 machine code).
UNMAP_OWN_EXE = r'''
import ctypes, mmap, os, struct
exe = os.readlink("/proc/self/exe")
ranges = []
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].rstrip("\n") == exe:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            ranges.append((start, end - start))
code = b""
for start, length in ranges:  # munmap(start, length)
    code += b"\x48\xb8" + struct.pack("<Q", 11) + b"\x48\xbf" + struct.pack("<Q", start)
    code += b"\x48\xbe" + struct.pack("<Q", length) + b"\x0f\x05"
code += b"\xb8\x22\x00\x00\x00\x0f\x05\xeb\xf7"  # for (;;) pause();
stub = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
stub.write(code)
print("ready", len(ranges), flush=True)
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(stub)))()
'''


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the holder is x86-64 code")
def test_an_executable_no_longer_mapped_is_held_by_both_scans(scratch):
    (scratch / "unmap.py").write_text(UNMAP_OWN_EXE)
    script = r'''
D=$(mktemp -d -p "$WORK"); mount -t tmpfs tmpfs "$D"
cp "$(readlink -f "$PY")" "$D/py"
"$D/py" "$WORK/unmap.py" > "$WORK/exe.out" &
until grep -q ready "$WORK/exe.out" 2>/dev/null; do sleep 0.05; done
sleep 0.2
! grep -q "$D/py" /proc/$!/maps
'''
    where, by_bpf, by_proc = both_scans(scratch, script, "$D")
    assert by_bpf == by_proc
    holders = by_bpf["paths"][0]["holders"]
    assert [(h["how"], h["file"]) for h in holders] == [("exe", where + "/py")]


# A process of this mount namespace that maps a file of an overlay mounted in another
# one (opened through /proc/<pid>/root). Its mapping is the overlay's backing file: maps
# names the overlay path (and the overlay's device), d_path the backing file's own path,
# relative to its layer ("/sub/f"), and the check for overlay mounts sees only this
# namespace's mount table. The programs see that the backing file's mount (the layer's
# private clone) is in no namespace of the reader's, and the process is read from /proc.
OVERLAY_ELSEWHERE = r'''
D=$(mktemp -d -p "$WORK"); mount -t tmpfs tmpfs "$D"
mkdir -p "$D/lower/sub" "$D/upper" "$D/work" "$D/ov"; head -c 8192 /dev/zero > "$D/lower/sub/f"
unshare -m --propagation private bash -c "mount -t overlay overlay -o lowerdir=$D/lower,upperdir=$D/upper,workdir=$D/work $D/ov && echo up > $WORK/b.out && exec sleep 3600" &
until grep -q up "$WORK/b.out" 2>/dev/null; do sleep 0.05; done
$PY -c "
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY); m = mmap.mmap(fd, 8192, prot=mmap.PROT_READ); os.close(fd)
print('ready', flush=True); time.sleep(3600)" "/proc/$!/root$D/ov/sub/f" > "$WORK/h.out" &
until grep -q ready "$WORK/h.out" 2>/dev/null; do sleep 0.05; done
'''


def test_who_by_iterators_names_a_mapped_overlay_file_of_another_namespace_as_maps_does(scratch):
    _, by_bpf, by_proc = both_scans(scratch, OVERLAY_ELSEWHERE, "/")
    mapped = [h["file"] for h in by_proc["paths"][0]["holders"] if h["how"] == "mmap"]
    assert any(name.endswith("/ov/sub/f") for name in mapped), mapped
    assert by_bpf == by_proc


# The scanner in a pid namespace B below the one whose /proc it reads (A), numbered
# alike in both (ns_last_pid of B set to A's next pid): the iterators see B's processes
# only, and B's pid 1 (which holds nothing) must not stand in for A's pid 1 (which holds
# "a"). /proc/self being the scanner's getpid() does not show that /proc is its own.
SAME_NUMBER_IN_AN_OUTER_NAMESPACE = r'''
D=$(mktemp -d -p "$WORK"); mount -t tmpfs tmpfs "$D"; export D
head -c 64 /dev/zero > "$D/a"; head -c 64 /dev/zero > "$D/b"
cat > "$WORK/in-b.sh" <<'EOS'
next() { readlink /proc/self > /proc/sys/kernel/ns_last_pid; }  # the next pid: A's, in B too
next; $PY -c 'import os; assert os.getpid() == int(os.readlink("/proc/self"))'
next; "$HEADROOM" --json who "$D" > "$WORK/bpf.json"
HEADROOM_NO_BPF=1 "$HEADROOM" --json who "$D" > "$WORK/proc.json"
EOS
cat > "$WORK/in-a.sh" <<'EOS'
exec 3<"$D/a"
sleep 3600 3<"$D/b" &
unshare -p -f bash -euo pipefail "$WORK/in-b.sh" 3<&-
kill $!
EOS
unshare -p -f --mount-proc bash -euo pipefail "$WORK/in-a.sh"
cat "$WORK/bpf.json"; echo; echo "--"; cat "$WORK/proc.json"
'''


def test_who_by_iterators_is_not_fooled_by_a_pid_numbered_alike_in_an_outer_namespace(scratch):
    result = in_namespace("WORK=" + str(scratch) + "\nexport WORK\n" +
                          SAME_NUMBER_IN_AN_OUTER_NAMESPACE, timeout=60)
    assert result.returncode == 0, result.stderr
    by_bpf, by_proc = (json.loads(part) for part in result.stdout.split("\n--\n"))
    held = {(h["pid"], h["file"].rsplit("/", 1)[1]) for h in by_proc["paths"][0]["holders"]}
    assert (1, "a") in held, held
    assert by_bpf == by_proc
