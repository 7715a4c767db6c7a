"""Shared helpers for the integration tests.

They create real conditions the way a user's host has them: private mount
namespaces (`unshare -m`) with tmpfs mounts on /dev/shm, /tmp or a checkpoint
dir, and memory cgroups below this process's own cgroup. Nothing touches the
host's own /dev/shm, /tmp or /var/tmp, and only processes the tests start are
ever signalled, by pid.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEADROOM = os.environ.get("HEADROOM_BIN", str(REPO / "build/dev/src/cli/headroom"))
# Debian's python3-torch is importable only from Debian's interpreter.
PYTHON = "/usr/bin/python3"


def fixture_tree(scenario: str, out: Path) -> Path:
    """A recorded host of tests/fixtures/, assembled whole under `out` (its shared files
    are stored once: tests/fixtures/fixtures.py)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("fixtures", REPO / "tests/fixtures/fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.assemble(out, [scenario])
    return out / scenario


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for mount namespaces, tmpfs mounts and cgroups")


def build_fuse_helper(name: str) -> str:
    """Builds tests/integration/helpers/<name>.c, a FUSE file system (libfuse3-dev,
    scripts/install-deps), into build/test-helpers; returns the binary's path."""
    binary = REPO / "build" / "test-helpers" / name
    binary.parent.mkdir(parents=True, exist_ok=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True,
                           text=True)
    if flags.returncode != 0:
        pytest.fail("libfuse3-dev is not installed (scripts/install-deps)")
    subprocess.run(["cc", str(Path(__file__).parent / "helpers" / f"{name}.c"),
                    *flags.stdout.split(), "-o", str(binary)], check=True)
    return str(binary)


def have_torch() -> bool:
    return subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


# Every namespace starts with its own empty /dev/shm: a DataLoader worker or
# NCCL rank killed inside (the point of many tests) leaves its torch_* or
# nccl-* segment there, not in the host's /dev/shm. Tests mount over it as needed.
PRIVATE_SHM = "mount -t tmpfs -o mode=1777 headroom-test-shm /dev/shm\n"


def in_namespace(script: str, timeout: float = 120, env: dict | None = None,
                 cwd: str | None = None) -> subprocess.CompletedProcess:
    """Runs a bash script in a private mount namespace; mounts vanish with it.

    The script sees $HEADROOM and $PY and a private, empty /dev/shm. Mounts
    made inside are private, so the host's /dev/shm, /tmp and /var/tmp are
    never changed.
    """
    require_root()
    full_env = dict(os.environ)
    full_env.update({"HEADROOM": HEADROOM, "PY": PYTHON, "PYTHONUNBUFFERED": "1"})
    full_env.pop("NO_COLOR", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-euo", "pipefail", "-c",
         PRIVATE_SHM + script],
        capture_output=True, text=True, timeout=timeout, env=full_env, cwd=cwd)


def check_json(result: subprocess.CompletedProcess) -> dict:
    """Parses `headroom check --json` output, failing with stderr on bad output."""
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"not JSON (rc={result.returncode}):\n{result.stdout}\n{result.stderr}")


def finding(report: dict, finding_id: str, subject: str | None = None) -> dict:
    for item in report["findings"]:
        if item["id"] == finding_id and (subject is None or item["subject"] == subject):
            return item
    pytest.fail(f"no finding {finding_id} ({subject}) in {[f['id'] for f in report['findings']]}")


def evidence(item: dict, name: str):
    for entry in item["evidence"]:
        if entry["name"] == name:
            return entry["value"]
    pytest.fail(f"no evidence {name} in {item['id']}: {item['evidence']}")


class MemoryCgroup:
    """A memory cgroup below our own (v1 memory hierarchy or v2), removed on exit.

    `wrap(argv)` returns an argv that joins the cgroup before exec'ing argv.
    On exit every process still inside is killed by pid (only ours can be
    there) and the cgroup is removed.
    """

    def __init__(self, limit_bytes: int):
        require_root()
        self.limit = limit_bytes
        self.path: Path | None = None
        self.version = 0

    def __enter__(self) -> "MemoryCgroup":
        name = f"headroom-test-{uuid.uuid4().hex[:8]}"
        own = Path("/proc/self/cgroup").read_text().splitlines()
        v1 = [line.split(":", 2)[2] for line in own if line.split(":", 2)[1] == "memory"]
        if v1 and Path("/sys/fs/cgroup/memory").is_dir():
            self.version = 1
            self.path = Path("/sys/fs/cgroup/memory") / v1[0].lstrip("/") / name
            self.path.mkdir()
            (self.path / "memory.limit_in_bytes").write_text(str(self.limit))
            try:
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(self.limit))
            except OSError:
                pass  # no swap accounting
        else:
            v2 = [line.split(":", 2)[2] for line in own if line.startswith("0::")]
            base = Path("/sys/fs/cgroup") / (v2[0].lstrip("/") if v2 else "")
            if not (base / "cgroup.subtree_control").exists():
                pytest.skip("no memory cgroup available")
            self.version = 2
            self.path = base / name
            self.path.mkdir()
            try:
                (self.path / "memory.max").write_text(str(self.limit))
                (self.path / "memory.swap.max").write_text("0")
            except OSError as error:
                self.__exit__(None, None, None)
                pytest.skip(f"cgroup v2 memory controller not delegated: {error}")
        return self

    def wrap(self, argv: list[str]) -> list[str]:
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.path), *argv]

    def oom_kills(self) -> int:
        assert self.path is not None
        source = "memory.oom_control" if self.version == 1 else "memory.events"
        for line in (self.path / source).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def __exit__(self, *exc) -> None:
        if self.path is None or not self.path.exists():
            return
        for _ in range(50):
            pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            subprocess.run(["sleep", "0.1"])
        try:
            self.path.rmdir()
        except OSError:
            pass


@pytest.fixture
def headroom() -> str:
    if not Path(HEADROOM).exists():
        pytest.fail(f"headroom binary not built: {HEADROOM}")
    return HEADROOM


@pytest.fixture
def scratch(tmp_path_factory) -> Path:
    """A scratch dir outside /tmp (under the build tree), for mount points."""
    base = REPO / "build" / "scratch"
    base.mkdir(parents=True, exist_ok=True)
    path = base / uuid.uuid4().hex[:10]
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
