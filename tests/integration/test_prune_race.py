"""Randomized race: `prune --yes` runs while other processes hold checkpoints (an open fd,
a map after close, a cwd), fork short-lived readers that open a checkpoint file, hold it a
few ms and exit, rename checkpoints and swap checkpoint directories for symlinks to a
directory outside. No held checkpoint may be removed (a file's link count must never drop
to 0 while a process holds it) and nothing outside may be touched.

Each round plants CHECKPOINTS checkpoint directories and runs one `prune --keep-last 1
--yes`; every checkpoint is one trial. Default: 5 rounds x 60 = 300 trials (about 20 s);
HEADROOM_RACE_ROUNDS=200 for a long run (bench/safety/campaign).
"""
from __future__ import annotations

import os

from race_common import run_race

ROUNDS = int(os.environ.get("HEADROOM_RACE_ROUNDS", "5"))
CHECKPOINTS = 60

DRIVER = r'''
headroom, tree, outside, rounds, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sentinels(outside, 10)
def model(step):
    return f"{tree}/checkpoint-{step}/model.safetensors"
failures, trials, removed_total = [], 0, 0
for round_number in range(rounds):
    rng = random.Random(round_number)
    for name in os.listdir(tree):
        subprocess.run(["rm", "-rf", "--one-file-system", os.path.join(tree, name)], check=True)
    steps = [100 * (i + 1) for i in range(count)]
    for step in steps:
        os.makedirs(f"{tree}/checkpoint-{step}")
        with open(model(step), "wb") as f:
            f.write(b"m" * 4096)
        with open(f"{tree}/checkpoint-{step}/trainer_state.json", "w") as f:
            f.write(json.dumps({"global_step": step}))
    trials += len(steps)
    older = steps[:-1]
    held = rng.sample(older, len(older) // 5)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)  # the cwd holders below end with it (killpg)
        os.close(read_end)
        keep = []
        for step in held:
            how = rng.random()
            if how < 0.4:
                keep.append(os.open(model(step), os.O_RDONLY))
            elif how < 0.8:
                map_and_close(model(step), 4096)
            elif os.fork() == 0:  # a process working in the checkpoint, no file open
                os.chdir(f"{tree}/checkpoint-{step}")
                time.sleep(3600)
                os._exit(0)
        os.write(write_end, b"R")
        time.sleep(3600)
        os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 1) == b"R"
    free = [s for s in older if s not in held]
    transient = free[::3]
    violations_path = f"{outside}/../violations"
    readers = start_readers([model(s) for s in transient], violations_path, 2000 + round_number)
    swaps = start_swaps([f"{tree}/checkpoint-{s}" for s in free if s not in transient],
                        f"{outside}/keep", 1000 + round_number)
    inodes = {model(s): os.stat(model(s)).st_ino for s in held}
    result = subprocess.run([headroom, "--json", "prune", tree, "--keep-last", "1", "--yes",
                             "--settle", "0", "--ignore-unreadable", "1"],
                            capture_output=True, text=True)
    stop(swaps); stop(readers)
    failures += violations(violations_path, round_number)
    if result.returncode not in (0, 1):
        failures.append(f"round {round_number}: prune rc={result.returncode}: {result.stderr}")
    else:
        report = json.loads(result.stdout)
        removed_total += sum(1 for c in report["checkpoints"] if c.get("outcome") == "removed")
    failures += check_held(inodes, round_number)
    failures += check_sentinels(outside, 10, round_number)
    stop(child, group=True)
summary(failures, trials, removed_total, rounds)
'''

MOUNTS = 'mount -t tmpfs -o size=128m tmpfs "$WORK/tree"'


def test_prune_races_never_remove_held_or_outside(scratch):
    summary = run_race("prune", DRIVER, MOUNTS, scratch, ROUNDS, CHECKPOINTS)
    assert summary["failures"] == [], summary
    assert summary["trials"] == ROUNDS * CHECKPOINTS
    # The race must not make prune useless: unheld checkpoints still go.
    assert summary["removed"] > 0, summary
