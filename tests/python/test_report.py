"""headroom.check() and the Report objects (no torch needed)."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import PACKAGE, PYTHON

import headroom
from headroom.report import Report, severity_rank

REPORT = {
    "verdict": "critical", "environment": "docker",
    "findings": [
        {"id": "shm.capacity", "subject": "/dev/shm", "severity": "critical",
         "summary": "/dev/shm has 64.0 MiB free of 64.0 MiB but the job needs 96.0 MiB",
         "evidence": [{"name": "avail_bytes", "value": 67108864, "unit": "bytes",
                       "text": "64.0 MiB"}],
         "why": "workers die of SIGBUS", "remedy": ["docker run --shm-size=106m ..."]},
        {"id": "tmp.space", "subject": "/tmp", "severity": "warn", "summary": "/tmp is 90% full",
         "evidence": [], "why": "", "remedy": []},
        {"id": "kernel.oom", "subject": "", "severity": "unknown", "summary": "could not measure",
         "evidence": [], "why": "", "remedy": [], "reason": "dmesg restricted"},
    ],
}


def test_import_does_not_import_torch():
    code = "import sys, headroom; assert 'torch' not in sys.modules, 'torch imported'"
    result = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True,
                            env={"PYTHONPATH": str(PACKAGE)})
    assert result.returncode == 0, result.stderr


def test_report_from_json_has_findings_with_attributes():
    report = Report.from_dict(REPORT)
    assert report.verdict == "critical" and not report.ok
    shm = report.find("shm.capacity")
    assert shm.subject == "/dev/shm" and shm.severity == "critical"
    assert shm.value("avail_bytes") == 64 << 20 and shm.evidence[0].text == "64.0 MiB"
    assert shm.remedy == ["docker run --shm-size=106m ..."] and shm.why
    assert [f.id for f in report.at_least("warn")] == ["shm.capacity", "tmp.space"]
    assert report.find("kernel.oom").reason == "dmesg restricted"
    assert report.to_dict()["findings"][0]["evidence"][0]["value"] == 64 << 20
    assert json.loads(report.to_json())["verdict"] == "critical"


def test_raise_for_critical_lists_findings_and_fixes():
    with pytest.raises(headroom.CriticalFinding) as raised:
        Report.from_dict(REPORT).raise_for_critical()
    message = str(raised.value)
    assert "1 critical finding" in message and "shm.capacity (/dev/shm)" in message
    assert "fix: docker run --shm-size=106m" in message and "tmp.space" not in message
    assert [f.id for f in raised.value.findings] == ["shm.capacity"]
    ok = Report.from_dict({"verdict": "warn", "environment": "host", "findings": []})
    assert ok.raise_for_critical() is ok


def test_severity_order():
    assert [severity_rank(s) for s in ("ok", "unknown", "warn", "critical")] == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        severity_rank("fatal")


@pytest.mark.parametrize("text, expected", [
    ("32MiB", 32 << 20), ("1.5G", 3 << 29), ("4096", 4096), ("64k", 64 << 10), (12, 12),
    (8.1 * (1 << 20), 8493466)])  # a float of bytes (8.1 * MiB) is rounded up
def test_parse_size(text, expected):
    assert headroom.parse_size(text) == expected


@pytest.mark.parametrize("bad, error", [("lots", ValueError), (-1, ValueError),
                                        (float("nan"), ValueError), (True, TypeError),
                                        ([1], TypeError)])
def test_parse_size_rejects(bad, error):
    with pytest.raises(error, match="batch_bytes"):
        headroom.parse_size(bad, "batch_bytes")


def test_check_runs_the_core_checks_on_this_host(scratch):
    # 100 GiB of batches cannot fit in any /dev/shm of a test host.
    report = headroom.check(scratch, workers=4, batch_bytes="100GiB", only=["shm.capacity"])
    shm = report.find("shm.capacity")
    assert report.verdict == "critical" and shm.severity == "critical"
    # (workers x prefetch + the 2 batches in the loop's hands) x batch + 4 x (W + 2) pages
    assert shm.value("dataloader_need_bytes") == (4 * 2 + 2) * (100 << 30) + 4 * 6 * 4096
    assert "SIGBUS" in shm.summary and shm.remedy
    fine = headroom.check(scratch, workers=1, batch_bytes=4096, only="shm.capacity")
    assert fine.find("shm.capacity").value("dataloader_need_bytes") == 4 * 4096 + 4 * 3 * 4096


@pytest.mark.parametrize("kwargs, error, match", [
    ({"workers": -1}, ValueError, "workers"),
    ({"keep": 0}, ValueError, "keep"),
    ({"batch_bytes": "huge"}, ValueError, "batch_bytes"),
    ({"only": ["nonsense"]}, ValueError, "nonsense"),
    # Errors name the Python argument, not the CLI flag (issue 20 #17).
    ({"warn_percent": 99, "critical_percent": 90}, ValueError, "^warn_percent"),
])
def test_check_rejects_bad_arguments(scratch, kwargs, error, match):
    with pytest.raises(error, match=match):
        headroom.check(scratch, **kwargs)


def test_check_rejects_missing_dir(scratch):
    with pytest.raises(FileNotFoundError, match="missing"):
        headroom.check(scratch / "missing")


def test_check_ids_are_the_core_table():
    assert "shm.capacity" in headroom.CHECKS and "disk.space" in headroom.CHECKS


def test_check_says_critical_when_the_next_checkpoints_do_not_fit(scratch):
    from conftest import run_isolated

    result = run_isolated(f"""
import json, headroom
with open("{scratch}/old.pt", "wb") as f:
    f.write(bytes(20 << 20))
report = headroom.check("{scratch}", ckpt_bytes="16MiB", keep=2, only="disk.space")
item = report.find("disk.space", "{scratch}")
print("RESULT " + json.dumps({{"verdict": report.verdict, "severity": item.severity,
                              "summary": item.summary, "fit": item.value("saves_that_fit")}}))
""", mounts=f"mount -t tmpfs -o size=32m tmpfs {scratch}")
    assert result["verdict"] == "critical" and result["severity"] == "critical", result
    assert result["fit"] == 0, result
