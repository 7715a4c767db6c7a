"""save_checkpoint under real signals: Ctrl-C during a real 384 MiB torch.save, and the temp
file a SIGKILLed save leaves behind (listed by `headroom prune`, removed by the next save).

Each scenario runs in a private mount namespace with a tmpfs on the checkpoint dir.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import PACKAGE, PYTHON, REPO, needs_torch, require_root

HEADROOM_BIN = os.environ.get("HEADROOM_BIN", str(REPO / "build/dev/src/cli/headroom"))

# The child: a small checkpoint, then a 384 MiB save that the parent interrupts.
SAVER = """
import json, os, sys, time
import torch
import headroom

d, catch = sys.argv[1], sys.argv[2] == "catch"
headroom.save_checkpoint({"w": torch.zeros(16)}, f"{d}/step_000001.pt")
big = {"w": torch.ones(96 << 20)}          # 384 MiB of float32
print("READY", flush=True)
start = time.monotonic()
saved_after = None
try:
    headroom.save_checkpoint(big, f"{d}/step_000002.pt", keep=1)
    saved_after = time.monotonic() - start
    # The parent's Ctrl-C may come after the save returned (a fast disk): too late to stop
    # it, so it is taken here instead of ending the process after the RESULT line.
    time.sleep(1)
except KeyboardInterrupt:
    if saved_after is None:
        print("RESULT " + json.dumps({"outcome": "interrupted",
                                      "seconds": time.monotonic() - start}))
        if not catch:
            raise
if saved_after is not None:
    print("RESULT " + json.dumps({"outcome": "saved", "seconds": saved_after}))
"""

# The parent, inside the namespace: starts the child, waits until the temp file exists
# (the write has begun), waits `delay`, sends SIGINT, and reports what is left.
PARENT = """
import json, os, signal, subprocess, sys, time
d, saver, delay, catch = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
child = subprocess.Popen([sys.executable, saver, d, catch], stdout=subprocess.PIPE, text=True)
assert child.stdout.readline().strip() == "READY"
deadline = time.monotonic() + 30
while not any("headroom-tmp" in name for name in os.listdir(d)) and time.monotonic() < deadline:
    time.sleep(0.001)
time.sleep(delay)
os.kill(child.pid, signal.SIGINT)
out, _ = child.communicate(timeout=120)
result = {"returncode": child.returncode, "stdout": out}
import torch
result["files"] = sorted(os.listdir(d))
result["loads"] = {}
for name in result["files"]:
    try:
        result["loads"][name] = int(torch.load(os.path.join(d, name))["w"].numel())
    except Exception as error:
        result["loads"][name] = f"{type(error).__name__}: {error}"[:120]
print("PARENT " + json.dumps(result))
"""


def run_in_namespace(scratch: Path, size: str, script: str, *args: str,
                     timeout: float = 180) -> dict:
    """Runs `script` with Debian's python3 after mounting a tmpfs on `scratch`."""
    require_root()
    (scratch.parent / f"{scratch.name}-saver.py").write_text(textwrap.dedent(SAVER))
    (scratch.parent / f"{scratch.name}-parent.py").write_text(textwrap.dedent(script))
    env = dict(os.environ, PYTHONPATH=str(PACKAGE), PYTHONUNBUFFERED="1")
    command = (f'mount -t tmpfs -o size={size} tmpfs "{scratch}" && exec {PYTHON} '
               f'"{scratch.parent / (scratch.name + "-parent.py")}" "{scratch}" '
               f'"{scratch.parent / (scratch.name + "-saver.py")}" ' + " ".join(args))
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", command],
                          capture_output=True, text=True, timeout=timeout, env=env)
    for line in done.stdout.splitlines():
        if line.startswith("PARENT "):
            return json.loads(line[len("PARENT "):])
    pytest.fail(f"no result (rc={done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}")


@needs_torch
@pytest.mark.parametrize("delay", [0.0, 0.03, 0.08, 0.15, 0.3])
def test_ctrl_c_during_a_real_save_raises_keyboard_interrupt_not_sigabrt(scratch, delay):
    result = run_in_namespace(scratch, "1g", PARENT, str(delay), "catch")
    assert result["returncode"] == 0, result  # never SIGABRT (-6) from torch's zip writer
    outcome = json.loads(result["stdout"].split("RESULT ", 1)[1])["outcome"]
    assert not any("headroom-tmp" in name for name in result["files"]), result
    if outcome == "interrupted" and "step_000002.pt" not in result["files"]:
        # Abandoned cleanly: the previous checkpoint is intact, nothing half-written.
        assert result["files"] == ["step_000001.pt"] and result["loads"] == {
            "step_000001.pt": 16}, result
    elif outcome == "saved":  # the save had finished when the signal came: complete, alone
        assert result["loads"] == {"step_000002.pt": 96 << 20}, result
    else:
        # Interrupted after the rename, before save_checkpoint returned (a Ctrl-C after
        # the commit is delivered as Python delivers it anywhere): the new checkpoint is
        # complete, and the old one, if retention had not yet removed it, too.
        assert result["loads"]["step_000002.pt"] == 96 << 20, result
        assert result["loads"].get("step_000001.pt", 16) == 16, result


@needs_torch
def test_an_uncaught_ctrl_c_ends_the_process_as_sigint_does(scratch):
    result = run_in_namespace(scratch, "1g", PARENT, "0.05", "raise")
    # As for a plain torch.save: killed by SIGINT (a shell shows 130), not SIGABRT (134).
    assert result["returncode"] == -signal.SIGINT, result
    assert result["files"] == ["step_000001.pt"], result


KILLED = """
import json, os, signal, subprocess, sys, time
d, saver = sys.argv[1], sys.argv[2]
child = subprocess.Popen([sys.executable, saver, d, "catch"], stdout=subprocess.PIPE, text=True)
assert child.stdout.readline().strip() == "READY"
while not any("headroom-tmp" in name for name in os.listdir(d)):
    time.sleep(0.001)
time.sleep(0.05)
child.send_signal(signal.SIGKILL)
child.wait()
left = sorted(os.listdir(d))
prune = subprocess.run([os.environ["HEADROOM_BIN"], "prune", d, "--keep-last", "1", "--json"],
                       capture_output=True, text=True)
# The next save in that directory, of another series, removes the dead save's temp.
import torch, headroom
headroom.save_checkpoint({"w": torch.zeros(4)}, f"{d}/other.pt")
print("PARENT " + json.dumps({"left": left, "prune": prune.stdout, "prune_rc": prune.returncode,
                              "after": sorted(os.listdir(d))}))
"""


@needs_torch
def test_temp_of_a_killed_save_is_listed_by_prune_and_removed_by_the_next_save(scratch):
    os.environ["HEADROOM_BIN"] = HEADROOM_BIN
    result = run_in_namespace(scratch, "1g", KILLED)
    temps = [name for name in result["left"] if "headroom-tmp" in name]
    assert len(temps) == 1 and temps[0].startswith(".step_000002.pt.headroom-tmp-"), result
    report = json.loads(result["prune"])
    listed = [item for item in report["checkpoints"] if item["type"] == "save_temp"]
    assert [item["name"] for item in listed] == temps, report
    assert listed[0]["writer"] == "gone" and listed[0]["decision"] == "delete", listed
    assert "died" in listed[0]["reasons"][0] and listed[0]["target"] == "step_000002.pt"
    # The good checkpoint is untouched by all of it.
    assert result["after"] == ["other.pt", "step_000001.pt"], result
