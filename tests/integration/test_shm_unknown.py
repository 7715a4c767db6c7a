"""`watch` and `check` run unprivileged (issue 15): a /dev/shm segment with no
holder in sight is stale only when that is proven, by inspecting every process
that could hold it or by the kernel granting a lease. Another user's segment,
held by that user's live job whose fds this user cannot read, used to count as
stale bytes; now it is "unknown". Two uids via setpriv, in a private mount
namespace with its own tmpfs /dev/shm."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import evidence, finding, in_namespace

SCRIPT = r'''
as() { uid=$1; shift; setpriv --reuid "$uid" --regid "$uid" --clear-groups "$@"; }
# uid 4001's live job holds one segment; another of its segments nobody holds.
setpriv --reuid 4001 --regid 4001 --clear-groups "$PY" -c '
import os, sys, time
fd = os.open("/dev/shm/torch_4001_held", os.O_CREAT | os.O_RDWR, 0o600)
os.write(fd, b"\1" * (1 << 20))
with open("/dev/shm/torch_4001_unheld", "wb") as out: out.write(b"\1" * (1 << 20))
os.chmod("/dev/shm/torch_4001_unheld", 0o600)
open("/dev/shm/ready", "w").close()
time.sleep(60)
' &
job=$!   # setpriv execs python: this is the job's pid
trap 'kill $job 2>/dev/null || true' EXIT
while [ ! -e /dev/shm/ready ]; do sleep 0.05; done
rm /dev/shm/ready
# uid 4002's own leftover: nobody holds it.
as 4002 sh -c 'head -c 1048576 /dev/zero >/dev/shm/torch_4002_leftover; chmod 600 /dev/shm/torch_4002_leftover'
touch -d "-5 minutes" /dev/shm/torch_*   # old enough to be stale
as 4002 "$HEADROOM" watch --once --json --no-stderr >"$OUT/watch.json" || true
as 4002 "$HEADROOM" check --only shm.stale --json >"$OUT/check.json" || true
"$HEADROOM" watch --once --json --no-stderr >"$OUT/root.json" || true
'''


def test_a_segment_held_by_another_users_job_is_unknown_not_stale(scratch: Path):
    result = in_namespace(SCRIPT, timeout=60, env={"OUT": str(scratch)})
    assert result.returncode == 0, result.stderr
    mib = 1 << 20
    watch = json.loads((scratch / "watch.json").read_text())
    # Proven: its own leftover (the lease is granted to its owner). Not proven:
    # both of uid 4001's, held or not, since 4001's processes cannot be read.
    assert watch["shm_stale_bytes"] == mib, watch
    assert watch["shm_unknown_bytes"] == 2 * mib, watch
    report = json.loads((scratch / "check.json").read_text())
    stale = finding(report, "shm.stale")
    assert evidence(stale, "stale_bytes") == mib, stale
    assert evidence(stale, "unknown_bytes") == 2 * mib, stale
    assert "could not be proven unused" in stale["summary"], stale["summary"]
    # Root sees every holder: the held one is in use, the others are stale.
    root = json.loads((scratch / "root.json").read_text())
    assert root["shm_stale_bytes"] == 2 * mib and root["shm_unknown_bytes"] == 0, root
