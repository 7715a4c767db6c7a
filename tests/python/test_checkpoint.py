"""headroom.save_checkpoint: atomic saves, retention, and DiskFull on a nearly full tmpfs."""
from __future__ import annotations

import errno
import os

import pytest

from conftest import needs_torch, run_isolated

import headroom


def test_series_share_everything_but_the_step():
    template = headroom.series_template
    assert template("/ckpt/step_000100.pt") == "step_{N}.pt"
    assert template("epoch=3-step=400.ckpt") == "epoch={E}-step={N}.ckpt"
    assert template("epoch=3-val_loss=0.12.ckpt") == "epoch={E}-val_loss={M}.ckpt"
    # Two folds are two series; a model's name is not a step.
    assert template("fold0_epoch_009.pt") != template("fold1_epoch_002.pt")
    assert template("resnet50.pt") == "resnet50.pt" != template("resnet18.pt")
    assert template("resnet-50.pt") == "resnet-50.pt"
    assert template("checkpoint-500", directory=True) == "checkpoint-{N}/"
    assert template("tmp-checkpoint-700", directory=True) == "checkpoint-{N}/"
    assert template("state_100.pth.tar") == "state_{N}.pth.tar"


def test_disk_full_is_an_oserror_with_enospc():
    error = headroom.DiskFullError("/ckpt/a.pt", 10, 5, "no room")
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC
    assert error.filename == "/ckpt/a.pt" and error.needed_bytes == 10 and error.avail_bytes == 5
    assert headroom.DiskFull is headroom.DiskFullError and error.removed == ()


@needs_torch
def test_retention_never_touches_other_series_or_other_models(scratch):
    import torch

    # Another fold's run and another model in the same directory.
    for epoch in (9, 10):
        torch.save(torch.zeros(8), scratch / f"fold0_epoch_{epoch:03d}.pt")
    torch.save(torch.zeros(8), scratch / "resnet18.pt")
    for epoch in (1, 2, 3):
        headroom.save_checkpoint(torch.ones(8) * epoch, scratch / f"fold1_epoch_{epoch:03d}.pt",
                                 keep=2)
    headroom.save_checkpoint(torch.ones(8), scratch / "resnet50.pt", keep=1)
    assert sorted(p.name for p in scratch.iterdir()) == [
        "fold0_epoch_009.pt", "fold0_epoch_010.pt", "fold1_epoch_002.pt", "fold1_epoch_003.pt",
        "resnet18.pt", "resnet50.pt"]


@needs_torch
def test_a_cut_short_checkpoint_pushes_no_complete_one_out(scratch):
    import torch

    for step in (100, 200):
        headroom.save_checkpoint(torch.ones(4096) * step, scratch / f"step_{step:06d}.pt")
    # step 300 died half-way (a plain torch.save on a full disk): the zip has no end.
    torch.save(torch.ones(4096), scratch / "step_000300.pt")
    data = (scratch / "step_000300.pt").read_bytes()
    (scratch / "step_000300.pt").write_bytes(data[: len(data) // 2])
    headroom.save_checkpoint(torch.ones(4096) * 400, scratch / "step_000400.pt", keep=2)
    # The 2 newest complete ones stay; the truncated one counted for nothing.
    assert sorted(p.name for p in scratch.iterdir()) == ["step_000200.pt", "step_000400.pt"]
    assert torch.load(scratch / "step_000200.pt")[0] == 200


@needs_torch
def test_a_restarted_run_never_deletes_what_it_just_saved(scratch):
    import torch

    headroom.save_checkpoint(torch.zeros(8), scratch / "step_000900.pt")  # an earlier run
    written = headroom.save_checkpoint(torch.ones(8), scratch / "step_000100.pt", keep=1)
    assert written.exists()


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
    with pytest.raises(ValueError, match="pattern"):
        headroom.save_checkpoint({}, scratch / "a.pt", pattern="")


SHORT_DISK = """
import json, os
import torch
import headroom

MIB = 1 << 20
d = "/ckpt"
def fill(leave):
    stats = os.statvfs(d)
    free = stats.f_bavail * stats.f_frsize
    with open(f"{d}/filler", "ab") as f:
        f.write(b"\\0" * max(0, free - leave))
def names():
    return sorted(name for name in os.listdir(d) if name != "filler")

out = {}
eight = {"w": torch.zeros(2 * MIB)}         # 8 MiB
for step in (1, 2):
    headroom.save_checkpoint(eight, f"{d}/step_{step:06d}.pt", keep=2)
fill(5 * MIB)
# Does not fit in 5 MiB, fits once step 1 (which retention removes after it anyway) is gone.
headroom.save_checkpoint(eight, f"{d}/step_000003.pt", keep=2)
out["after_fit"] = names()
# 16 MiB does not fit even then: nothing may be removed.
try:
    headroom.save_checkpoint({"w": torch.zeros(4 * MIB)}, f"{d}/step_000004.pt", keep=2)
    out["big"] = "saved"
except headroom.DiskFullError as error:
    out["big"] = str(error)
    out["big_removed"] = list(error.removed)
out["after_big"] = names()
out["loads"] = [torch.load(f"{d}/{name}")["w"].numel() for name in names()]
print("RESULT " + json.dumps(out))
"""


@needs_torch
def test_deletes_only_when_the_new_checkpoint_is_known_to_fit(scratch):
    script = SHORT_DISK.replace('d = "/ckpt"', f'd = "{scratch}"')
    result = run_isolated(script, mounts=f"mount -t tmpfs -o size=32m tmpfs {scratch}")
    assert result["after_fit"] == ["step_000002.pt", "step_000003.pt"], result
    assert "does not fit" in result["big"] and "nothing was removed" in result["big"], result
    assert result["big_removed"] == []
    assert result["after_big"] == ["step_000002.pt", "step_000003.pt"], result
    assert result["loads"] == [2 << 20, 2 << 20]


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
