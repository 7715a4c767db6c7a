"""memory.cgroup and kernel.oom against a real memory cgroup and a real OOM kill."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import PYTHON, MemoryCgroup, check_json, evidence, finding, require_root

MiB = 1024 * 1024


def run_check(headroom: str, cgroup: MemoryCgroup, *flags: str) -> dict:
    argv = cgroup.wrap([headroom, "check", "--json", "--fail-on", "never", *flags])
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return check_json(result)


def test_limit_is_reported_and_a_job_that_does_not_fit_is_critical(headroom):
    with MemoryCgroup(64 * MiB) as cgroup:
        # 1 rank x (2 workers + 1) x 32 MiB = 96 MiB > 64 MiB.
        report = run_check(headroom, cgroup, "--only", "memory", "--workers", "2",
                           "--worker-rss", "32MiB")
        item = finding(report, "memory.cgroup")
        assert evidence(item, "limit_bytes") == 64 * MiB
        assert evidence(item, "job_need_bytes") == 96 * MiB
        assert evidence(item, "cgroup_version") == f"v{cgroup.version}"
        assert item["severity"] == "critical", item["summary"]
        assert any("num_workers=" in line for line in item["remedy"]), item["remedy"]

        # 1 x (0 + 1) x 8 MiB fits under the same limit.
        report = run_check(headroom, cgroup, "--only", "memory", "--worker-rss", "8MiB")
        assert finding(report, "memory.cgroup")["severity"] == "ok"


def test_oom_kill_shows_in_the_counter_and_the_kernel_log(headroom):
    require_root()
    with MemoryCgroup(48 * MiB) as cgroup:
        # Allocates and touches 256 MiB: the kernel OOM-kills it inside the cgroup.
        hog = subprocess.Popen(cgroup.wrap([PYTHON, "-c", "b = bytearray(256 * 1024 * 1024)"]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert hog.wait(timeout=60) == -9
        assert cgroup.oom_kills() >= 1

        report = run_check(headroom, cgroup, "--only", "memory.cgroup", "--only", "kernel.oom")
        item = finding(report, "memory.cgroup")
        assert evidence(item, "oom_kill_count") >= 1
        assert item["severity"] == "warn", item["summary"]

        oom = finding(report, "kernel.oom")
        assert oom["severity"] == "warn", oom
        # `exec` in the wrapper keeps the pid: the killed process is the one we started.
        assert f"python3 (pid {hog.pid})" in evidence(oom, "kills"), evidence(oom, "kills")


def test_kernel_log_unreadable_without_privilege_is_unknown(headroom, tmp_path):
    require_root()
    restrict = open("/proc/sys/kernel/dmesg_restrict").read().strip()
    if restrict != "1":
        pytest.skip("kernel.dmesg_restrict is 0 here: everyone may read the log")
    result = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", headroom, "check", "--json",
         "--only", "kernel.oom", "--fail-on", "never"],
        capture_output=True, text=True, timeout=60, cwd="/")
    report = check_json(result)
    item = finding(report, "kernel.oom")
    assert item["severity"] == "unknown"
    assert "dmesg_restrict=1 and not root (uid 65534)" in item["reason"], item["reason"]
