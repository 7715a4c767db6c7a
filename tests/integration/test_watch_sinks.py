"""The exec and signal alert sinks of `headroom watch` against real processes:
a shell command per event with the alert in HEADROOM_ALERT_* variables, a
command that hangs is killed at --webhook-timeout without delaying sampling,
and a training-job-like process that checkpoints and stops on SIGUSR1 when the
disk alert fires. Each watch runs in a private mount namespace over an 8 MiB
tmpfs; the test reaches the tmpfs through /proc/<watch pid>/root."""
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from conftest import HEADROOM, PYTHON
from watch_helpers import json_lines, running, seconds, start_in_namespace, wait_for

# Only the tmpfs is watched (no /tmp, no /dev/shm): the events are the tmpfs's.
CONFIG = """\
temp_dir = false
shm = false
shm_stale = false
"""

# 5000 KiB of the 8 MiB tmpfs: 61% used, over --warn-percent 50, under 90.
WATCH = r'''
mount -t tmpfs -o size=8m headroom-sinks "$MNT"
if [ "$FILL" = 1 ]; then head -c 5000k /dev/zero >"$MNT/big"; fi
exec "$HEADROOM" watch --json --config "$OUT/watch.toml" --interval 100ms --window 5s \
    --dir "$MNT" --warn-percent 50 --critical-percent 90 --clear-samples 2 "$@"
'''

# One JSON line per run: the HEADROOM_ALERT_* variables, and the blocked and
# ignored signals the command inherited (argv[2], read by a grep the shell execs).
RECORD = r'''
import json, os, sys
entry = {k: v for k, v in os.environ.items() if k.startswith("HEADROOM_ALERT_")}
entry["shell_status"] = sys.argv[2]
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.write(fd, (json.dumps(entry) + "\n").encode())
os.close(fd)
print("exec-output", entry["HEADROOM_ALERT_RULE"])
'''

# A command that hangs: records its pid, then sleeps far past the timeout.
SLOW = r'''
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.write(fd, f"{os.getpid()}\n".encode())
os.close(fd)
time.sleep(30)
'''

# A training job: on SIGUSR1 it writes its checkpoint marker and exits 0.
TRAINER = r'''
import json, signal, sys, time
marker = sys.argv[1]
def checkpoint_and_stop(signum, frame):
    with open(marker, "w") as out:
        json.dump({"signal": signum, "time": time.time()}, out)
    sys.exit(0)
signal.signal(signal.SIGUSR1, checkpoint_and_stop)
open(marker + ".ready", "w").close()
while True:
    time.sleep(0.05)
'''

# Counts every SIGUSR1 and keeps running until SIGTERM.
COUNTER = r'''
import os, signal, sys, time
log = sys.argv[1]
def count(signum, frame):
    with open(log, "a") as out:
        out.write(f"{time.time()}\n")
signal.signal(signal.SIGUSR1, count)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
open(log + ".ready", "w").close()
while True:
    time.sleep(0.05)
'''


def _lines(path: Path) -> list[dict]:
    return json_lines(path.read_text()) if path.exists() else []


def _usage_resolved(alerts: Path) -> bool:
    return any((e["kind"], e["rule"]) == ("resolved", "filesystem_usage") for e in _lines(alerts))


def _start(scratch: Path, args: list[str], fill: bool) -> tuple[subprocess.Popen, Path]:
    mnt = scratch / "mnt"
    mnt.mkdir()
    (scratch / "watch.toml").write_text(CONFIG)
    watch = start_in_namespace(WATCH, scratch, {"MNT": str(mnt), "FILL": "1" if fill else "0"},
                               args)
    return watch, mnt


def _stop(watch: subprocess.Popen) -> float:
    """SIGTERM to the watch; returns how long it took to exit."""
    started = time.time()
    if watch.poll() is None:
        watch.send_signal(signal.SIGTERM)
    watch.wait(timeout=10)
    return time.time() - started


def _inside(watch: subprocess.Popen, path: Path) -> Path:
    """`path` as the watch's mount namespace sees it."""
    return Path(f"/proc/{watch.pid}/root") / str(path).lstrip("/")


def _inherited_ignored() -> int:
    """SigIgn of a shell started from this test the way watch is started."""
    status = subprocess.run(["sh", "-c", "grep '^SigIgn' /proc/self/status"],
                            capture_output=True, text=True, check=True).stdout
    return int(status.split(":")[1], 16)


def test_exec_runs_once_per_event_with_the_alert_in_its_environment(scratch: Path):
    (scratch / "record.py").write_text(RECORD)
    command = ('"$PY" "$OUT/record.py" "$OUT/exec.jsonl" '
               '"$(exec grep -E \'^Sig(Blk|Ign)\' /proc/self/status)"')
    started = time.time()
    watch, mnt = _start(scratch, ["--repeat", "0", "--exec", command,
                                  "--jsonl", str(scratch / "alerts.jsonl")], fill=True)
    alerts, records = scratch / "alerts.jsonl", scratch / "exec.jsonl"
    try:
        wait_for(lambda: any(r["HEADROOM_ALERT_SUBJECT"] == str(mnt) for r in _lines(records)),
                 10, "the exec command for the tmpfs alert")
        _inside(watch, mnt / "big").unlink()  # back under the threshold: resolves
        wait_for(lambda: _usage_resolved(alerts), 5, "resolved")
        time.sleep(0.5)  # time for any (wrong) extra run
    finally:
        _stop(watch)
    err = (scratch / "watch.err").read_text()
    assert watch.returncode == 0, err

    events, runs = _lines(alerts), _lines(records)
    # Exactly one run per event of this tmpfs. (Host-wide events, such as an
    # OOM kill elsewhere on the machine, may come at any moment, and the run
    # for one that lands as the test stops may not have happened yet.)
    key = lambda kind, rule, subject, severity: (kind, rule, subject, severity)  # noqa: E731
    assert sorted(key(r["HEADROOM_ALERT_KIND"], r["HEADROOM_ALERT_RULE"],
                      r["HEADROOM_ALERT_SUBJECT"], r["HEADROOM_ALERT_SEVERITY"])
                  for r in runs if r["HEADROOM_ALERT_SUBJECT"] == str(mnt)) == \
        sorted(key(e["kind"], e["rule"], e["subject"], e["severity"])
               for e in events if e["subject"] == str(mnt)), (runs, events)

    mine = [r for r in runs if r["HEADROOM_ALERT_SUBJECT"] == str(mnt)]
    assert [(r["HEADROOM_ALERT_KIND"], r["HEADROOM_ALERT_RULE"], r["HEADROOM_ALERT_SEVERITY"])
            for r in mine] == [("firing", "filesystem_usage", "warn"),
                               ("resolved", "filesystem_usage", "warn")], mine
    firing = mine[0]
    assert abs(float(firing["HEADROOM_ALERT_VALUE"]) - 100 * 5000 / 8192) < 1, firing
    assert float(firing["HEADROOM_ALERT_THRESHOLD"]) == 50
    assert str(mnt) in firing["HEADROOM_ALERT_SUMMARY"] and "61" in firing["HEADROOM_ALERT_SUMMARY"]
    assert started <= seconds(firing["HEADROOM_ALERT_TIME"]) <= time.time()
    document = json.loads(firing["HEADROOM_ALERT_JSON"])
    event = [e for e in events if e["subject"] == str(mnt) and e["kind"] == "firing"][0]
    assert document == event  # the same JSON the jsonl and webhook sinks send
    assert document["labels"]["fstype"] == "tmpfs"

    # The command runs like one started from a shell: nothing blocked, nothing
    # ignored beyond what headroom itself inherited
    # (headroom blocks SIGHUP/SIGINT/SIGTERM in its own threads).
    for run in runs:
        status = dict(line.split(":\t") for line in run["shell_status"].splitlines())
        assert int(status["SigBlk"], 16) == 0, run["shell_status"]
        # Ignored: only what any command started from here inherits anyway
        # (a CI runner may start everything with some signal ignored).
        assert int(status["SigIgn"], 16) == _inherited_ignored(), run["shell_status"]
    # What the command prints goes to stderr: stdout stays one JSON document a line.
    out = (scratch / "watch.out").read_text().splitlines()
    assert out and all(line.startswith("{") for line in out), [l for l in out if l[:1] != "{"]
    assert "exec-output filesystem_usage" in err


def test_a_hanging_command_is_killed_at_the_timeout_and_sampling_keeps_its_interval(scratch):
    (scratch / "slow.py").write_text(SLOW)
    # Two commands, so the shell forks: the hanging python is its child.
    command = '"$PY" "$OUT/slow.py" "$OUT/slow.pids" && echo finished >>"$OUT/finished"'
    pids_file = scratch / "slow.pids"
    watch, mnt = _start(scratch, ["--repeat", "1s", "--webhook-timeout", "500ms",
                                  "--exec", command], fill=True)
    pids: list[int] = []
    try:
        wait_for(lambda: pids_file.exists() and len(pids_file.read_text().split()) >= 3 and
                 len(json_lines((scratch / "watch.out").read_text())) >= 25,
                 10, "three runs of the hanging command and 25 samples")
        pids = [int(p) for p in pids_file.read_text().split()]
        # Each run gets 500 ms: the earlier ones are gone while watch still runs.
        time.sleep(0.3)
        assert watch.poll() is None
        assert [p for p in pids[:-1] if running(p)] == [], "a timed-out command still runs"
        stopped_in = _stop(watch)
        pids = [int(p) for p in pids_file.read_text().split()]
        time.sleep(0.2)
        assert [p for p in pids if running(p)] == [], "a command outlived the watch"
    finally:
        if watch.poll() is None:
            _stop(watch)
        for pid in [int(p) for p in pids_file.read_text().split()] if pids_file.exists() else []:
            if running(pid) and Path(f"/proc/{pid}/cmdline").read_bytes().endswith(b"slow.pids\0"):
                os.kill(pid, signal.SIGKILL)  # started by this test
    err = (scratch / "watch.err").read_text()
    assert watch.returncode == 0, err
    assert stopped_in < 3, stopped_in  # shutdown cancels the run in flight
    assert not (scratch / "finished").exists()
    assert "alert delivery failed: exec" in err and "timed out" in err, err

    steps = json_lines((scratch / "watch.out").read_text())
    times = [seconds(s["time"]) for s in steps]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert len(steps) >= 25, len(steps)
    assert abs(statistics.mean(gaps) - 0.1) < 0.015, gaps
    assert max(gaps) < 0.3, gaps


def test_signal_stops_a_training_job_when_the_disk_alert_fires(scratch: Path):
    marker, counts = scratch / "checkpoint.json", scratch / "usr1.log"
    trainer = subprocess.Popen([PYTHON, "-c", TRAINER, str(marker)])
    counter = subprocess.Popen([PYTHON, "-c", COUNTER, str(counts)])
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer exists
    watch = None
    try:
        wait_for(lambda: Path(f"{marker}.ready").exists() and Path(f"{counts}.ready").exists(),
                 10, "the jobs to install their handlers")
        # --eta-horizon 1s: no memory_fill_eta from a busy host's noise, only
        # the disk alert signals.
        watch, mnt = _start(scratch, [
            "--repeat", "1s", "--eta-horizon", "1s", "--jsonl", str(scratch / "alerts.jsonl"),
            "--signal", f"USR1:{trainer.pid}", "--signal", f"SIGUSR1:{counter.pid}",
            "--signal", f"USR1:{gone.pid}"], fill=False)
        wait_for(lambda: len(json_lines((scratch / "watch.out").read_text())) >= 5, 10,
                 "samples")
        assert trainer.poll() is None, "signalled before any alert"
        (_inside(watch, mnt) / "big").write_bytes(b"\1" * (5000 << 10))
        assert trainer.wait(timeout=5) == 0
        time.sleep(2.2)  # firing, then two repeats: no further signal
        _inside(watch, mnt / "big").unlink()
        wait_for(lambda: _usage_resolved(scratch / "alerts.jsonl"), 5, "resolved")
        time.sleep(0.3)
        assert watch.poll() is None, "the missing pid was fatal"
        steps_before_stop = len(json_lines((scratch / "watch.out").read_text()))
    finally:
        if watch is not None:
            _stop(watch)
        for job in (trainer, counter):
            if job.poll() is None:
                job.terminate()
                job.wait(timeout=5)
    err = (scratch / "watch.err").read_text()
    assert watch.returncode == 0, err

    events = _lines(scratch / "alerts.jsonl")
    # The disk alerts of the tmpfs (the one write may also fire filesystem_fill_eta).
    mine = [e for e in events if e["subject"] == str(mnt)]
    usage = [e["kind"] for e in mine if e["rule"] == "filesystem_usage"]
    assert usage[:2] == ["firing", "repeat"] and usage[-1] == "resolved", mine
    checkpoint = json.loads(marker.read_text())
    assert checkpoint["signal"] == signal.SIGUSR1
    fired = seconds(mine[0]["time"])
    assert fired <= checkpoint["time"] < fired + 1, (fired, checkpoint)
    # One signal per condition (the filesystem), however many of its alerts fire
    # (usage, time-to-full, warn then critical); repeats and resolutions send none.
    firing = [e for e in events if e["kind"] == "firing"]
    conditions = {e["labels"].get("mountpoint") or e["subject"] for e in firing}
    assert len(counts.read_text().split()) == len(conditions) == 1, (counts.read_text(), events)
    # The missing pid: reported each time, sampling went on.
    assert f"signal#3 (USR1:{gone.pid})" in err and "No such process" in err, err
    assert steps_before_stop > 30


# In a private pid namespace, so the pid of the job that ended can be handed to
# the next process (ns_last_pid) before the disk alert fires.
REUSED = r'''
mount -t tmpfs -o size=8m headroom-sinks "$MNT"
sleep 60 &
job=$!
"$HEADROOM" watch --json --config "$OUT/watch.toml" --interval 100ms --window 5s --dir "$MNT" \
    --warn-percent 50 --critical-percent 90 --eta-horizon 1s --jsonl "$OUT/alerts.jsonl" \
    --signal "USR1:$job" >"$OUT/watch.out" 2>"$OUT/watch.err" &
watch=$!
sleep 0.5
kill $job
wait $job || true
echo $((job - 1)) >/proc/sys/kernel/ns_last_pid
"$PY" -c "$COUNTER" "$OUT/usr1.log" &
other=$!
echo "$job $other" >"$OUT/pids"
while [ ! -e "$OUT/usr1.log.ready" ]; do sleep 0.05; done
head -c 5000k /dev/zero >"$MNT/big"
sleep 1
kill -TERM $watch
wait $watch
kill -TERM $other
wait $other
'''


def test_signal_does_not_reach_a_new_process_that_got_the_ended_jobs_pid(scratch: Path):
    (scratch / "watch.toml").write_text(CONFIG)
    mnt = scratch / "mnt"
    mnt.mkdir()
    result = subprocess.run(
        ["unshare", "-m", "-p", "-f", "--mount-proc", "--propagation", "private",
         "bash", "-euo", "pipefail", "-c", REUSED],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON, OUT=str(scratch), MNT=str(mnt),
                 COUNTER=COUNTER))
    err = (scratch / "watch.err").read_text()
    assert result.returncode == 0, result.stderr + err
    job, other = (scratch / "pids").read_text().split()
    assert job == other, "the pid was not reused; the test proves nothing"
    events = _lines(scratch / "alerts.jsonl")
    assert any(e["kind"] == "firing" and e["subject"] == str(mnt) for e in events), events
    assert not (scratch / "usr1.log").exists(), "SIGUSR1 went to the process that got the pid"
    assert f"signal#1 (USR1:{job})" in err and "No such process" in err, err


@pytest.mark.parametrize("target, reason", [
    ("USR1:0", "'0' is not a process id"),  # kill(0) would signal watch's own process group
    ("USR1:99999999999999999999", "is not a process id"),  # does not fit a pid_t
    ("BOGUS:123", "unknown signal 'BOGUS'"),
    ("USR1", "SIGNAL:PID"),
])
def test_bad_signal_targets_are_usage_errors(headroom: str, target: str, reason: str):
    result = subprocess.run([headroom, "watch", "--once", "--no-shm-stale", "--signal", target],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert reason in result.stderr and "internal error" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr

