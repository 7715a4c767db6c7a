"""A hanging or refusing webhook does not change the sampling interval, and a
watched dir that is deleted or unmounted is reported, not fatal."""
from __future__ import annotations

import statistics
from datetime import datetime
from pathlib import Path

from conftest import in_namespace
from watch_helpers import HangingServer, filesystem, free_port, json_lines

# The tmpfs starts 97% full, so usage alerts fire at the first sample and every
# delivery to the broken webhook hangs (or is refused) and retries.
SCRIPT = r'''
mount -t tmpfs -o size=8m headroom-watch "$MNT"
head -c 7900k /dev/zero >"$MNT/big"
"$HEADROOM" watch --json --interval 200ms --window 5s --dir "$MNT" --no-shm-stale \
    --no-stderr --repeat 1s --webhook "$HANG" --webhook "$REFUSED" --slack "$HANG" \
    --webhook-timeout 3s --webhook-retries 5 --queue 4 >"$OUT/watch.jsonl" 2>"$OUT/watch.err" &
pid=$!
sleep 6
kill -TERM $pid
wait $pid
'''


def _times(steps: list[dict]) -> list[float]:
    return [datetime.fromisoformat(s["time"].replace("Z", "+00:00")).timestamp() for s in steps]


def test_hanging_and_refusing_webhooks_do_not_delay_sampling(scratch: Path):
    mnt = scratch / "mnt"
    mnt.mkdir()
    with HangingServer() as hanging:
        refused = f"http://127.0.0.1:{free_port()}/hook"
        result = in_namespace(SCRIPT, timeout=60, env={
            "MNT": str(mnt), "OUT": str(scratch), "HANG": hanging.url, "REFUSED": refused})
        assert result.returncode == 0, result.stderr + (scratch / "watch.err").read_text()
        assert hanging.held, "headroom never connected to the hanging webhook"
    steps = json_lines((scratch / "watch.jsonl").read_text())
    times = _times(steps)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert len(steps) >= 25, len(steps)
    assert abs(statistics.mean(gaps) - 0.2) < 0.02, gaps
    assert max(gaps) < 0.3, gaps
    assert any(s["alerts"] for s in steps), "no alert fired: the sinks were never exercised"


MISSING = r'''
mount -t tmpfs -o size=8m headroom-watch "$MNT"
mkdir "$MNT/ckpt"
"$HEADROOM" watch --json --interval 200ms --window 5s --dir "$MNT/ckpt" --dir "$MNT" \
    --no-shm-stale >"$OUT/watch.jsonl" 2>"$OUT/watch.err" &
pid=$!
sleep 1
rm -r "$MNT/ckpt"
sleep 1
umount "$MNT"
sleep 1
kill -TERM $pid
wait $pid
'''


def test_deleted_and_unmounted_dirs_are_reported_not_fatal(scratch: Path):
    mnt = scratch / "mnt"
    mnt.mkdir()
    result = in_namespace(MISSING, timeout=60, env={"MNT": str(mnt), "OUT": str(scratch)})
    err = (scratch / "watch.err").read_text()
    assert result.returncode == 0, result.stderr + err  # still running until SIGTERM
    steps = json_lines((scratch / "watch.jsonl").read_text())
    assert len(steps) >= 12
    ckpt = str(mnt / "ckpt")
    first, last = steps[0], steps[-1]
    assert filesystem(first, ckpt)["ok"] and filesystem(first, ckpt)["fstype"] == "tmpfs"
    gone = filesystem(last, ckpt)
    assert not gone["ok"] and "No such file or directory" in gone["error"]
    # After the umount the mount point is a plain dir on the parent filesystem.
    assert filesystem(last, str(mnt))["mountpoint"] != str(mnt)
    probe = [p for p in last["probes"] if p["probe"] == "filesystem"][0]
    assert not probe["success"] and ckpt in probe["error"]
    assert f"FIRING warn path_missing {ckpt}" in err
