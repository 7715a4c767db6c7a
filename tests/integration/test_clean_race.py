"""Randomized race: `clean --tmp --yes` runs while other processes open, map,
rename, and swap directories for symlinks to a directory outside the tree.
Nothing held may be removed and nothing outside the tree may be touched.

Each round plants ENTRIES old candidates (files and directories with files),
starts a chaos process, and runs one `clean --yes`; every candidate is one
trial. Default: 20 rounds x 250 = 5,000 trials (about 30 s);
HEADROOM_RACE_ROUNDS=200 for a long run.
"""
from __future__ import annotations

import os
import subprocess

from conftest import HEADROOM, PYTHON, require_root

ROUNDS = int(os.environ.get("HEADROOM_RACE_ROUNDS", "20"))
ENTRIES = 250

DRIVER = r'''
import ctypes, mmap, os, random, subprocess, sys, time, json
headroom, tree, outside, rounds, entries = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
OLD = time.time() - 3 * 86400
def old(path):
    os.utime(path, (OLD, OLD), follow_symlinks=False)
def write(path, data=b"x" * 100):
    with open(path, "wb") as f:
        f.write(data)
    old(path)
# Outside the tree: sentinels that must survive every round untouched.
os.makedirs(f"{outside}/keep", exist_ok=True)
for i in range(20):
    write(f"{outside}/keep/sentinel-{i}", b"sentinel %d" % i)
old(f"{outside}/keep")
failures, trials, removed_total = [], 0, 0
for round_number in range(rounds):
    rng = random.Random(round_number)
    for name in os.listdir(tree):
        subprocess.run(["rm", "-rf", "--one-file-system", os.path.join(tree, name)], check=True)
    names = []
    for i in range(entries):
        if i % 3 == 0:
            d = f"{tree}/d{i}"
            os.makedirs(f"{d}/sub")
            write(f"{d}/sub/f"); write(f"{d}/g"); old(f"{d}/sub"); old(d)
        else:
            write(f"{tree}/f{i}")
        names.append(f"d{i}" if i % 3 == 0 else f"f{i}")
    trials += len(names)
    # Held for the whole clean run: open fds and map-then-close, chosen before clean starts.
    held = rng.sample(names, entries // 5)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        keep = []
        for name in held:
            target = f"{tree}/{name}/sub/f" if name.startswith("d") else f"{tree}/{name}"
            fd = os.open(target, os.O_RDWR)
            if rng.random() < 0.5:
                libc.mmap(None, 100, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
                os.close(fd)
            else:
                keep.append(fd)
        os.write(write_end, b"R")
        time.sleep(3600)
        os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 1) == b"R"
    # Chaos while clean runs: renames inside the tree, directory -> symlink swaps to outside.
    free = [n for n in names if n not in held]
    chaos = os.fork()
    if chaos == 0:
        crng = random.Random(1000 + round_number)
        deadline = time.time() + 20
        while time.time() < deadline:
            name = crng.choice(free)
            path = f"{tree}/{name}"
            try:
                if name.startswith("d") and crng.random() < 0.6:
                    os.rename(path, f"{path}.moved")
                    os.symlink(f"{outside}/keep", path)
                    time.sleep(0.0005)
                    os.unlink(path)
                    os.rename(f"{path}.moved", path)
                else:
                    os.rename(path, f"{path}.r")
                    os.rename(f"{path}.r", path)
            except OSError:
                pass
        os._exit(0)
    inodes = {}
    for name in held:
        target = f"{tree}/{name}/sub/f" if name.startswith("d") else f"{tree}/{name}"
        inodes[name] = os.stat(target).st_ino
    result = subprocess.run([headroom, "--json", "clean", "--tmp", "--yes", "--older-than", "1d",
                             "--audit-log", f"{outside}/../audit.log"],
                            env=dict(os.environ, TMPDIR=tree), capture_output=True, text=True)
    os.kill(chaos, 9); os.waitpid(chaos, 0)
    if result.returncode not in (0, 1):
        failures.append(f"round {round_number}: clean rc={result.returncode}: {result.stderr}")
    report = json.loads(result.stdout)
    removed_total += len(report["removed"])
    # Invariant 1: every held file still exists, same inode.
    for name, inode in inodes.items():
        target = f"{tree}/{name}/sub/f" if name.startswith("d") else f"{tree}/{name}"
        try:
            if os.stat(target).st_ino != inode:
                failures.append(f"round {round_number}: {target} replaced")
        except FileNotFoundError:
            failures.append(f"round {round_number}: held {target} was removed")
    # Invariant 2: nothing outside the tree touched.
    left = sorted(os.listdir(f"{outside}/keep"))
    if left != sorted(f"sentinel-{i}" for i in range(20)):
        failures.append(f"round {round_number}: outside changed: {left}")
    for i in range(20):
        with open(f"{outside}/keep/sentinel-{i}", "rb") as f:
            if f.read() != b"sentinel %d" % i:
                failures.append(f"round {round_number}: sentinel {i} changed")
    os.kill(child, 9); os.waitpid(child, 0)
print(json.dumps({"failures": failures[:20], "trials": trials, "removed": removed_total}))
'''


def test_clean_races_never_remove_held_or_outside(scratch):
    require_root()
    script = r'''
mkdir -p "$WORK/tree" "$WORK/outside"
mount -t tmpfs -o size=256m tmpfs "$WORK/tree"
$PY -c "$DRIVER" "$HEADROOM" "$WORK/tree" "$WORK/outside" "$ROUNDS" "$ENTRIES"
'''
    env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON, DRIVER=DRIVER, WORK=str(scratch),
               ROUNDS=str(ROUNDS), ENTRIES=str(ENTRIES))
    result = subprocess.run(
        ["unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private", "bash", "-euo",
         "pipefail", "-c", script],
        capture_output=True, text=True, timeout=60 + ROUNDS * 30, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    import json
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["failures"] == [], summary
    assert summary["trials"] == ROUNDS * ENTRIES
    # The race must not make clean useless: most unheld candidates still go.
    assert summary["removed"] > ROUNDS * ENTRIES // 2, summary
