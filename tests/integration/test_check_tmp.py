"""tmp.space and tmp.socket against real tmpfs mounts, and a real PyTorch
DataLoader in the same private mount namespace: it keeps working where check
says warn (Python silently falls back to /var/tmp) and fails where check says
critical (no usable temp dir: "No usable temporary directory found").

Mounts happen only inside `unshare -m`; the host's /tmp and /var/tmp are never
touched.
"""
import json

import pytest

from conftest import evidence, finding, have_torch, in_namespace

# The checkout (and with it $SCRATCH and $HEADROOM) may itself live under /tmp
# or /var/tmp, as a CI clone does: bind both onto a private tmpfs at /mnt first,
# so the mounts over /tmp and /var/tmp below do not hide them.
KEEP_CHECKOUT = """
mount -t tmpfs -o size=1m tmpfs /mnt
mkdir /mnt/scratch /mnt/bin
mount --bind "$SCRATCH" /mnt/scratch
mount --bind "$(dirname "$HEADROOM")" /mnt/bin
SCRATCH=/mnt/scratch
HEADROOM="/mnt/bin/$(basename "$HEADROOM")"
"""

NS_SCRATCH = "/mnt/scratch"  # $SCRATCH as the script (and headroom) sees it

# A full /tmp: an 8 MiB tmpfs filled to the last block, and no TMPDIR/TEMP/TMP.
FULL_TMP = """
unset TMPDIR TEMP TMP
mount -t tmpfs -o size=8m,mode=1777 tmpfs /tmp
dd if=/dev/zero of=/tmp/fill bs=1M 2>/dev/null || true
"""

# /var/tmp read-only, /usr/tmp unusable, and a read-only working directory.
NO_FALLBACK = """
mount -t tmpfs -o size=1m,mode=1777,ro tmpfs /var/tmp
if [ -e /usr/tmp ]; then mount -t tmpfs -o size=1m,ro tmpfs /usr/tmp; fi
mkdir -p "$SCRATCH/cwd"
mount -t tmpfs -o size=1m,ro tmpfs "$SCRATCH/cwd"
cd "$SCRATCH/cwd"
"""

# A DataLoader with 2 workers and the default file_descriptor sharing: every
# batch goes through multiprocessing's resource_sharer Listener in the temp dir.
# DataLoader(timeout=...) turns the hang of the no-fallback case into an error
# after a bounded time, so the test does not depend on machine load.
JOB = """
import tempfile, torch
from torch.utils.data import DataLoader, Dataset

class Synthetic(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.full((3, 32, 32), float(i)), i % 10

model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 10))
for step, (x, y) in enumerate(DataLoader(Synthetic(), batch_size=8, num_workers=2, timeout=10)):
    torch.nn.functional.cross_entropy(model(x), y).backward()
    print("step", step, flush=True)
print("epoch finished; tempfile.gettempdir() =", tempfile.gettempdir(), flush=True)
"""


def read_report(scratch) -> dict:
    text = (scratch / "report.json").read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pytest.fail(f"headroom check --json printed no JSON:\n{text}")


def run_check_then_job(scratch, setup: str, with_job: bool):
    (scratch / "job.py").write_text(JOB)
    script = KEEP_CHECKOUT + setup + """
rc=0; "$HEADROOM" check --json --only tmp > "$SCRATCH/report.json" || rc=$?
echo $rc > "$SCRATCH/check.rc"
"""
    if with_job:
        script += """
rc=0; timeout 120 "$PY" "$SCRATCH/job.py" > "$SCRATCH/job.log" 2>&1 || rc=$?
echo $rc > "$SCRATCH/job.rc"
"""
    result = in_namespace(script, timeout=300, env={"SCRATCH": str(scratch)})
    assert result.returncode == 0, result.stderr
    return read_report(scratch), int((scratch / "check.rc").read_text())


def test_full_tmp_with_usable_var_tmp_warns_naming_var_tmp(headroom, scratch):
    setup = FULL_TMP + """
mount -t tmpfs -o size=64m,mode=1777 tmpfs /var/tmp
cd "$SCRATCH"
"""
    report, rc = run_check_then_job(scratch, setup, with_job=False)
    space = finding(report, "tmp.space")
    assert space["severity"] == "warn", space
    assert space["subject"] == "/var/tmp"
    assert "silently falls back to /var/tmp" in space["summary"]
    assert evidence(space, "avail_bytes") == 64 * 1024 * 1024
    assert evidence(space, "mount_point") == "/var/tmp"
    skipped = evidence(space, "skipped_candidates")
    assert skipped.startswith("/tmp: No space left on device (errno 28) writing a test file"), skipped
    assert finding(report, "tmp.socket")["severity"] == "ok"
    assert rc == 0  # a warning does not reach --fail-on critical


def test_no_usable_temp_dir_is_critical_and_exits_1(headroom, scratch):
    report, rc = run_check_then_job(scratch, FULL_TMP + NO_FALLBACK, with_job=False)
    cwd = f"{NS_SCRATCH}/cwd"
    for finding_id in ("tmp.space", "tmp.socket"):
        item = finding(report, finding_id)
        assert item["severity"] == "critical", item
        assert (f"No usable temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp', '{cwd}']"
                in item["summary"]), item["summary"]
    skipped = evidence(finding(report, "tmp.space"), "skipped_candidates")
    assert "/var/tmp: Read-only file system (errno 30)" in skipped
    assert f"{cwd}: Read-only file system (errno 30)" in skipped
    assert report["verdict"] == "critical"
    assert rc == 1


def test_unusable_tmpdir_is_skipped_like_python(headroom, scratch):
    setup = """
mkdir -p "$SCRATCH/pinned"
mount -t tmpfs -o size=1m,ro tmpfs "$SCRATCH/pinned"
mount -t tmpfs -o size=64m,mode=1777 tmpfs /tmp
export TMPDIR="$SCRATCH/pinned"
cd "$SCRATCH"
"""
    report, _ = run_check_then_job(scratch, setup, with_job=False)
    space = finding(report, "tmp.space")
    assert space["severity"] == "warn"
    assert space["subject"] == "/tmp"
    assert f"TMPDIR={NS_SCRATCH}/pinned is not usable (Read-only file system" in space["summary"]


@pytest.mark.skipif(not have_torch(), reason="Debian's python3-torch is not installed")
def test_pytorch_fails_where_check_is_critical_and_runs_where_it_warns(headroom, scratch):
    fallback = scratch / "fallback"
    fallback.mkdir()
    setup = FULL_TMP + 'mount -t tmpfs -o size=64m,mode=1777 tmpfs /var/tmp\ncd "$SCRATCH"\n'
    report, _ = run_check_then_job(fallback, setup, with_job=True)
    assert finding(report, "tmp.space")["severity"] == "warn"
    log = (fallback / "job.log").read_text()
    assert int((fallback / "job.rc").read_text()) == 0, log
    assert "epoch finished; tempfile.gettempdir() = /var/tmp" in log

    broken = scratch / "broken"
    broken.mkdir()
    report, rc = run_check_then_job(broken, FULL_TMP + NO_FALLBACK, with_job=True)
    assert rc == 1
    assert finding(report, "tmp.socket")["severity"] == "critical"
    log = (broken / "job.log").read_text()
    assert int((broken / "job.rc").read_text()) != 0, log
    assert "No usable temporary directory found in" in log
    assert "self._listener = Listener(authkey=process.current_process().authkey)" in log
    assert "epoch finished" not in log
