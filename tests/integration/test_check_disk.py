"""disk.space on a real small tmpfs used as --dir: the checkpoint projection
(the capacity rule of series/capacity.h, (N+1) x SIZE, saves_that_fit) is compared
with plain arithmetic and with what real torch.save calls manage to write before
the filesystem is full."""
import pytest

from conftest import check_json, evidence, finding, have_torch, in_namespace

MiB = 1024 * 1024

# A 64 MiB tmpfs with 30 MiB already used: 34 MiB free.
SMALL_DISK = """
mkdir -p "$SCRATCH/ckpt"
mount -t tmpfs -o size=64m tmpfs "$SCRATCH/ckpt"
dd if=/dev/zero of="$SCRATCH/ckpt/old-run.bin" bs=1M count=30 2>/dev/null
"""

# Saves 16 MiB checkpoints (a 4 Mi-element float32 tensor) until one fails. A
# failed zip write aborts torch 1.13 (exit 134, corpus: disk_full_checkpoint),
# so each success is printed as it happens.
SAVES = """
import os, sys, torch
state = {"weights": torch.zeros(4 * 1024 * 1024)}
for i in range(10):
    path = os.path.join(sys.argv[1], f"ckpt_{i}.pt")
    torch.save(state, path)
    print("saved", i + 1, "size", os.path.getsize(path), flush=True)
"""


def check_small_disk(scratch, *args: str, job: bool = False):
    (scratch / "saves.py").write_text(SAVES)
    script = SMALL_DISK + f"""
rc=0; "$HEADROOM" check --json --only disk --dir "$SCRATCH/ckpt" {' '.join(args)} || rc=$?
echo $rc > "$SCRATCH/check.rc"
"""
    if job:
        script += """
rc=0; timeout 120 "$PY" "$SCRATCH/saves.py" "$SCRATCH/ckpt" > "$SCRATCH/job.log" 2>&1 || rc=$?
echo $rc > "$SCRATCH/job.rc"
"""
    result = in_namespace(script, timeout=300, env={"SCRATCH": str(scratch)})
    assert result.returncode == 0, result.stderr
    item = finding(check_json(result), "disk.space", str(scratch / "ckpt"))
    return item, int((scratch / "check.rc").read_text())


def test_projection_matches_arithmetic(headroom, scratch):
    item, rc = check_small_disk(scratch, "--ckpt-size", "16MiB", "--keep", "2")
    avail = evidence(item, "avail_bytes")
    assert 33 * MiB <= avail <= 34 * MiB  # 64 MiB minus 30 MiB, minus tmpfs rounding
    assert evidence(item, "mount_point") == str(scratch / "ckpt")
    assert evidence(item, "fstype") == "tmpfs"
    assert evidence(item, "steady_state_need_bytes") == 3 * 16 * MiB
    assert evidence(item, "saves_that_fit") == avail // (16 * MiB) == 2
    # Two saves fit; the third only when the first is deleted before it is written
    # (save_checkpoint does): a warning naming what a plain torch.save would need.
    assert item["severity"] == "warn"
    assert "only because the oldest is deleted before each save" in item["summary"]
    assert "needs 3 x 16.0 MiB" in item["summary"]
    assert rc == 0


def test_next_checkpoint_that_does_not_fit_is_critical(headroom, scratch):
    item, rc = check_small_disk(scratch, "--ckpt-size", "40MiB")
    assert item["severity"] == "critical"
    assert "the next checkpoint (40.0 MiB, 43.0 MiB with margin) does not fit" in item["summary"]
    assert evidence(item, "saves_that_fit") == 0
    assert rc == 1


def test_full_and_read_only_dirs(headroom, scratch):
    script = """
mkdir -p "$SCRATCH/full" "$SCRATCH/ro"
mount -t tmpfs -o size=4m tmpfs "$SCRATCH/full"
dd if=/dev/zero of="$SCRATCH/full/fill" bs=1M 2>/dev/null || true
mount -t tmpfs -o size=4m,ro tmpfs "$SCRATCH/ro"
"$HEADROOM" check --json --only disk --dir "$SCRATCH/full" --dir "$SCRATCH/ro" || true
"""
    result = in_namespace(script, env={"SCRATCH": str(scratch)})
    report = check_json(result)
    full = finding(report, "disk.space", str(scratch / "full"))
    assert full["severity"] == "critical" and evidence(full, "used_percent") == 100.0
    assert any(line.endswith(f"headroom du {scratch / 'full'}") for line in full["remedy"])
    read_only = finding(report, "disk.space", str(scratch / "ro"))
    assert read_only["severity"] == "critical" and evidence(read_only, "read_only") is True


@pytest.mark.skipif(not have_torch(), reason="Debian's python3-torch is not installed")
def test_real_torch_save_runs_out_where_predicted(headroom, scratch):
    # torch.save of 4 Mi float32 writes 16 MiB plus about 1 KiB of zip framing.
    item, _ = check_small_disk(scratch, "--ckpt-size", "16MiB", "--keep", "2", job=True)
    log = (scratch / "job.log").read_text()
    saves = [line.split() for line in log.splitlines() if line.startswith("saved ")]
    assert saves, log
    assert all(16 * MiB <= int(words[3]) < 16 * MiB + 64 * 1024 for words in saves), log
    assert len(saves) == evidence(item, "saves_that_fit") == 2, log
    assert int((scratch / "job.rc").read_text()) != 0  # the third save failed
    assert "file write failed" in log or "No space left on device" in log, log


# Two complete 5 MiB checkpoints (zip archives, as torch.save writes) on a 20 MiB tmpfs, and
# 4.8 MiB left by a save that died, a third of step_3.pt: its temp or its own name cut short.
DEAD_SAVE = """
mkdir -p "$SCRATCH/ckpt"
mount -t tmpfs -o size=20m tmpfs "$SCRATCH/ckpt"
$PY - "$SCRATCH/ckpt" <<'PY'
import os, sys, zipfile
for step in (1, 2):
    with zipfile.ZipFile(f"{sys.argv[1]}/step_{step}.pt", "w") as archive:
        archive.writestr("archive/data/0", os.urandom(5 * 1024 * 1024))
PY
"""


@pytest.mark.parametrize("leftover,held,fits", [
    # save_checkpoint's temp; its pid (7 in a restarted container) now another process's
    (".step_3.pt.headroom-tmp-$sleeper-0123abcd", "", False),
    # a bare torch.save cut short, read by `tail -f` (or a backup, an uploader)
    ("step_3.pt", 'tail -f "$leftover" > /dev/null & reader=$!', False),
    # the same file still being written: the save in progress, its bytes are its own room
    ("step_3.pt", 'exec 3>>"$leftover"', True),
])
def test_a_dead_saves_leftovers_are_no_room_whoever_holds_them(scratch, leftover, held, fits):
    """A save caught in progress is the next save: its bytes so far are room for it. A dead
    save's leftovers are not, even when their temp's pid was reused or a reader holds them:
    the next save writes a new temp, a new name, and they stay. check said the next save fits
    while save_checkpoint raised DiskFullError at once ("does not fit: 5.2 MiB free")."""
    script = DEAD_SAVE + f"""
sleep 600 & sleeper=$!
leftover="$SCRATCH/ckpt/{leftover}"
head -c 5000000 "$SCRATCH/ckpt/step_2.pt" > "$leftover"
{held}
rc=0; "$HEADROOM" check --dir "$SCRATCH/ckpt" --ckpt-size 5MiB --keep 3 --only disk.space \
  --json || rc=$?
kill $sleeper ${{reader:-}}
"""
    result = in_namespace(script, env={"SCRATCH": str(scratch)})
    assert result.returncode == 0, result.stderr
    disk = finding(check_json(result), "disk.space")
    if fits:
        assert disk["severity"] != "critical", disk["summary"]
    else:
        assert disk["severity"] == "critical", disk["summary"]
        assert "does not fit" in disk["summary"], disk["summary"]
        assert "the save in progress" not in disk["summary"], disk["summary"]


# Hugging Face's Trainer: checkpoint-N/ directories; two complete ones of 5 MiB on a 20 MiB
# tmpfs and checkpoint-300/ half written (its model.safetensors cut short at 4.7 MB).
HF_SAVE = """
mkdir -p "$SCRATCH/ckpt"
mount -t tmpfs -o size=20m tmpfs "$SCRATCH/ckpt"
$PY - "$SCRATCH/ckpt" <<'PY'
import json, os, struct, sys
def safetensors(path, size, cut=None):
    header = json.dumps({"w": {"dtype": "U8", "shape": [size], "data_offsets": [0, size]}})
    blob = struct.pack("<Q", len(header)) + header.encode() + os.urandom(size)
    with open(path, "wb") as stream:
        stream.write(blob[:cut])
for step, cut in ((100, None), (200, None), (300, 4_700_000)):
    os.mkdir(f"{sys.argv[1]}/checkpoint-{step}")
    safetensors(f"{sys.argv[1]}/checkpoint-{step}/model.safetensors", 5 * 1024 * 1024, cut)
PY
"""


@pytest.mark.parametrize("writing", [True, False])
def test_a_directory_checkpoint_being_written_is_the_next_save(scratch, writing):
    """A Monitor sample that falls inside the Trainer's save of checkpoint-300/ (0.3 MiB left
    to write, 5.5 MiB free) must not read "the next checkpoint does not fit": that save is the
    next one, and the loop would stop for nothing. Left behind closed, it is a dead save."""
    held = 'exec 3>>"$SCRATCH/ckpt/checkpoint-300/model.safetensors"' if writing else ""
    script = HF_SAVE + held + """
"$HEADROOM" check --dir "$SCRATCH/ckpt" --ckpt-size 5MiB --keep 3 --only disk.space --json || true
"""
    result = in_namespace(script, env={"SCRATCH": str(scratch)})
    assert result.returncode == 0, result.stderr
    disk = finding(check_json(result), "disk.space")
    assert evidence(disk, "series") == "checkpoint-{N}/"
    if writing:
        assert disk["severity"] == "warn", disk["summary"]  # the steady state: delete first
        # Room for it: what it wrote, not something retention frees (keep 3 of 2 frees none).
        assert evidence(disk, "save_in_progress_bytes") >= 4_700_000, disk["evidence"]
        assert evidence(disk, "retention_frees_bytes") == 0, disk["evidence"]
    else:
        assert disk["severity"] == "critical", disk["summary"]
