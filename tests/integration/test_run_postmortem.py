"""headroom run's post-mortem with real PyTorch: whose failure it is and what it says.

- An OOM kill of an earlier job in the same memory cgroup, a moment before this job
  started, is not this job's (issue 20 #10).
- torch.multiprocessing.spawn ranks are "process N" as PyTorch calls them, and a rank's
  exception is quoted with the rank named (issue 20 #11).
- headroom's own DiskFull from save_checkpoint is a certain disk_full (issue 20 #12).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import HEADROOM, PRIVATE_SHM, PYTHON, REPO, MemoryCgroup, have_torch, in_namespace

pytestmark = pytest.mark.skipif(not have_torch(), reason="needs Debian's python3-torch")

# Two ranks with gloo; rank 1 raises once both have done an all_reduce.
SPAWN_JOB = r'''
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = sys.argv[1]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    t = torch.ones(4); dist.all_reduce(t)
    os.write(1, f"rank {rank} pid {os.getpid()}\n".encode())  # one write: no interleaving
    if rank == 1:
        raise ValueError("bad label 17 in batch 3")
    import time; time.sleep(2)
if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
'''


def free_port() -> str:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def private_shm(argv: list) -> list:
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            PRIVATE_SHM + 'exec "$@"', "sh", *argv]


def rank_pids(stdout: str) -> dict:
    return {int(line.split()[1]): int(line.split()[3]) for line in stdout.splitlines()
            if line.startswith("rank ")}


def test_a_spawned_ranks_exception_is_quoted_and_the_rank_named(headroom, tmp_path):
    job = tmp_path / "spawn_job.py"
    job.write_text(SPAWN_JOB)
    result = subprocess.run(private_shm([headroom, "run", "--interval", "100ms",
                                         "--report", str(tmp_path / "r.json"),
                                         "--", PYTHON, str(job), free_port()]),
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 1, result.stderr
    pids = rank_pids(result.stdout)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["verdict"]["cause"] == "unknown", result.stderr
    assert doc["process"]["pid"] == pids[1], (doc["process"], pids)
    assert doc["process"]["role"] == "spawned" and doc["process"]["role_text"] == "process 1"
    assert doc["process"]["fate"] == "raised ValueError: bad label 17 in batch 3"
    assert doc["output_lines"][0].endswith(": ValueError: bad label 17 in batch 3")
    assert "process 1 (pid %d" % pids[1] in result.stderr, result.stderr
    assert "ValueError: bad label 17 in batch 3" in result.stderr.split("the job failed")[1]
    # Nothing of this job is a DataLoader worker: it has none.
    assert all(exit["role"] != "DataLoader worker" for exit in doc["exits"]), doc["exits"]
    assert "DataLoader" not in result.stderr.split("the job failed")[1]


def test_an_earlier_jobs_oom_kill_in_the_same_cgroup_is_not_this_jobs(headroom, tmp_path):
    job = tmp_path / "spawn_job.py"
    job.write_text(SPAWN_JOB)
    with MemoryCgroup(1 << 30) as cgroup:
        # The previous job in this cgroup (a container, a Slurm allocation) dies of OOM
        # and the next starts at once: within the second the old time filter allowed.
        hog = subprocess.run(cgroup.wrap([PYTHON, "-c", "b = bytearray(2 << 30)"]),
                             capture_output=True, text=True, timeout=60)
        assert hog.returncode == -9, hog.stderr
        assert cgroup.oom_kills() >= 1
        result = subprocess.run(cgroup.wrap(private_shm([
            headroom, "run", "--interval", "100ms", "--report", str(tmp_path / "r.json"),
            "--", PYTHON, str(job), free_port()])), capture_output=True, text=True, timeout=180)
    assert result.returncode == 1, result.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["verdict"]["cause"] != "host_oom", result.stderr
    assert "host_oom" not in result.stderr and "OOM killer" not in result.stderr.split("the job failed")[1]
    assert doc["process"]["pid"] == rank_pids(result.stdout).get(1), (doc["process"], result.stdout, result.stderr)
    assert not any(name.startswith("kernel: Killed process") for name in doc["output_lines"])


SAVE_JOB = r'''
import sys, torch, headroom
model = torch.nn.Linear(1024, 1024)
for step in range(0, 400, 50):
    print("step", step, flush=True)
    headroom.save_checkpoint(model.state_dict(), f"{sys.argv[1]}/step_{step:06d}.pt", keep=3)
'''


def test_headrooms_own_disk_full_is_a_certain_disk_full(headroom, tmp_path, scratch):
    job = tmp_path / "save.py"
    job.write_text(SAVE_JOB)
    ckpt = scratch / "ckpt"
    ckpt.mkdir()
    # No --dir: the checkpoint path is known only from headroom.DiskFull's own line.
    result = in_namespace(f'''
        mount -t tmpfs -o size=10m tmpfs {ckpt}
        "$HEADROOM" run --report {tmp_path}/r.json -- "$PY" {job} {ckpt} || rc=$?
        umount {ckpt}
        exit ${{rc:-0}}
    ''', timeout=120, env={"PYTHONPATH": str(REPO / "python")})
    assert result.returncode == 1, result.stderr
    assert "DiskFull" in result.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["verdict"]["cause"] == "disk_full", result.stderr
    assert doc["verdict"]["confidence"] == "high", result.stderr
