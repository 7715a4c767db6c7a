"""pids.limit against a real pids cgroup (v1 /sys/fs/cgroup/pids or v2).

`headroom check --only pids.limit --workers 8` runs inside a pids cgroup made
below our own: with pids.max 20 it must be critical, with 100000 ok. With
torch installed, the same small cgroup makes a real DataLoader with 8 workers
fail the way the check predicts (fork EAGAIN or "can't start new thread"), and
the num_workers its remedy names finishes there. `headroom explain` of a real
torch "can't start new thread" log confirms pid_limit in a cgroup with pids.max 12.
Every cgroup is removed and only processes started here are killed, by pid.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import PYTHON, REPO, MemoryCgroup, check_json, evidence, finding, have_torch


class PidsCgroup(MemoryCgroup):
    """A pids cgroup below our own (v1 pids hierarchy or v2), removed on exit.

    wrap() and the cleanup (kill what is left inside, by pid; rmdir) are MemoryCgroup's.
    """

    def __init__(self, pids_max: int):
        super().__init__(0)
        self.pids_max = pids_max

    def __enter__(self) -> "PidsCgroup":
        name = f"headroom-test-{uuid.uuid4().hex[:8]}"
        own = Path("/proc/self/cgroup").read_text().splitlines()
        v1 = [line.split(":", 2)[2] for line in own if "pids" in line.split(":", 2)[1].split(",")]
        if v1 and Path("/sys/fs/cgroup/pids/cgroup.procs").exists():
            self.version = 1
            base = Path("/sys/fs/cgroup/pids") / v1[0].lstrip("/")
        else:
            v2 = [line.split(":", 2)[2] for line in own if line.startswith("0::")]
            base = Path("/sys/fs/cgroup") / (v2[0].lstrip("/") if v2 else "")
            controllers = base / "cgroup.subtree_control"
            if not controllers.exists() or "pids" not in controllers.read_text().split():
                pytest.skip("no pids controller delegated here")
            self.version = 2
        self.path = base / name
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(self.pids_max))
        return self


def check_in(cgroup: PidsCgroup, headroom: str, *flags: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="2")
    result = subprocess.run(
        cgroup.wrap([headroom, "check", "--json", "--only", "pids.limit", *flags]),
        capture_output=True, text=True, timeout=60, env=env)
    report = check_json(result)
    return {"rc": result.returncode, "finding": finding(report, "pids.limit")}


@pytest.mark.parametrize("pids_max,severity,rc", [(20, "critical", 1), (100000, "ok", 0)])
def test_check_against_pids_max(headroom, pids_max, severity, rc):
    with PidsCgroup(pids_max) as cgroup:
        out = check_in(cgroup, headroom, "--workers", "8")
    item = out["finding"]
    assert item["severity"] == severity, item
    assert out["rc"] == rc
    # 2 OMP + 8 feeders + 4 helpers + 8 workers x 3 = 38.
    assert evidence(item, "estimated_tasks") == 38
    assert evidence(item, "pids_max") == pids_max
    assert evidence(item, "pids_current") >= 1  # headroom itself
    if severity == "critical":
        assert evidence(item, "room_left") < 20
        assert evidence(item, "binding_limit").startswith("pids.max of /sys/fs/cgroup")
        assert any("num_workers=" in line for line in item["remedy"]), item["remedy"]
    else:
        assert item["remedy"] == []


DATALOADER = """
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset
data = TensorDataset(torch.arange(256.0), torch.arange(256.0))
for x, y in DataLoader(data, batch_size=8, num_workers=int(sys.argv[1])):
    pass
print("finished")
"""


def run_dataloader(pids_max: int, workers: int) -> subprocess.CompletedProcess:
    with PidsCgroup(pids_max) as cgroup:
        return subprocess.run(cgroup.wrap([PYTHON, "-c", DATALOADER, str(workers)]),
                              capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, OMP_NUM_THREADS="2"))


@pytest.mark.skipif(not have_torch(), reason="needs Debian's python3-torch")
def test_dataloader_fails_where_the_check_says_and_its_fix_works(headroom):
    ok = run_dataloader(100000, 8)  # where the check says ok
    assert ok.returncode == 0 and "finished" in ok.stdout, ok.stderr[-2000:]
    failed = run_dataloader(20, 8)  # where it says critical
    assert failed.returncode != 0 and "finished" not in failed.stdout
    assert ("can't start new thread" in failed.stderr
            or "Resource temporarily unavailable" in failed.stderr), failed.stderr[-2000:]
    # The num_workers the remedy names fits the same limit.
    with PidsCgroup(20) as cgroup:
        item = check_in(cgroup, headroom, "--workers", "8")["finding"]
    fits = [re.search(r"num_workers=(\d+) fits", line) for line in item["remedy"]]
    workers = int(next(match for match in fits if match).group(1))
    assert 0 < workers < 8
    fixed = run_dataloader(20, workers)
    assert fixed.returncode == 0 and "finished" in fixed.stdout, fixed.stderr[-2000:]


@pytest.mark.parametrize("pids_max,verdict", [(12, "confirms"), (100000, "neutral")])
def test_explain_confirms_pid_limit_in_a_small_cgroup(headroom, pids_max, verdict):
    log = REPO / "tests/logs/pid_limit/torch113_pids_max_threads.log"
    with PidsCgroup(pids_max) as cgroup:
        result = subprocess.run(cgroup.wrap([headroom, "explain", "--json", str(log)]),
                                capture_output=True, text=True, timeout=60)
    report = json.loads(result.stdout)
    assert report["candidates"][0]["cause"] == "pid_limit"
    facts = [fact for fact in report["host"]["facts"] if fact["check"] == "pids.limit"]
    assert len(facts) == 1, report["host"]
    assert facts[0]["verdict"] == verdict, facts[0]["summary"]
    if verdict == "confirms":
        assert "pids.max of /sys/fs/cgroup" in facts[0]["summary"]


FORKS = """
import os, sys, time
children = []
try:
    for _ in range(60):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
    print("forked", len(children))
except BlockingIOError as error:
    print("failed after", len(children), error)
finally:
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
"""


def test_root_of_a_user_namespace_is_held_to_rlimit_nproc(headroom):
    """kernel/fork.c exempts the host's root from RLIMIT_NPROC, not uid 0 of a user namespace
    (rootless podman or docker, `unshare -r`): there uid 0 is an ordinary uid outside, and a
    job needing 38 tasks under `ulimit -u 20` cannot start its workers. check said
    nproc_exempt and ok."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become uid 4001")
    probe = subprocess.run(["setpriv", "--reuid", "4001", "--regid", "4001", "--clear-groups",
                            "unshare", "-r", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no unprivileged user namespaces here: {probe.stderr.strip()}")
    script = 'ulimit -u 20; "$HEADROOM" check --only pids.limit --workers 8 --json; "$PY" -c "$FORKS" >&2'
    result = subprocess.run(
        ["setpriv", "--reuid", "4001", "--regid", "4001", "--clear-groups",
         "unshare", "-r", "bash", "-c", script], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, HEADROOM=headroom, PY=PYTHON, FORKS=FORKS))
    assert "failed after" in result.stderr, result.stderr  # the kernel's word: fork fails
    report = check_json(result)
    item = finding(report, "pids.limit")
    assert evidence(item, "uid") == 0
    assert all(e["name"] != "nproc_exempt" for e in item["evidence"]), item["evidence"]
    assert evidence(item, "binding_limit") == "RLIMIT_NPROC of uid 0"
    assert item["severity"] == "critical", item["summary"]
