"""A real OOM kill in a memory cgroup while `headroom watch` runs: a watcher
outside the job's cgroup (a service, a node agent) alerts on the host's kills;
one inside a limited job cgroup alerts on that cgroup's, by its path. Either
names the victim from the kernel log (issue 21, item 7): its command, pid and
cgroup, with whole counts and what to do."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from conftest import HEADROOM, PYTHON, MemoryCgroup

# Fills 256 MiB (bytearray zero-fills, so every page is touched) in a 64 MiB cgroup.
HOG = [PYTHON, "-c", "import time; time.sleep(1); b = bytearray(256 << 20); time.sleep(5)"]


def _watch(scratch: Path, args: list[str], wrap=lambda argv: argv) -> subprocess.Popen:
    argv = [HEADROOM, "watch", "--json", "--interval", "200ms", "--count", "25", "--dir",
            str(scratch), "--no-shm-stale", "--no-stderr", *args]
    return subprocess.Popen(wrap(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _oom_alerts(watch: subprocess.Popen) -> list[dict]:
    out, err = watch.communicate(timeout=30)
    assert watch.returncode in (0, 1), err
    steps = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(steps) == 25, err
    return [a for s in steps for a in s["alerts"] if a["rule"] == "oom_kill"]


def _hog(cgroup: MemoryCgroup) -> int:
    hog = subprocess.run(cgroup.wrap(HOG), capture_output=True, timeout=30)
    return hog.returncode


def test_a_node_watcher_alerts_on_a_kill_in_another_cgroup(scratch: Path):
    with MemoryCgroup(64 << 20) as cgroup:
        watch = _watch(scratch, ["--oom-scope", "system"])
        time.sleep(0.5)
        assert _hog(cgroup) == -9  # SIGKILL: the OOM killer
        alerts = _oom_alerts(watch)
    assert [a["kind"] for a in alerts] == ["firing"], alerts
    assert alerts[0]["subject"] == "system"
    summary = alerts[0]["summary"]
    assert summary.startswith("OOM kill: python3 (pid "), alerts
    assert "in memory cgroup " in summary and cgroup.path.name in summary, summary
    assert "; 1 new on this host, " in summary and "since boot" in summary, summary
    assert alerts[0]["labels"]["comm"] == "python3" and alerts[0]["labels"]["pid"].isdigit()
    assert "dmesg" in alerts[0]["action"], alerts


def test_a_watcher_in_the_jobs_limited_cgroup_alerts_on_that_cgroup(scratch: Path):
    # The default scope (auto): a cgroup with a memory limit is the job's.
    with MemoryCgroup(64 << 20) as cgroup:
        watch = _watch(scratch, [], wrap=cgroup.wrap)
        time.sleep(0.5)
        assert _hog(cgroup) == -9
        alerts = _oom_alerts(watch)
        name = cgroup.path.name
    assert [a["kind"] for a in alerts] == ["firing"], alerts
    assert alerts[0]["subject"].endswith("/" + name), alerts
    summary = alerts[0]["summary"]
    assert summary.startswith("OOM kill: python3 (pid "), summary
    assert f"; 1 new in {alerts[0]['subject']}, " in summary, summary
