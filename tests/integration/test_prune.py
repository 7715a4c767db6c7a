"""headroom prune on real checkpoint directories laid out the way Hugging Face
Trainer, PyTorch Lightning and DeepSpeed write them, with a real process still
writing a checkpoint, and checkpoints of an older run whose names sort later."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import in_namespace

DAY = 86400


def set_mtime(path: Path, when: float) -> None:
    for child in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(child, (when, when), follow_symlinks=False)


def safetensors(floats: int) -> bytes:
    """A valid safetensors file of one float32 tensor (random values)."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [floats],
                               "data_offsets": [0, 4 * floats]}}).encode()
    header += b" " * (-len(header) % 8)
    return len(header).to_bytes(8, "little") + header + os.urandom(4 * floats)


def hf_checkpoint(root: Path, step: int, when: float, best: str | None = None) -> Path:
    d = root / f"checkpoint-{step}"
    d.mkdir(parents=True)
    (d / "config.json").write_text('{"model_type": "gpt2"}')
    (d / "model.safetensors").write_bytes(safetensors(50_000))
    (d / "optimizer.pt").write_bytes(os.urandom(400_000))
    state = {"global_step": step, "best_model_checkpoint": best, "log_history": []}
    (d / "trainer_state.json").write_text(json.dumps(state))
    set_mtime(d, when)
    return d


# Some sandboxes (this project's CI among them) keep pid 1 unreadable even to root; it could
# then be working in a checkpoint, so removal vouches for it (docs/safety.md).
VOUCH = ("--ignore-unreadable", "1")


def prune(headroom: str, *args: str) -> subprocess.CompletedProcess:
    vouch = VOUCH if "--yes" in args else ()
    return subprocess.run([headroom, "prune", *args, *vouch], capture_output=True, text=True,
                          timeout=120)


def plan(headroom: str, *args: str) -> dict:
    result = prune(headroom, "--json", *args)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def decisions(report: dict) -> dict[str, str]:
    return {item["name"]: item["decision"] for item in report["checkpoints"]}


def reasons(report: dict, name: str) -> str:
    for item in report["checkpoints"]:
        if item["name"] == name:
            return "; ".join(item["reasons"])
    pytest.fail(f"{name} not in plan")


def test_hugging_face_output_dir(headroom, scratch):
    now = time.time()
    out = scratch / "output"
    # An older run left checkpoint-900 (two days old); this run is at step 1000.
    # As text "checkpoint-900" sorts after "checkpoint-1000": steps must win.
    hf_checkpoint(out, 900, now - 2 * DAY)
    for i, step in enumerate([200, 400, 600, 800, 1000]):
        hf_checkpoint(out, step, now - 3600 * (5 - i), best="output/checkpoint-400" if step == 1000 else None)
    (out / "latest").symlink_to("checkpoint-200")
    (out / "training_args.bin").write_bytes(b"args")
    (out / "runs").mkdir()

    report = plan(headroom, str(out), "--keep-last", "2")
    assert report["dry_run"] is True and report["ordered_by"] == "step number"
    assert decisions(report) == {
        "checkpoint-200": "keep", "checkpoint-400": "keep", "checkpoint-600": "delete",
        "checkpoint-800": "delete", "checkpoint-900": "keep", "checkpoint-1000": "keep"}
    assert "newest complete checkpoint" in reasons(report, "checkpoint-1000")
    assert "symlink 'latest' points to it" in reasons(report, "checkpoint-200")
    assert "best_model_checkpoint in checkpoint-1000/trainer_state.json" in reasons(report, "checkpoint-400")
    assert [item["step"] for item in report["checkpoints"]] == [200, 400, 600, 800, 900, 1000]
    assert all((out / f"checkpoint-{s}").is_dir() for s in (600, 800))  # dry run deletes nothing
    sizes = {item["name"]: item["disk_bytes"] for item in report["checkpoints"]}
    assert report["delete_bytes"] == sizes["checkpoint-600"] + sizes["checkpoint-800"]

    # --keep-last 1: the older run's checkpoint-900 goes, checkpoint-1000 stays.
    result = prune(headroom, str(out), "--keep-last", "1", "--yes")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0].startswith(f"{out}: deleted 3 checkpoints, freed ")
    left = sorted(p.name for p in out.iterdir())
    assert left == ["checkpoint-1000", "checkpoint-200", "checkpoint-400", "latest", "runs", "training_args.bin"]
    assert (out / "latest").resolve() == out / "checkpoint-200"


def test_lightning_checkpoints_with_last_and_best(headroom, scratch):
    now = time.time()
    ckpts = scratch / "checkpoints"
    ckpts.mkdir()
    losses = [0.9, 0.5, 0.3, 0.45, 0.6, 0.7]
    for epoch, loss in enumerate(losses):
        f = ckpts / f"epoch={epoch}-step={(epoch + 1) * 100}-val_loss={loss:.2f}.ckpt"
        f.write_bytes(os.urandom(50_000))
        set_mtime(f, now - 1000 + epoch * 100)
    # A previous run's epoch=9 is older than everything but sorts after epoch=10 as text.
    old = ckpts / "epoch=9-step=90-val_loss=0.80.ckpt"
    old.write_bytes(os.urandom(50_000))
    set_mtime(old, now - 5 * DAY)
    (ckpts / "last.ckpt").write_bytes(os.urandom(50_000))

    report = plan(headroom, str(ckpts), "--keep-last", "2", "--keep-best", "1")
    assert report["policy"]["metric"] == "val_loss" and report["policy"]["mode"] == "min"
    assert decisions(report) == {
        "epoch=9-step=90-val_loss=0.80.ckpt": "delete",
        "epoch=0-step=100-val_loss=0.90.ckpt": "delete",
        "epoch=1-step=200-val_loss=0.50.ckpt": "delete",
        "epoch=2-step=300-val_loss=0.30.ckpt": "keep",   # best val_loss
        "epoch=3-step=400-val_loss=0.45.ckpt": "delete",
        "epoch=4-step=500-val_loss=0.60.ckpt": "keep",   # 2 newest
        "epoch=5-step=600-val_loss=0.70.ckpt": "keep",
        "last.ckpt": "keep"}
    assert "best by val_loss = 0.3" in reasons(report, "epoch=2-step=300-val_loss=0.30.ckpt")
    # last.ckpt is a series of its own (no step), and its name marks it.
    assert "best/last" in reasons(report, "last.ckpt")
    assert {series["name"] for series in report["series"]} == {
        "epoch={E}-step={N}-val_loss={M}.ckpt", "last.ckpt"}

    text = prune(headroom, str(ckpts), "--keep-last", "2", "--keep-best", "1")
    assert text.returncode == 0
    assert text.stdout.startswith(f"{ckpts}: would delete 4 of 8 checkpoints, freeing ")
    assert "(dry run: add --yes to delete)" in text.stdout.splitlines()[0]

    result = prune(headroom, str(ckpts), "--keep-last", "2", "--keep-best", "1", "--yes")
    assert result.returncode == 0, result.stdout
    assert sorted(p.name for p in ckpts.iterdir()) == [
        "epoch=2-step=300-val_loss=0.30.ckpt", "epoch=4-step=500-val_loss=0.60.ckpt",
        "epoch=5-step=600-val_loss=0.70.ckpt", "last.ckpt"]


WRITER = r"""
import os, sys, time
path = sys.argv[1]
with open(path, "wb") as f:            # held open while it grows, like torch.save
    while True:
        f.write(os.urandom(65536)); f.flush(); os.fsync(f.fileno())
        time.sleep(0.02)
"""

APPENDER = r"""
import os, sys, time
path = sys.argv[1]
while True:                            # reopened for each chunk: never held for long
    with open(path, "ab") as f:
        f.write(os.urandom(65536))
    time.sleep(0.02)
"""


@pytest.mark.parametrize("writer,flags", [(WRITER, []), (APPENDER, ["--no-holders"])],
                         ids=["held-open", "growing-only"])
def test_checkpoint_being_written_is_never_deleted(headroom, scratch, writer, flags):
    now = time.time()
    for epoch in range(4):
        f = scratch / f"epoch={epoch}-step={epoch * 100}.ckpt"
        f.write_bytes(os.urandom(30_000))
        set_mtime(f, now - 1000 + epoch)
    live = scratch / "epoch=4-step=400.ckpt"
    proc = subprocess.Popen([sys.executable, "-c", writer, str(live)])
    try:
        deadline = time.time() + 10
        while (not live.exists() or live.stat().st_size == 0) and time.time() < deadline:
            time.sleep(0.05)
        report = plan(headroom, str(scratch), "--keep-last", "1", *flags)
        result = prune(headroom, str(scratch), "--keep-last", "1", "--yes", *flags)
        assert proc.poll() is None, "the writer died"
    finally:
        proc.kill()
        proc.wait()
    assert decisions(report)["epoch=4-step=400.ckpt"] == "keep"
    why = reasons(report, "epoch=4-step=400.ckpt")
    if writer is WRITER:
        # The open fd is the proof that holds whatever the load; growth within the 200 ms
        # look is added when the writer was scheduled in it (an fsync can stall longer).
        assert f"[{proc.pid}]" in why and "(root, fd)" in why
    else:
        assert "still being written" in why
    # It is not complete, so the newest complete one is step 300, which is kept too.
    assert "newest complete checkpoint" in reasons(report, "epoch=3-step=300.ckpt")
    assert result.returncode == 0, result.stdout
    assert sorted(p.name for p in scratch.iterdir()) == ["epoch=3-step=300.ckpt", "epoch=4-step=400.ckpt"]


def test_deepspeed_latest_file_and_temporary_names(headroom, scratch):
    now = time.time()
    for i, step in enumerate([100, 200, 300]):
        d = scratch / f"global_step{step}"
        d.mkdir()
        (d / "mp_rank_00_model_states.pt").write_bytes(os.urandom(20_000))
        set_mtime(d, now - 100 + i)
    (scratch / "latest").write_text("global_step300\n")
    tmp = scratch / "tmp-checkpoint-400"
    tmp.mkdir()
    (tmp / "model.safetensors").write_bytes(b"partial")
    report = plan(headroom, str(scratch), "--keep-last", "1")
    assert decisions(report) == {"global_step100": "delete", "global_step200": "delete",
                                 "global_step300": "keep", "tmp-checkpoint-400": "keep"}
    assert "named by DeepSpeed's 'latest' file" in reasons(report, "global_step300")
    assert "temporary name" in reasons(report, "tmp-checkpoint-400")
    # DeepSpeed writes `latest` once every rank has saved: a newer tag is not finished,
    # counts for nothing, and pushes no complete checkpoint out.
    (scratch / "latest").write_text("global_step200\n")
    report = plan(headroom, str(scratch), "--keep-last", "1")
    assert decisions(report)["global_step100"] == "delete"
    assert decisions(report)["global_step200"] == "keep"
    assert "newest complete" in reasons(report, "global_step200")
    assert decisions(report)["global_step300"] == "keep"
    assert "newer than global_step200, which DeepSpeed's 'latest' names" in reasons(
        report, "global_step300")


# Hugging Face Trainer checkpoints on a small disk; the save of checkpoint-1000 dies
# of ENOSPC after a few KB of model.safetensors, leaving nothing else in it.
ENOSPC_SAVE = r"""
import json, os, sys
sys.path.insert(0, os.environ["TESTS"])
from test_prune import hf_checkpoint, set_mtime
from pathlib import Path
import time
out = Path(os.environ["OUT"])
now = time.time()
hf_checkpoint(out, 800, now - 200)
hf_checkpoint(out, 900, now - 100)
with open(out / "filler", "wb") as f:             # the disk fills up (another job's logs)
    free = os.statvfs(out).f_bavail * os.statvfs(out).f_frsize
    f.write(b"x" * (free - 12288))
(out / "checkpoint-1000").mkdir()
source = (out / "checkpoint-900" / "model.safetensors").read_bytes()
try:
    with open(out / "checkpoint-1000" / "model.safetensors", "wb") as f:
        f.write(source)
        f.flush()
    print("NOT FULL")
except OSError as error:
    print("ENOSPC", error.errno)
"""


def test_a_save_that_died_of_enospc_keeps_the_last_good_checkpoints(headroom, scratch):
    out = scratch / "output"
    out.mkdir()
    (scratch / "save.py").write_text(ENOSPC_SAVE)
    script = f"""
mount -t tmpfs -o size=2m tmpfs "{out}"
OUT="{out}" TESTS="{Path(__file__).parent}" "$PY" "{scratch / 'save.py'}"
ls -la "{out}/checkpoint-1000"
"$HEADROOM" prune --json "{out}" --keep-last 2 > "{scratch / 'plan.json'}" || true
"$HEADROOM" prune "{out}" --keep-last 2 --yes
ls "{out}"
"""
    result = in_namespace(script, env={"SCRATCH": str(scratch)})
    assert "ENOSPC 28" in result.stdout, result.stdout + result.stderr
    report = json.loads((scratch / "plan.json").read_text())
    assert decisions(report) == {"checkpoint-800": "keep", "checkpoint-900": "keep",
                                 "checkpoint-1000": "keep"}, report
    newest = next(item for item in report["checkpoints"] if item["name"] == "checkpoint-1000")
    assert newest["complete"] is False, newest
    assert "model.safetensors: holds" in newest["incomplete_reason"], newest
    assert "newest complete checkpoint" in reasons(report, "checkpoint-900")
    listing = result.stdout.split()
    assert "checkpoint-800" in listing and "checkpoint-900" in listing, result.stdout


def test_never_crosses_a_mount_inside_a_checkpoint(headroom, scratch):
    for i, step in enumerate([100, 200]):
        hf_checkpoint(scratch, step, time.time() - 100 + i)
    (scratch / "checkpoint-100" / "mnt").mkdir()
    out = scratch.parent / (scratch.name + "-out")
    out.mkdir()
    try:
        result = in_namespace(f"""
            mount -t tmpfs tmpfs {scratch}/checkpoint-100/mnt
            echo precious > {scratch}/checkpoint-100/mnt/keep-me
            set +e
            "$HEADROOM" prune --json {scratch} --keep-last 1 --yes --ignore-unreadable 1 > {out}/result.json
            echo $? > {out}/rc
            cat {scratch}/checkpoint-100/mnt/keep-me > {out}/after
        """)
        assert result.returncode == 0, result.stderr
        report = json.loads((out / "result.json").read_text())
        assert (out / "rc").read_text().strip() == "1"  # a planned removal failed
        assert (out / "after").read_text() == "precious\n"
        item = next(i for i in report["checkpoints"] if i["name"] == "checkpoint-100")
        assert item["outcome"] in ("failed", "skipped"), item
        assert "mount" in item["outcome_reason"], item
        assert report["not_removed_count"] == 1
    finally:
        subprocess.run(["rm", "-rf", str(out)])


def test_usage_errors_exit_2(headroom, scratch):
    (scratch / "step=1-a=1-b=2.ckpt").write_bytes(b"x")
    for args, needle in [
        ([str(scratch)], "--keep-last"),
        ([str(scratch / "missing"), "--keep-last", "1"], "missing"),
        ([str(scratch), "--keep-last", "1", "--keep-best", "1"], "--metric"),
    ]:
        result = prune(headroom, *args)
        assert result.returncode == 2, (args, result.stdout)
        assert needle in result.stderr and result.stdout == ""


def test_nothing_to_prune_exits_0(headroom, scratch):
    (scratch / "model_5.pt").write_bytes(b"x")
    result = prune(headroom, str(scratch), "--keep-last", "3", "--yes")
    assert result.returncode == 0
    assert result.stdout.startswith(f"{scratch}: nothing to prune: all 1 checkpoints are kept")


OTHER_USERS_READER = r'''
C="$WORK/ckpt"; mkdir -p "$C" && mount -t tmpfs -o size=32m,mode=0755,uid=65534,gid=65534 tmpfs "$C"
as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
as_nobody sh -c 'for s in 100 200 300 400; do
    mkdir -m 755 "$0/checkpoint-$s"
    echo "{\"global_step\": $s}" > "$0/checkpoint-$s/trainer_state.json"
  done' "$C"
# Intact safetensors files (prune checks the format: random bytes would be incomplete).
for s in 100 200 300 400; do
  $PY -c 'import json, struct, sys
header = json.dumps({"w": {"dtype": "U8", "shape": [100000], "data_offsets": [0, 100000]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(header)) + header + bytes(100000))' \
    "$C/checkpoint-$s/model.safetensors"
  chown 65534:65534 "$C/checkpoint-$s/model.safetensors"
done
touch -d "3 days ago" "$C"/checkpoint-*/* "$C"/checkpoint-*
# An evaluation job of another user (uid 65533, unreadable to nobody) reads checkpoint-100,
# and one works in checkpoint-200 without any file open.
setpriv --reuid 65533 --regid 65533 --clear-groups \
  $PY -c 'import sys, time; f = open(sys.argv[1], "rb"); print("READING", flush=True); time.sleep(600)' \
  "$C/checkpoint-100/model.safetensors" > "$WORK/reader.out" &
reader=$!
(cd "$C/checkpoint-200" && exec setpriv --reuid 65533 --regid 65533 --clear-groups sleep 600) &
worker=$!
for _ in $(seq 50); do grep -q READING "$WORK/reader.out" && break; sleep 0.1; done
# The reader's file is open; now nobody else could enter checkpoint-100 or -300 any more:
# only the kernel's lease can tell that checkpoint-100 is being read.
chmod 700 "$C/checkpoint-100" "$C/checkpoint-300"
echo "=== prune"; as_nobody $HEADROOM --json prune "$C" --keep-last 1 --yes || echo "rc=$?"
echo "=== left"; ls "$C"
kill $reader $worker
'''


def test_a_user_who_is_not_root_never_prunes_what_another_users_job_reads(scratch):
    """Issue 15 #8: as a normal user, prune cannot see another user's evaluation job; the
    kernel's lease still tells that its file is open, and a directory that job could work
    in is kept: the same proof as clean (docs/safety.md)."""
    result = in_namespace(OTHER_USERS_READER, env={"WORK": str(scratch)})
    assert result.returncode == 0, result.stdout + result.stderr
    parts = {p.split("\n", 1)[0].strip(): p.split("\n", 1)[1] for p in result.stdout.split("=== ")[1:]}
    report = json.loads(parts["prune"].split("rc=")[0])
    outcome = {item["name"]: item for item in report["checkpoints"]}
    left = parts["left"].split()
    # The checkpoint being read and the one another user could work in stay; 300, which no
    # other user can enter, goes: a normal user can still prune on a shared host.
    assert "checkpoint-100" in left and "checkpoint-200" in left, (left, report)
    assert "checkpoint-300" not in left and "checkpoint-400" in left, (left, report)
    assert "refused a lease" in outcome["checkpoint-100"]["outcome_reason"] or \
        "cannot inspect" in outcome["checkpoint-100"]["outcome_reason"], outcome["checkpoint-100"]
    assert "could be using it" in outcome["checkpoint-200"]["outcome_reason"], outcome["checkpoint-200"]
