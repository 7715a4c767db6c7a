"""Helpers for the Python module's tests.

Run with `make pytest` (PYTHONPATH=python, Debian's /usr/bin/python3, which has
python3-torch). Tests that need a small or full filesystem run their script in
a private mount namespace (`unshare -m --propagation private`) with a tmpfs on
/dev/shm or on a scratch dir: the host's /dev/shm, /tmp and /var/tmp are never
mounted over, filled or written by them.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "python"
PYTHON = "/usr/bin/python3"  # Debian's: python3-torch is installed there only
if str(PACKAGE) not in sys.path:
    sys.path.insert(0, str(PACKAGE))


def have_torch() -> bool:
    return subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


needs_torch = pytest.mark.skipif(not have_torch(), reason="needs Debian's python3-torch")


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for private mount namespaces and tmpfs mounts")


def run_isolated(script: str, mounts: str, timeout: float = 120) -> dict:
    """Runs a Python script in a private mount namespace after the shell `mounts`.

    The script prints results as lines "RESULT <json object>"; they are merged and
    returned with the script's "returncode" and the tails of its "stdout" and "stderr".
    Mounts vanish with the namespace.
    """
    require_root()
    scratch = REPO / "build" / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    path = scratch / f"pyscript-{uuid.uuid4().hex[:8]}.py"
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ, PYTHONPATH=str(PACKAGE), PYTHONUNBUFFERED="1", SCRIPT=str(path))
    try:
        result = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "bash", "-euo", "pipefail", "-c",
             textwrap.dedent(mounts) + f'\nexec {PYTHON} "$SCRIPT"'],
            capture_output=True, text=True, timeout=timeout, env=env)
    finally:
        path.unlink(missing_ok=True)
    found: dict = {}
    for line in result.stdout.splitlines():
        if line.startswith("RESULT "):
            found.update(json.loads(line[len("RESULT "):]))
    if not found:
        pytest.fail(f"no RESULT line (rc={result.returncode}):\n{result.stdout}\n{result.stderr}")
    found.update(returncode=result.returncode, stderr=result.stderr[-4000:],
                 stdout=result.stdout[-8000:])
    return found


@pytest.fixture
def scratch() -> Path:
    """A scratch dir under build/ (not the host's /tmp), removed afterwards."""
    path = REPO / "build" / "scratch" / f"py-{uuid.uuid4().hex[:10]}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)
