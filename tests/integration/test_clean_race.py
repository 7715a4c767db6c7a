"""Randomized race: `clean --tmp --yes` runs while other processes open, map, bind,
rename, swap directories for symlinks to a directory outside the tree, and fork short-lived
readers that open a file, hold it a few ms and exit. Nothing held may be removed (a file's
link count must never drop to 0 while a process holds it), no bound socket may go, and
nothing outside the tree may be touched.

Each round plants ENTRIES old candidates (files, directories with files, sockets), starts
the adversaries, and runs one `clean --yes`; every candidate is one trial. Default: 20
rounds x 250 = 5,000 trials (about 20 s); HEADROOM_RACE_ROUNDS=200 for a long run
(bench/safety/campaign).
"""
from __future__ import annotations

import os

from race_common import run_race

ROUNDS = int(os.environ.get("HEADROOM_RACE_ROUNDS", "20"))
ENTRIES = 250

DRIVER = r'''
headroom, tree, outside, rounds, entries = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sentinels(outside, 20)
def target(name):  # the file a holder opens for an entry
    return f"{tree}/{name}/sub/f" if name.startswith("d") else f"{tree}/{name}"
failures, trials, removed_total = [], 0, 0
for round_number in range(rounds):
    rng = random.Random(round_number)
    for name in os.listdir(tree):
        subprocess.run(["rm", "-rf", "--one-file-system", os.path.join(tree, name)], check=True)
    names = []
    for i in range(entries):
        if i % 3 == 0:
            os.makedirs(f"{tree}/d{i}/sub")
            for path in (f"{tree}/d{i}/sub/f", f"{tree}/d{i}/g"):
                with open(path, "wb") as f:
                    f.write(b"x" * 100)
            names.append(f"d{i}")
        elif i % 10 == 1:
            names.append(f"s{i}")  # a socket, bound below
        else:
            with open(f"{tree}/f{i}", "wb") as f:
                f.write(b"x" * 100)
            names.append(f"f{i}")
    trials += len(names)
    # Held for the whole clean run: open fds, map-then-close and bound sockets, chosen before
    # clean starts. Sockets not held are bound and closed: stale socket files.
    held = rng.sample(names, entries // 5)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        keep = []
        for name in names:
            if name.startswith("s"):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.bind(f"{tree}/{name}")
                if name in held:
                    sock.listen(1); keep.append(sock)
                else:
                    sock.close()
        for name in held:
            if name.startswith("s"):
                continue
            if rng.random() < 0.5:
                map_and_close(target(name), 100)
            else:
                keep.append(os.open(target(name), os.O_RDWR))
        os.write(write_end, b"R")
        time.sleep(3600)
        os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 1) == b"R"
    free = [n for n in names if n not in held]
    # Short-lived readers on a third of the free files; renames and symlink swaps on the rest.
    transient = [n for n in free if not n.startswith("s")][::3]
    violations_path = f"{outside}/../violations"
    readers = start_readers([target(n) for n in transient], violations_path, 2000 + round_number)
    swaps = start_swaps([f"{tree}/{n}" for n in free if n not in transient], f"{outside}/keep",
                        1000 + round_number)
    inodes = {}
    for name in held:
        path = f"{tree}/{name}" if name.startswith("s") else target(name)
        inodes[path] = os.stat(path).st_ino
    # headroom three days later (ctime cannot be set back); no grace period: this race is
    # about identity, symlinks and the re-checks, which the grace period would mask.
    result = subprocess.run(["faketime", "-f", "+3d", headroom, "--json", "clean", "--tmp", "--yes",
                             "--older-than", "1d", "--grace", "0", "--ignore-unreadable", "1",
                             "--audit-log", f"{outside}/../audit.log"],
                            env=dict(os.environ, TMPDIR=tree), capture_output=True, text=True)
    stop(swaps); stop(readers)
    failures += violations(violations_path, round_number)
    if result.returncode not in (0, 1):
        failures.append(f"round {round_number}: clean rc={result.returncode}: {result.stderr}")
    else:
        removed_total += len(json.loads(result.stdout)["removed"])
    failures += check_held(inodes, round_number)
    failures += check_sentinels(outside, 20, round_number)
    stop(child)
summary(failures, trials, removed_total, rounds)
'''

# The machine's /tmp and /dev/shm are covered inside the namespace: a clean that fell back
# to its default temp dir would clean those, never the machine's own.
MOUNTS = r'''
mount -t tmpfs -o size=1m,mode=1777 headroom-test-shield /tmp
mount -t tmpfs -o size=1m,mode=1777 headroom-test-shield /dev/shm
mount -t tmpfs -o size=256m,mode=1777 tmpfs "$WORK/tree"
'''


def test_clean_races_never_remove_held_or_outside(scratch):
    summary = run_race("clean", DRIVER, MOUNTS, scratch, ROUNDS, ENTRIES)
    assert summary["failures"] == [], summary
    assert summary["trials"] == ROUNDS * ENTRIES
    # The race must not make clean useless: most unheld candidates still go.
    assert summary["removed"] > ROUNDS * ENTRIES // 2, summary
