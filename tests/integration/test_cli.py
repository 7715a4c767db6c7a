"""The CLI's contract: bad input gets one clear line and exit 2."""
import subprocess

import pytest

from conftest import HEADROOM


@pytest.mark.parametrize("args, message", [
    (["check", "--batch-bytes", "12XB"], "invalid size '12XB'"),
    (["check", "--workers", "-3"], "--workers must not be negative"),
    (["check", "--dir", "/nonexistent/headroom"], "--dir /nonexistent/headroom: No such file"),
    (["check", "--warn-percent", "120"], "--warn-percent must be in (0, 100], got 120"),
    # The core names fields (core/thresholds.h); the CLI says its flags, not in the user's value.
    (["check", "--warn-percent", "99", "--critical-percent", "90"],
     "--warn-percent (99) must not exceed --critical-percent (90)"),
    (["check", "--only", "keep"], "--only: no check named 'keep'"),
    (["check", "--prefetch", "0", "--workers", "2"], "--prefetch must be at least 1 when --workers"),
    (["frobnicate"], "frobnicate"),
    # A negative count was read as the largest one: `du --top -1` listed everything (issue 16).
    (["du", "--top", "-1", "."], "--top: must not be negative, got -1"),
    (["du", "--top=-5", "."], "--top: must not be negative, got -5"),
    (["du", "--threads", "-4", "."], "--threads: Value -4 not in range"),
    (["clean", "--shm", "--ignore-unreadable", "-1"], "--ignore-unreadable"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = subprocess.run([HEADROOM, *args], capture_output=True, text=True)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_only_takes_every_id_a_report_prints_and_selects_just_it():
    # issue 16: `--only fd.system` was refused and `--only tmp.exec` ran all three tmp.*.
    import json
    full = subprocess.run([HEADROOM, "check", "--json", "--workers", "1"],
                          capture_output=True, text=True, timeout=120)
    ids = sorted({item["id"] for item in json.loads(full.stdout)["findings"]})
    assert {"fd.system", "tmp.exec", "job.shape", "shm.capacity"} <= set(ids), ids
    for finding_id in ids:
        only = subprocess.run([HEADROOM, "check", "--json", "--workers", "1", "--only", finding_id],
                              capture_output=True, text=True, timeout=120)
        assert only.returncode in (0, 1), (finding_id, only.stderr)
        got = {item["id"] for item in json.loads(only.stdout)["findings"]}
        assert got == {finding_id}, (finding_id, got)
