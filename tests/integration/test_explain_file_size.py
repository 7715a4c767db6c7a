"""explain on real failures past RLIMIT_FSIZE, made here: a torch.save under
`ulimit -f` prints the words of a full disk, and only the host's file size
limit tells them apart; a shell writer dies of SIGXFSZ."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import PYTHON, REPO, have_torch


SAVE = """
import torch
for epoch in range(2):
    print(f"epoch {epoch} loss {1.0 / (epoch + 1):.4f}", flush=True)
torch.save({"weights": torch.zeros(4 * 1024 * 1024)}, "ckpt.pt")
"""


def explain(headroom: str, log: str, limit: str, cwd) -> dict:
    result = subprocess.run(["bash", "-c", f'ulimit -f {limit}; "$0" explain --json "$1"', headroom, log],
                            capture_output=True, text=True, timeout=60, cwd=str(cwd))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.skipif(not have_torch(), reason="Debian's python3-torch is not installed")
def test_torch_save_past_the_limit_is_the_limit_where_it_is_set(headroom, scratch):
    (scratch / "save.py").write_text(SAVE)
    job = subprocess.run(["bash", "-c", f'ulimit -f 8192; exec "{PYTHON}" save.py'],
                         capture_output=True, text=True, timeout=120, cwd=str(scratch))
    assert job.returncode == -6  # the interpreter aborts while closing the archive
    (scratch / "job.log").write_text(job.stdout + job.stderr)
    assert "PytorchStreamWriter failed writing file data/0: file write failed" in job.stderr

    report = explain(headroom, "job.log", "8192", scratch)
    assert report["verdict"]["cause"] == "file_size_limit", report["candidates"]
    assert report["verdict"]["host_cause"] is True
    assert report["remedy"][0].startswith("remove the file size limit in the shell that starts "
                                          "the job: ulimit -f unlimited")
    facts = [fact for fact in report["host"]["facts"] if fact["check"] == "fsize.limit"]
    assert facts and facts[0]["verdict"] == "confirms", report["host"]

    # The same log where the job's shell has no limit: a full disk, as the words say.
    report = explain(headroom, "job.log", "unlimited", scratch)
    assert report["verdict"]["cause"] == "disk_full", report["candidates"]
    assert [c["cause"] for c in report["candidates"]] == ["disk_full"]


def test_sigxfsz_of_a_shell_writer(headroom, scratch):
    job = subprocess.run(["bash", "-c", 'ulimit -f 64; head -c 1048576 /dev/zero > out.bin; echo "rc=$?"'],
                         capture_output=True, text=True, timeout=60, cwd=str(scratch))
    assert "rc=153" in job.stdout
    (scratch / "job.log").write_text(job.stderr + job.stdout)
    report = explain(headroom, "job.log", "64", scratch)
    assert report["verdict"]["cause"] == "file_size_limit"
    assert report["verdict"]["confidence"] == "high"
    assert [e["signature"] for e in report["evidence"]] == ["shell.sigxfsz"]
