"""SIGHUP reloads `headroom watch --config FILE` without a restart: a lowered
threshold fires at once; a file that does not parse, holds a bad value or is gone is
rejected with its path, line and reason, and the running config stays (same
interval, same alert, same sinks, /metrics says the reload failed). The watch
runs in a private mount namespace over an 8 MiB tmpfs 61% full."""
from __future__ import annotations

import signal
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

from conftest import HEADROOM
from watch_helpers import free_port, json_lines, seconds, start_in_namespace, wait_for

SCRIPT = r'''
mount -t tmpfs -o size=8m headroom-reload "$MNT"
head -c 5000k /dev/zero >"$MNT/big"
exec "$HEADROOM" watch --json --config "$CONFIG" --listen "127.0.0.1:$PORT"
'''

# Only the tmpfs is watched; --eta-horizon 1s keeps a busy host's memory
# noise from adding alerts.
CONFIG = """\
interval = "{interval}"
window = "5s"
dirs = ["{mnt}"]
temp_dir = false
shm = false
shm_stale = false

[alerts]
warn_percent = {warn}
critical_percent = {critical}
repeat_interval = 0
eta_horizon = "1s"
clear_samples = 2

[sinks]
jsonl = "{jsonl}"
"""


def _metrics(port: int) -> dict[str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if line and line[0] != "#")


def _line_of(text: str, needle: str) -> int:
    return [n for n, line in enumerate(text.splitlines(), 1) if needle in line][0]


def test_sighup_applies_a_new_threshold_and_keeps_the_running_config_on_bad_files(scratch: Path):
    mnt, config = scratch / "mnt", scratch / "watch.toml"
    mnt.mkdir()
    alerts, other_alerts = scratch / "alerts.jsonl", scratch / "other.jsonl"
    err_file = scratch / "watch.err"
    port = free_port()

    def write(interval="100ms", warn="90", critical="99", jsonl=alerts, extra="") -> str:
        text = CONFIG.format(interval=interval, mnt=mnt, warn=warn, critical=critical,
                             jsonl=jsonl) + extra
        config.write_text(text)
        return text

    def events(kind: str | None = None) -> list[dict]:
        found = json_lines(alerts.read_text()) if alerts.exists() else []
        return [e for e in found if e["subject"] == str(mnt) and kind in (None, e["kind"])]

    def steps() -> list[dict]:
        return json_lines((scratch / "watch.out").read_text())

    def failures() -> list[str]:
        return [line for line in err_file.read_text().splitlines() if "config reload failed" in line]

    write()
    watch = start_in_namespace(SCRIPT, scratch, {"MNT": str(mnt), "CONFIG": str(config),
                                                 "PORT": str(port)})
    try:
        wait_for(lambda: len(steps()) >= 8, 10, "samples")
        assert events() == []  # 61% < 90%
        assert _metrics(port)["headroom_config_last_reload_successful"] == "1"

        # Lower the threshold: the alert fires without a restart.
        write(warn="50")
        hup = time.time()
        watch.send_signal(signal.SIGHUP)
        wait_for(lambda: events("firing"), 3, "the alert after the reload")
        firing = events("firing")
        assert len(firing) == 1 and firing[0]["rule"] == "filesystem_usage"
        assert firing[0]["severity"] == "warn" and firing[0]["threshold"] == 50
        assert seconds(firing[0]["time"]) >= hup - 0.2
        assert "config reloaded" in err_file.read_text()
        firing_metric = 'headroom_alerts_firing{rule="filesystem_usage",severity="warn"}'
        wait_for(lambda: _metrics(port).get(firing_metric) == "1", 2, "the firing metric")

        # Each bad file: path, line and reason on stderr; nothing of it applied.
        # They all ask for a 1 s interval, a 90% threshold and another jsonl file.
        good = write(warn="50")
        bad_files = []
        text = good.replace("warn_percent = 50", "warn_percent = ")
        bad_files.append((text, _line_of(text, "warn_percent ="), ""))  # TOML syntax
        text = CONFIG.format(interval="1s", mnt=mnt, warn="90", critical='"high"',
                             jsonl=other_alerts)
        bad_files.append((text, _line_of(text, "critical_percent"),
                          "critical_percent: expected a number"))
        text = CONFIG.format(interval="1s", mnt=mnt, warn="150", critical="99", jsonl=other_alerts)
        bad_files.append((text, _line_of(text, "warn_percent"),
                          "warn_percent: must be between 0 and 100"))
        text = CONFIG.format(interval="1s", mnt=mnt, warn="90", critical="99",
                             jsonl=other_alerts) + 'signal = "USR1:99999999999"\n'
        bad_files.append((text, _line_of(text, "signal ="),
                          "signal: 'USR1:99999999999': '99999999999' is not a process id"))
        for number, (text, line, reason) in enumerate(bad_files, 1):
            config.write_text(text)
            sent = time.time()
            watch.send_signal(signal.SIGHUP)
            wait_for(lambda: len(failures()) == number, 3, f"rejection of bad file {number}")
            failure = failures()[-1]
            assert f"keeping the running config: {config}:{line}: {reason}" in failure, failure
            assert failure.split(f"{config}:{line}: ", 1)[1].strip(), failure  # a reason
            time.sleep(0.6)
            assert watch.poll() is None, err_file.read_text()
            after = [seconds(s["time"]) for s in steps() if seconds(s["time"]) > sent]
            gaps = [b - a for a, b in zip(after, after[1:])]
            assert len(after) >= 4 and statistics.mean(gaps) < 0.15, gaps  # still 100 ms
            metrics = _metrics(port)
            assert metrics["headroom_config_last_reload_successful"] == "0"
            assert metrics[firing_metric] == "1"  # still the 50% threshold
            assert f'headroom_alert_sink_sent_total{{sink="jsonl#1",target="{alerts}"}}' in metrics
            assert not any(str(other_alerts) in key for key in metrics)
        assert events("resolved") == [] and not other_alerts.exists()

        # No file at all (moved away by a deploy): said, and nothing changes.
        config.unlink()
        watch.send_signal(signal.SIGHUP)
        wait_for(lambda: len(failures()) == len(bad_files) + 1, 3, "rejection of a missing file")
        assert f"keeping the running config: {config}: No such file or directory" in failures()[-1]
        time.sleep(0.3)
        assert watch.poll() is None and events("resolved") == []

        # A good file again: applied, the alert resolves under the 90% threshold.
        write(warn="90")
        watch.send_signal(signal.SIGHUP)
        wait_for(lambda: events("resolved"), 3, "the resolution after the last reload")
        assert err_file.read_text().count("config reloaded") == 2
        assert _metrics(port)["headroom_config_last_reload_successful"] == "1"
    finally:
        if watch.poll() is None:
            watch.send_signal(signal.SIGTERM)
        watch.wait(timeout=10)
    assert watch.returncode == 0, err_file.read_text()
    assert len(events("firing")) == 1  # one firing, one resolved: no restart in between


def test_a_cross_field_error_names_the_later_line_at_start_and_on_sighup(scratch: Path):
    """critical_percent below warn_percent: the error names critical_percent's line
    (the later one) and warn_percent's; on SIGHUP the watch logs it and keeps sampling."""
    mnt, config, bad = scratch / "mnt", scratch / "watch.toml", scratch / "bad.toml"
    mnt.mkdir()
    good = CONFIG.format(interval="100ms", mnt=mnt, warn="90", critical="99",
                         jsonl=scratch / "alerts.jsonl")
    bad_text = good.replace("critical_percent = 99", "critical_percent = 80")
    warn, critical = _line_of(bad_text, "warn_percent"), _line_of(bad_text, "critical_percent")
    assert warn < critical
    bad.write_text(bad_text)
    config.write_text(good)

    def watch_once(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([HEADROOM, "watch", *args, "--once"], cwd=scratch,
                              capture_output=True, text=True, timeout=30)

    result = watch_once("--config", "bad.toml")
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        f"headroom: bad.toml:{critical}: critical_percent 80 is below warn_percent 90 (line {warn})"]
    assert result.stdout == ""
    # The same value from a flag: the flag is what to change.
    result = watch_once("--config", "watch.toml", "--critical-percent", "80")
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        f"headroom: --critical-percent 80 is below warn_percent 90 (watch.toml:{warn})"]
    # A flag can mend the file: flags override it before anything is checked.
    result = watch_once("--config", "bad.toml", "--warn-percent", "70", "--json")
    assert result.returncode in (0, 1) and "critical_percent" not in result.stderr, result

    err_file = scratch / "watch.err"
    watch = start_in_namespace(SCRIPT, scratch, {"MNT": str(mnt), "CONFIG": str(config),
                                                 "PORT": str(free_port())})
    try:
        wait_for(lambda: len(json_lines((scratch / "watch.out").read_text())) >= 3, 10, "samples")
        config.write_text(bad_text)
        watch.send_signal(signal.SIGHUP)
        wait_for(lambda: "config reload failed" in err_file.read_text(), 3, "the rejection")
        sampled = len(json_lines((scratch / "watch.out").read_text()))
        failures = [line for line in err_file.read_text().splitlines() if "reload failed" in line]
        assert failures == [
            f"headroom watch: config reload failed, keeping the running config: {config}:{critical}:"
            f" critical_percent 80 is below warn_percent 90 (line {warn})"], failures
        wait_for(lambda: len(json_lines((scratch / "watch.out").read_text())) >= sampled + 3, 3,
                 "samples after the rejected reload")
        assert watch.poll() is None, err_file.read_text()
    finally:
        if watch.poll() is None:
            watch.send_signal(signal.SIGTERM)
        watch.wait(timeout=10)
    assert watch.returncode == 0, err_file.read_text()
