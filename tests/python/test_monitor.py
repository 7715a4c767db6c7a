"""headroom.Monitor: the watch rules in a background thread."""
from __future__ import annotations

import json
import os
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


# The documented pattern (docs/python.md): a Monitor with the checkpoint rule and
# save_checkpoint with the same keep, on a 30 MiB disk where three 8.1 MiB checkpoints
# is the steady state and only deleting the oldest before writing makes room for the next.
STEADY = """
import json, os
import torch
import headroom

d = "CKPT"
state = {"w": torch.zeros(2 * 1024 * 1024 + 25 * 1024)}        # 8.1 MiB
monitor = headroom.Monitor(d, ckpt_bytes=8.1 * 2**20, keep=3, temp_dir=False, shm=False)
steps, stopped, severities = 0, None, set()
for step in range(1, 11):
    headroom.save_checkpoint(state, f"{d}/step_{step:06d}.pt", keep=3)
    for alert in monitor.sample():
        severities.add((alert.rule, alert.severity, alert.stop))
    if not monitor.ok:
        stopped = step
        break
    steps = step
print("RESULT " + json.dumps({"steps": steps, "stopped": stopped,
                              "alerts": sorted(map(list, severities)),
                              "files": sorted(os.listdir(d)),
                              "summary": [a.summary for a in monitor.status().alerts]}))
"""


def test_the_steady_state_of_retention_does_not_stop_the_loop(scratch):
    result = run_isolated(STEADY.replace("CKPT", str(scratch)),
                          mounts=f"mount -t tmpfs -o size=30m tmpfs {scratch}")
    assert result["stopped"] is None and result["steps"] == 10, result
    assert result["files"] == ["step_000008.pt", "step_000009.pt", "step_000010.pt"], result
    # It says the steady state fits only by deleting first (a torch.save + delete would not).
    assert ["checkpoint_space", "warn", False] in result["alerts"], result
    assert not any(alert[1] == "critical" for alert in result["alerts"]), result


SHM_FULL = """
import json, os
import headroom

with open("/dev/shm/filler", "wb") as f:
    f.write(b"x" * (61 << 20))                               # 95% of 64 MiB
monitor = headroom.Monitor("CKPT", temp_dir=False, shm=True)
events = monitor.sample()
print("RESULT " + json.dumps({"ok": bool(monitor.ok),
                              "alerts": [[a.rule, a.subject, a.severity, a.stop] for a in events]}))
"""


def test_a_full_dev_shm_warns_but_does_not_stop_the_loop(scratch):
    result = run_isolated(SHM_FULL.replace("CKPT", str(scratch)),
                          mounts="mount -t tmpfs -o size=64m tmpfs /dev/shm")
    shm = [alert for alert in result["alerts"] if alert[1] == "/dev/shm"]
    assert ["filesystem_usage", "/dev/shm", "critical", False] in shm, result
    assert result["ok"] is True, result


WINDOW = """
import json, os, sys, time
import headroom

d = "CKPT"
window = float(sys.argv[1]) if len(sys.argv) > 1 else WINDOW_SECONDS
monitor = headroom.Monitor(d, interval=0.1, window=window, eta_horizon=60, temp_dir=False,
                           shm=False)
first = {}
with open(f"{d}/growing", "wb") as f:
    for chunk in range(48):                               # 10 MiB/s into a 64 MiB tmpfs
        f.write(b"x" * (1 << 20))
        f.flush()
        for alert in monitor.sample():
            first.setdefault(alert.rule, chunk)
        time.sleep(0.1)
print("RESULT " + json.dumps({"first": first}))
"""


@pytest.mark.parametrize("window", [4.0, 600.0])
def test_window_sets_how_soon_a_fill_trend_alerts(scratch, window):
    script = WINDOW.replace("CKPT", str(scratch)).replace("WINDOW_SECONDS", str(window))
    result = run_isolated(script, mounts=f"mount -t tmpfs -o size=64m tmpfs {scratch}")
    if window < 10:
        # A quarter of a 4 s window is enough trend: it alerts well before the disk is full.
        assert result["first"].get("filesystem_fill_eta", 99) <= 24, result
    else:
        assert "filesystem_fill_eta" not in result["first"], result  # 150 s of trend needed
    with pytest.raises(ValueError, match="window"):
        headroom.Monitor(scratch, window=0)


# A job whose memory climbs to its cgroup's limit in about two seconds: the Monitor
# (sampling every 0.2 s) must warn before the OOM killer ends it.
CLIMB = """
import json, os, sys, time
import headroom

def on_alert(alert):
    print("ALERT " + json.dumps([time.monotonic(), alert.rule, alert.severity, alert.summary]),
          flush=True)

monitor = headroom.Monitor(".", interval=0.2, on_alert=on_alert, temp_dir=False, shm=False)
monitor.start()
time.sleep(0.5)
print("CLIMB " + json.dumps(time.monotonic()), flush=True)
hoard = []
while True:
    hoard.append(bytearray(16 << 20))       # touched: 16 MiB of anonymous memory
    for page in range(0, 16 << 20, 4096):
        hoard[-1][page] = 1
    time.sleep(0.1)
"""


def test_warns_before_a_memory_cgroup_oom_kill(scratch):
    import importlib.util
    import subprocess

    from conftest import PACKAGE, PYTHON, REPO, require_root

    require_root()
    spec = importlib.util.spec_from_file_location(
        "integration_conftest", REPO / "tests/integration/conftest.py")
    integration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(integration)
    script = scratch / "climb.py"
    script.write_text(CLIMB)
    env = dict(os.environ, PYTHONPATH=str(PACKAGE), PYTHONUNBUFFERED="1")
    with integration.MemoryCgroup(384 << 20) as cgroup:
        done = subprocess.run(cgroup.wrap([PYTHON, str(script)]), capture_output=True,
                              text=True, timeout=120, env=env, cwd=scratch)
        kills = cgroup.oom_kills()
    assert done.returncode == -9 and kills >= 1, (done.returncode, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    climb = [json.loads(line[6:]) for line in lines if line.startswith("CLIMB ")]
    alerts = [json.loads(line[6:]) for line in lines if line.startswith("ALERT ")]
    warned = [alert for alert in alerts if alert[1] == "memory_cgroup" and alert[0] > climb[0]]
    assert warned, done.stdout
    print("warned", round(warned[0][0] - climb[0], 2), "s into the climb:", warned[0][3])
