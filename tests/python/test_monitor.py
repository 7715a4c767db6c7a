"""headroom.Monitor: the watch rules in a background thread."""
from __future__ import annotations

import time

import pytest

from conftest import run_isolated

import headroom


def _wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_samples_in_the_background_and_stops(scratch):
    with headroom.Monitor(scratch, interval=0.05, temp_dir=False, shm=False) as monitor:
        assert _wait(lambda: monitor.status().samples >= 3)
        status = monitor.status()
        assert status.running and status.error is None
        paths = [fs["path"] for fs in status.last_sample["filesystems"]]
        assert str(scratch) in paths
    assert not monitor.status().running


def test_rejects_bad_arguments(scratch):
    with pytest.raises(ValueError, match="interval"):
        headroom.Monitor(scratch, interval=0)
    with pytest.raises(ValueError):
        headroom.Monitor(scratch, warn_percent=99, critical_percent=90)
    with pytest.raises(FileNotFoundError):
        headroom.Monitor(scratch / "missing")


FILL = """
import json, os, time
import headroom

d = "WATCHED"
all_alerts = []
alerts = []  # those about the watched dir; memory alerts may come from the busy test host
def on_alert(alert):
    all_alerts.append(alert)
    if alert.subject == d:
        alerts.append(alert)
monitor = headroom.Monitor(d, interval=0.05, on_alert=on_alert, temp_dir=False, shm=False)
with monitor:
    time.sleep(0.3)
    before = {"alerts": len(alerts), "used": monitor.status().last_sample["filesystems"][0]["used_percent"]}
    chunk = b"x" * (1 << 20)
    with open(os.path.join(d, "data.bin"), "wb") as f:
        for _ in range(31):   # 31 of 32 MiB: 97% used
            f.write(chunk)
    start = time.monotonic()
    while (not any(a.rule == "filesystem_usage" and a.severity == "critical" for a in alerts)
           and time.monotonic() - start < 10):
        time.sleep(0.01)
    latency = time.monotonic() - start
    status = monitor.status()
    after = {"ok": monitor.ok(), "status_ok": status.ok,
             "firing": [a.rule for a in status.alerts if a.subject == d]}
print("RESULT " + json.dumps({"before": before, "after": after, "latency": latency,
                              "alerts": [a.__dict__ for a in alerts],
                              "other": [str(a) for a in all_alerts if a.subject != d]}))
"""


def test_calls_back_when_the_watched_tmpfs_fills(scratch):
    result = run_isolated(FILL.replace("WATCHED", str(scratch)),
                          mounts=f"mount -t tmpfs -o size=32m tmpfs {scratch}")
    assert result["before"] == {"alerts": 0, "used": 0.0}, result
    usage = [a for a in result["alerts"]
             if a["rule"] == "filesystem_usage" and a["severity"] == "critical"]
    assert usage, result
    assert usage[0]["kind"] == "firing" and usage[0]["value"] >= 95
    # The fill-rate prediction may fire first ("full in Ns"): also about the watched dir.
    assert {a["rule"] for a in result["alerts"]} <= {"filesystem_usage", "filesystem_fill_eta",
                                                     "checkpoint_space"}, result
    assert result["after"]["ok"] is False and result["after"]["status_ok"] is False
    assert "filesystem_usage" in result["after"]["firing"]
    assert result["latency"] < 2.0


def test_a_failing_callback_does_not_stop_the_monitor(scratch, caplog):
    # Thresholds of 3% / 4%: the build tree's filesystem is above them at once.
    import shutil

    usage = shutil.disk_usage(scratch)
    if usage.used / usage.total < 0.05:
        pytest.skip("the build tree's filesystem is less than 5% used")
    calls = []

    def broken(alert):
        calls.append(alert)
        raise RuntimeError("callback bug")

    with headroom.Monitor(scratch, interval=0.05, on_alert=broken, warn_percent=3,
                          critical_percent=4, temp_dir=False, shm=False) as monitor:
        assert _wait(lambda: calls and monitor.status().samples >= 3)
        assert not monitor.ok() and monitor.status().running
        assert any(a.rule == "filesystem_usage" and a.severity == "critical"
                   for a in monitor.status().alerts)
    assert "callback bug" in caplog.text
