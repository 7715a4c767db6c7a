"""What a person sees running `headroom watch` in a terminal: a view redrawn
in place every sample (like watch(1) and top) with the alerts firing now, in
colour unless NO_COLOR; and what a service sees: nothing per sample on a
stdout that is not a terminal. Runs under a real pseudo-terminal, against a
tmpfs filled past the critical threshold in a private mount namespace."""
from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

from conftest import HEADROOM, require_root

CLEAR = "\x1b[H\x1b[2J"

SCRIPT = r'''
mount -t tmpfs -o size=4m headroom-view "$MNT"
head -c 3950k /dev/zero > "$MNT/fill"
exec "$HEADROOM" watch --interval 200ms --dir "$MNT" --no-shm-stale
'''


def run_watch(scratch: Path, seconds: float, terminal: bool, env: dict | None = None):
    """Runs the watch for `seconds`, stops it with SIGINT; returns (stdout, stderr, status)."""
    require_root()
    mnt = scratch / "mnt"
    mnt.mkdir(exist_ok=True)
    full_env = dict(os.environ, HEADROOM=HEADROOM, MNT=str(mnt), TERM="xterm")
    full_env.pop("NO_COLOR", None)
    full_env.update(env or {})
    argv = ["unshare", "-m", "--propagation", "private", "bash", "-euc", SCRIPT]
    if not terminal:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
        time.sleep(seconds)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        return out.decode(), err.decode(), proc.returncode
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdout=follower, stderr=subprocess.PIPE, env=full_env)
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.05)
        if ready:
            chunks.append(os.read(leader, 65536))
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=10)[1]
    while select.select([leader], [], [], 0.1)[0]:
        try:
            chunks.append(os.read(leader, 65536))
        except OSError:
            break
    os.close(leader)
    return b"".join(chunks).decode(errors="replace"), err.decode(), proc.returncode


def test_a_terminal_gets_a_live_view_with_the_alerts_firing(scratch: Path):
    out, err, status = run_watch(scratch, 1.5, terminal=True)
    assert status == 0, err
    frames = [frame for frame in out.split(CLEAR) if frame.strip()]
    assert len(frames) >= 4, out  # one per 200 ms sample, redrawn in place
    last = frames[-1].replace("\r\n", "\n")
    assert last.startswith("headroom watch: every 200ms, predictions over the last 10m; "
                           "sample at "), last
    mnt = str(scratch / "mnt")
    assert f"{mnt:<24} dir " in last and "% used) tmpfs" in last, last
    assert "1 alert(s) firing:" in last, last  # warn is also firing: the worse one is shown
    # Critical in bold red, then the rule and its summary.
    assert "\x1b[1;31mcritical\x1b[0m filesystem_usage" in last, last
    assert f"{mnt} is 9" in last and "% full" in last and "(since " in last, last


def test_no_color_keeps_the_view_plain(scratch: Path):
    out, err, status = run_watch(scratch, 0.8, terminal=True, env={"NO_COLOR": "1"})
    assert status == 0, err
    last = [frame for frame in out.split(CLEAR) if frame.strip()][-1]
    assert "critical filesystem_usage" in last, last
    assert "\x1b[1;31m" not in out


def test_a_service_prints_nothing_per_sample_only_alert_lines(scratch: Path):
    out, err, status = run_watch(scratch, 1.0, terminal=False)
    assert status == 0, err
    assert out == ""
    firing = [line for line in err.splitlines() if line.startswith("headroom: FIRING")]
    # One line per alert, once: warn and critical are two alerts (as in Prometheus).
    assert [line.split()[2:4] for line in firing] == [
        ["warn", "filesystem_usage"], ["critical", "filesystem_usage"]], err
