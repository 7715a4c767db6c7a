"""What the clean and prune races share: the adversaries (short-lived readers that check a
file never loses its last link while they hold it; renames and directory -> symlink swaps
to a directory outside), and running a driver in a private mount namespace.

COMMON is Python source prepended to each race's driver; the driver prints one JSON summary
line: failures (first 20), violations, trials, removed, rounds."""
from __future__ import annotations

import json
import os
import subprocess

from conftest import HEADROOM, PYTHON, require_root

COMMON = r'''
import ctypes, mmap, os, random, socket, subprocess, sys, time, json
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]

def map_and_close(path, size):
    fd = os.open(path, os.O_RDONLY)
    libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    os.close(fd)

def forked_loop(seed, seconds, step):
    """A child process that calls step(rng) until `seconds` have passed; returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    rng = random.Random(seed)
    deadline = time.time() + seconds
    while time.time() < deadline:
        step(rng)
    os._exit(0)

def start_readers(targets, violations_path, seed, seconds=20):
    """Forks readers one after another: open a target, hold it 0-20 ms, exit. A reader whose
    file lost its last link while it held it writes a violation."""
    open(violations_path, "w").close()
    def read_one(rng):
        target = rng.choice(targets)
        reader = os.fork()
        if reader == 0:
            try:
                fd = os.open(target, os.O_RDONLY)
            except OSError:
                os._exit(0)  # already removed: not a violation
            time.sleep(rng.random() * 0.02)
            if os.fstat(fd).st_nlink == 0:
                with open(violations_path, "a") as out:
                    out.write(f"{target} removed while a reader held it\n")
            os._exit(0)
        os.waitpid(reader, 0)
    return forked_loop(seed, seconds, read_one)

def start_swaps(paths, outside_dir, seed, seconds=20):
    """Renames entries back and forth and swaps directories for a symlink to outside_dir."""
    def swap_one(rng):
        path = rng.choice(paths)
        try:
            if os.path.isdir(path) and rng.random() < 0.6:
                os.rename(path, f"{path}.moved")
                os.symlink(outside_dir, path)
                time.sleep(0.0005)
                os.unlink(path)
                os.rename(f"{path}.moved", path)
            else:
                os.rename(path, f"{path}.r")
                os.rename(f"{path}.r", path)
        except OSError:
            pass
    return forked_loop(seed, seconds, swap_one)

def stop(pid, group=False):
    (os.killpg if group else os.kill)(pid, 9)
    os.waitpid(pid, 0)

def violations(path, round_number):
    with open(path) as f:
        return [f"round {round_number}: {line.strip()}" for line in f if line.strip()]

def check_held(inodes, round_number):
    """inodes: path -> inode of what was held; each must still be there, the same file."""
    failures = []
    for target, inode in inodes.items():
        try:
            if os.stat(target).st_ino != inode:
                failures.append(f"round {round_number}: {target} replaced")
        except FileNotFoundError:
            failures.append(f"round {round_number}: held {target} was removed")
    return failures

def sentinels(outside, count):
    os.makedirs(f"{outside}/keep", exist_ok=True)
    for i in range(count):
        with open(f"{outside}/keep/sentinel-{i}", "wb") as f:
            f.write(b"sentinel %d" % i)

def check_sentinels(outside, count, round_number):
    left = sorted(os.listdir(f"{outside}/keep"))
    if left != sorted(f"sentinel-{i}" for i in range(count)):
        return [f"round {round_number}: outside changed: {left}"]
    failures = []
    for i in range(count):
        with open(f"{outside}/keep/sentinel-{i}", "rb") as f:
            if f.read() != b"sentinel %d" % i:
                failures.append(f"round {round_number}: sentinel {i} changed")
    return failures

def summary(failures, trials, removed, rounds):
    print(json.dumps({"failures": failures[:20], "violations": len(failures), "trials": trials,
                      "removed": removed, "rounds": rounds}))
'''


def run_race(name: str, driver: str, mounts: str, scratch, rounds: int, per_round: int) -> dict:
    """Runs COMMON + driver as `driver HEADROOM TREE OUTSIDE ROUNDS PER_ROUND` in a private
    mount namespace after `mounts` (which must mount a tmpfs on $WORK/tree), and returns its
    summary; bench/safety/campaign collects it through $HEADROOM_RACE_SUMMARY."""
    require_root()
    script = f'''
mkdir -p "$WORK/tree" "$WORK/outside"
{mounts}
"$PY" -c "$DRIVER" "$HEADROOM" "$WORK/tree" "$WORK/outside" "$ROUNDS" "$PER_ROUND"
'''
    env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON, DRIVER=COMMON + driver,
               WORK=str(scratch), ROUNDS=str(rounds), PER_ROUND=str(per_round))
    result = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-euo", "pipefail", "-c", script],
        capture_output=True, text=True, timeout=60 + rounds * 30, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    if os.environ.get("HEADROOM_RACE_SUMMARY"):
        with open(os.environ["HEADROOM_RACE_SUMMARY"], "a") as out:
            out.write(json.dumps({"race": name, **found}) + "\n")
    return found
