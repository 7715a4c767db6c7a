"""headroom.save_checkpoint: atomic saves, retention, and DiskFull on a nearly full tmpfs."""
from __future__ import annotations

import errno
import os

import pytest

from conftest import needs_torch, run_isolated

import headroom


def test_retention_pattern_lets_every_run_of_digits_vary():
    pattern = headroom.retention_pattern("/ckpt/epoch3-step000100.pt")
    assert pattern.fullmatch("epoch12-step000200.pt")
    assert not pattern.fullmatch("epoch12-step000200.pt.bak")
    assert not pattern.fullmatch("best.pt")
    assert headroom.retention_pattern("latest.pt").fullmatch("latest.pt")


def test_disk_full_is_an_oserror_with_enospc():
    error = headroom.DiskFull("/ckpt/a.pt", 10, 5, "no room")
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC
    assert error.filename == "/ckpt/a.pt" and error.needed_bytes == 10 and error.avail_bytes == 5


@needs_torch
def test_keeps_the_newest_and_leaves_no_temp_files(scratch):
    import torch

    for step in range(1, 6):
        written = headroom.save_checkpoint({"step": step, "w": torch.ones(1000) * step},
                                           scratch / f"step_{step:06d}.pt", keep=2)
        assert written == scratch / f"step_{step:06d}.pt"
        os.utime(written, ns=(step * 10**9, step * 10**9))  # distinct mtimes on any filesystem
    (scratch / "notes.txt").write_text("not a checkpoint")
    assert sorted(p.name for p in scratch.iterdir()) == [
        "notes.txt", "step_000004.pt", "step_000005.pt"]
    assert torch.load(scratch / "step_000005.pt")["step"] == 5


@needs_torch
def test_glob_pattern_overrides_the_series(scratch):
    import torch

    for name in ["a-1.pt", "b-2.pt", "c-3.pt"]:
        headroom.save_checkpoint(torch.zeros(4), scratch / name, keep=2, pattern="*.pt")
        os.utime(scratch / name, ns=(int(name[2]) * 10**9,) * 2)
    assert sorted(p.name for p in scratch.iterdir()) == ["b-2.pt", "c-3.pt"]


def test_rejects_bad_keep(scratch):
    with pytest.raises(ValueError, match="keep"):
        headroom.save_checkpoint({}, scratch / "a.pt", keep=0)


NEARLY_FULL = """
import json, os, subprocess, sys
import torch
import headroom

MIB = 1 << 20
d = "/ckpt"
old = {"w": torch.arange(2 * MIB, dtype=torch.float32)}          # 8 MiB
new = {"w": torch.arange(4 * MIB, dtype=torch.float32) + 1}      # 16 MiB

def fill(leave):
    stats = os.statvfs(d)
    free = stats.f_bavail * stats.f_frsize
    with open(f"{d}/filler", "ab") as f:
        f.write(b"\\0" * max(0, free - leave))

def loads(path):
    try:
        return bool(torch.equal(torch.load(path)["w"], old["w"]))
    except Exception as error:
        return f"{type(error).__name__}: {error}"[:200]

def temps():
    return [name for name in os.listdir(d) if "headroom-tmp" in name]

out = {}
# A good checkpoint, then the disk fills up to 3 MiB free.
headroom.save_checkpoint(old, f"{d}/latest.pt")
fill(3 * MIB)
try:
    headroom.save_checkpoint(new, f"{d}/latest.pt")
    out["precheck"] = "saved"
except headroom.DiskFull as error:
    out["precheck"] = str(error)
    out["precheck_errno"] = error.errno
out["precheck_intact"] = loads(f"{d}/latest.pt")
out["precheck_temps"] = temps()

# The estimate is too small (a fresh process, a non-tensor blob): the disk fills mid-write.
os.unlink(f"{d}/filler")
fill(10 * MIB)
headroom.checkpoint._last_size.clear()
try:
    headroom.save_checkpoint({"blob": bytes(16 * MIB)}, f"{d}/latest.pt")
    out["midwrite"] = "saved"
except headroom.DiskFull as error:
    out["midwrite"] = str(error)
    out["midwrite_cause"] = repr(error.__cause__)[:200]
out["midwrite_intact"] = loads(f"{d}/latest.pt")
out["midwrite_temps"] = temps()

# Plain torch.save in the same situation (3 MiB free plus the old file it truncates), in a
# child process: in torch 1.13 a failed write aborts the process (SIGABRT from the zip
# writer's destructor).
os.unlink(f"{d}/filler")
fill(3 * MIB)
plain = subprocess.run([sys.executable, "-c", f"import torch; torch.save(torch.arange({4 * MIB}, "
                        f"dtype=torch.float32) + 1, '{d}/latest.pt'); print('saved')"],
                       capture_output=True, text=True)
out["plain_rc"] = plain.returncode
out["plain"] = (plain.stdout + plain.stderr)[:300]
out["plain_loads"] = loads(f"{d}/latest.pt")
out["plain_size"] = os.path.getsize(f"{d}/latest.pt")
print("RESULT " + json.dumps(out))
"""


@needs_torch
def test_nearly_full_tmpfs_diskfull_keeps_the_previous_checkpoint(scratch):
    script = NEARLY_FULL.replace('d = "/ckpt"', f'd = "{scratch}"')
    result = run_isolated(script, mounts=f"mount -t tmpfs -o size=32m tmpfs {scratch}")
    # Pre-check: refused before writing anything.
    assert "not enough space" in result["precheck"], result
    assert result["precheck_errno"] == errno.ENOSPC
    assert result["precheck_intact"] is True and result["precheck_temps"] == []
    # Mid-write: the temp file is removed, the previous checkpoint still loads.
    assert "filled while writing" in result["midwrite"], result
    assert result["midwrite_intact"] is True and result["midwrite_temps"] == []
    # Plain torch.save: fails and leaves a truncated file that no longer loads.
    assert result["plain_rc"] != 0 and "saved" not in result["plain"], result
    assert result["plain_loads"] is not True, result
    assert result["plain_size"] < 16 << 20


def test_guarded_writer_keeps_the_first_write_error_from_torch():
    from headroom.checkpoint import _GuardedWriter

    class Full:
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

    writer = _GuardedWriter(Full())
    assert writer.write(b"abc") == 3 and writer.write(memoryview(b"de")) == 2
    with pytest.raises(OSError) as raised:
        writer.finish()
    assert raised.value.errno == errno.ENOSPC
