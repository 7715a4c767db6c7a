"""headroom watch on a real tmpfs filled at a steady rate, in a private mount
namespace: the time-to-full estimate against the truth, and exactly one
firing and one resolved webhook alert; bursty writes do not flap; a fill that
starts after a window of idleness is predicted as soon as it is a trend."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from conftest import in_namespace
from watch_helpers import WebhookReceiver, filesystem, json_lines

# 32 MiB tmpfs; the writer appends CHUNK bytes every PERIOD seconds until ENOSPC,
# records when the disk was full, waits, frees the space, and waits again.
WRITER = r'''
import os, sys, time, json
path, chunk, period, hold, after, idle = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
time.sleep(idle)
start = time.time()
fd = os.open(path + "/fill", os.O_WRONLY | os.O_CREAT, 0o644)
data = b"\1" * chunk
n = 0
full_at = None
while full_at is None:
    n += 1
    time.sleep(max(0.0, start + n * period - time.time()))
    try:
        written = os.write(fd, data)
    except OSError:
        written = 0
    # Full is the moment the last byte went in, not the failed write after it.
    if written < chunk or os.statvfs(path).f_bavail == 0:
        full_at = time.time()
os.close(fd)
time.sleep(hold)
os.unlink(path + "/fill")
freed_at = time.time()
time.sleep(after)
print(json.dumps({"start": start, "full_at": full_at, "freed_at": freed_at}))
'''

SCRIPT = r'''
mount -t tmpfs -o size=32m headroom-watch "$MNT"
"$HEADROOM" watch --json --interval 200ms --window "$WINDOW" --dir "$MNT" --no-shm-stale \
    --no-stderr --repeat 0 --webhook "$HOOK" >"$OUT/watch.jsonl" 2>"$OUT/watch.err" &
watch_pid=$!
sleep 0.5
"$PY" -c "$WRITER" "$MNT" "$CHUNK" "$PERIOD" 1.5 5 "$IDLE" >"$OUT/writer.json"
kill -TERM $watch_pid
wait $watch_pid
'''


def _run(scratch: Path, chunk: int, period: float, window: str = "5s", idle: float = 0):
    mnt = scratch / "mnt"
    mnt.mkdir()
    with WebhookReceiver() as hook:
        result = in_namespace(SCRIPT, timeout=120, env={
            "MNT": str(mnt), "OUT": str(scratch), "HOOK": hook.url, "WRITER": WRITER,
            "CHUNK": str(chunk), "PERIOD": str(period), "WINDOW": window, "IDLE": str(idle)})
        assert result.returncode == 0, result.stderr + (scratch / "watch.err").read_text()
        writer = json.loads((scratch / "writer.json").read_text())
        steps = json_lines((scratch / "watch.jsonl").read_text())
        return writer, steps, hook.of("filesystem_fill_eta", str(mnt)), str(mnt)


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_steady_fill_eta_within_10_percent_and_one_alert_each_way(scratch):
    # 256 KiB every 0.125 s = 2 MiB/s: the 32 MiB tmpfs is full after ~16 s.
    writer, steps, events, mnt = _run(scratch, 256 << 10, 0.125)
    assert len(steps) > 50
    window_full = writer["start"] + 5.5
    checked = 0
    for step in steps:
        t = _seconds(step["time"])
        truth = writer["full_at"] - t
        if t < window_full or truth < 3:
            continue
        prediction = filesystem(step, mnt)["prediction"]
        assert prediction["eta_seconds"] is not None, step
        assert abs(prediction["eta_seconds"] - truth) <= 0.1 * truth, (t, prediction, truth)
        checked += 1
    assert checked >= 20, checked

    firing = [e for e in events if e["kind"] == "firing"]
    resolved = [e for e in events if e["kind"] == "resolved"]
    assert len(firing) == 1, events
    assert len(resolved) == 1, events
    assert _seconds(firing[0]["time"]) < writer["full_at"]
    assert _seconds(resolved[0]["time"]) > writer["freed_at"]
    assert firing[0]["severity"] == "critical"
    assert firing[0]["labels"]["fstype"] == "tmpfs"


def test_bursty_writes_do_not_flap(scratch):
    # 4 MiB every 2 s (the same 2 MiB/s on average, in checkpoint-like bursts).
    writer, steps, events, mnt = _run(scratch, 4 << 20, 2.0)
    firing = [e for e in events if e["kind"] == "firing"]
    resolved = [e for e in events if e["kind"] == "resolved"]
    assert len(firing) == 1, events
    assert len(resolved) == 1, events
    assert _seconds(firing[0]["time"]) < writer["full_at"]
    assert _seconds(resolved[0]["time"]) > writer["freed_at"]


def test_fill_after_idle_window_is_predicted_once_it_is_a_trend(scratch):
    # A 12 s window (eta_min_span 3 s) idle for 12.5 s, then 2 MiB/s: over the
    # whole window most pairs of samples are flat, so the window alone shows no
    # trend, or a far too slow one, until the disk is nearly full. The newest
    # 3 s show it: from 3 s into the fill every estimate is within 15%.
    writer, steps, events, mnt = _run(scratch, 256 << 10, 0.125, window="12s", idle=12.5)
    checked = recent = 0
    for step in steps:
        t = _seconds(step["time"])
        truth = writer["full_at"] - t
        if t < writer["start"] + 3 or truth < 3:
            continue
        prediction = filesystem(step, mnt)["prediction"]
        assert prediction["eta_seconds"] is not None, (t - writer["start"], prediction)
        assert abs(prediction["eta_seconds"] - truth) <= 0.15 * truth, (
            t - writer["start"], prediction, truth)
        recent += prediction["recent"]
        checked += 1
    assert checked >= 20, checked
    assert recent >= 10, recent
    firing = [e for e in events if e["kind"] == "firing"]
    assert len(firing) == 1, events
    assert _seconds(firing[0]["time"]) < writer["start"] + 4
