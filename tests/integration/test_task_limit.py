"""Every command under a task limit that refuses every new thread (RLIMIT_NPROC 0 for a user
who is not root: what `ulimit -u`, a container's or a Slurm job's pids.max do to a job that
has used them up). That limit is a cause headroom names, so headroom must not die of it: each
helper thread is optional, its work done on the calling thread or said to be undone, and
exit codes stay the documented ones (never an abort, never "internal error")."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import HEADROOM, require_root


def as_nobody_without_tasks(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                           "prlimit", "--nproc=0:0", HEADROOM, *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def job_dir(scratch: Path) -> Path:
    require_root()
    os.chmod(scratch, 0o755)
    # Large enough to be read on several threads (explain reads 4 MiB chunks in parallel).
    with open(scratch / "train.log", "w") as log:
        for step in range(300_000):
            log.write(f"step {step} loss 0.5 lr 1e-4 tokens/s 12000\n")
        log.write("OSError: [Errno 28] No space left on device\n")
    os.chmod(scratch / "train.log", 0o644)
    return scratch


def assert_no_crash(result: subprocess.CompletedProcess) -> None:
    assert result.returncode >= 0, result.stderr  # not killed by SIGABRT
    assert "internal error" not in result.stderr and "terminate called" not in result.stderr, \
        result.stderr


def test_the_limit_is_real_here(job_dir: Path):
    """The premise: a process of nobody under this limit cannot start a thread."""
    probe = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                            "prlimit", "--nproc=0:0", "/usr/bin/python3", "-c",
                            "import threading; threading.Thread(target=print).start()"],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0 and "can't start new thread" in probe.stderr, probe.stderr


def test_check_names_the_limit_instead_of_dying_of_it(job_dir: Path):
    result = as_nobody_without_tasks(["check", "--json", "--dir", str(job_dir)])
    assert_no_crash(result)
    assert result.returncode == 1, result.stderr
    findings = {item["id"]: item for item in json.loads(result.stdout)["findings"]}
    assert findings["pids.limit"]["severity"] == "critical", findings["pids.limit"]


def test_explain_who_and_du_answer_on_the_calling_thread(job_dir: Path):
    explained = as_nobody_without_tasks(["explain", "--no-host", "--json",
                                         str(job_dir / "train.log")])
    assert_no_crash(explained)
    assert json.loads(explained.stdout)["verdict"]["cause"] == "disk_full", explained.stdout[:2000]
    who = as_nobody_without_tasks(["who", "--json", str(job_dir)])
    assert_no_crash(who)
    assert who.returncode in (0, 1), who.stderr
    json.loads(who.stdout)
    du = as_nobody_without_tasks(["du", "--json", str(job_dir)])
    assert_no_crash(du)
    assert du.returncode == 0, du.stderr
    assert json.loads(du.stdout)["total"]["files"] >= 1


def test_watch_says_what_it_could_not_measure_and_run_does_not_start(job_dir: Path):
    # A dir on a local filesystem is measured on the sampling thread; /proc (not a local
    # type: its statfs would go to a thread of its own) is said to be unmeasured.
    once = as_nobody_without_tasks(["watch", "--once", "--json", "--no-shm-stale",
                                    "--dir", str(job_dir), "--dir", "/proc"])
    assert_no_crash(once)
    assert once.returncode in (0, 1), once.stderr
    watched = {item["path"]: item for item in json.loads(once.stdout)["filesystems"]}
    assert watched[str(job_dir)]["size_bytes"] > 0, watched[str(job_dir)]
    assert "task limit" in watched["/proc"]["error"], watched["/proc"]
    # The stderr sink has no thread of its own: it delivers on the sampling thread.
    assert "headroom: FIRING" in once.stderr and "task limit" in once.stderr, once.stderr
    served = as_nobody_without_tasks(["watch", "--count", "2", "--interval", "100ms",
                                      "--no-shm-stale", "--no-stderr", "--listen", "127.0.0.1:0"])
    assert_no_crash(served)
    assert served.returncode == 2 and "no thread to serve it" in served.stderr, served.stderr
    run = as_nobody_without_tasks(["run", "--no-preflight", "--", "/bin/true"])
    assert_no_crash(run)
    assert run.returncode == 125 and "task limit" in run.stderr, run.stderr
