"""`headroom watch` re-executes into its sibling headroom-watch (the watch code
built alone, next to the real path of headroom) and keeps the argv a user typed;
without the sibling it runs in-process with the same flags and the same JSON."""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import HEADROOM

WATCH_ARGS = ["watch", "--interval", "100ms", "--no-shm-stale", "--no-stderr"]
# Flags the watch parser must offer, whichever binary runs it.
FLAGS = ["--config", "--interval", "--window", "--dir", "--listen", "--once", "--count",
         "--exec", "--signal", "--jsonl", "--webhook", "--webhook-timeout", "--repeat",
         "--warn-percent", "--critical-percent", "--no-stderr", "--no-shm-stale"]


@pytest.fixture
def lean() -> Path:
    sibling = Path(os.path.realpath(HEADROOM)).parent / "headroom-watch"
    if not sibling.exists():
        pytest.fail(f"headroom-watch not built next to {HEADROOM}")
    return sibling


@pytest.fixture
def alone(scratch: Path) -> Path:
    """A copy of headroom in a dir of its own: no headroom-watch beside it."""
    copy = scratch / "alone" / "headroom"
    copy.parent.mkdir()
    shutil.copy2(os.path.realpath(HEADROOM), copy)
    return copy


def _running(argv: list[str]) -> tuple[str, list[str]]:
    """Starts a watch, returns its /proc exe and cmdline once it samples, stops it."""
    watch = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([watch.stdout], [], [], 10)
        assert ready and watch.stdout.readline().startswith("{")  # one sample done
        exe = os.readlink(f"/proc/{watch.pid}/exe")
        cmdline = Path(f"/proc/{watch.pid}/cmdline").read_bytes().split(b"\0")[:-1]
    finally:
        watch.send_signal(signal.SIGTERM)
        watch.communicate(timeout=10)
    assert watch.returncode == 0
    return exe, [arg.decode() for arg in cmdline]


def _shape(value):
    """The keys of a JSON document, recursively, without the values."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    # A number may be null in one run and not in the other (--once's time-to-full
    # of a disk that other processes write to): the same shape.
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return "number or null"
    return type(value).__name__


def test_watch_runs_as_headroom_watch_with_the_typed_argv(lean: Path):
    argv = [HEADROOM, "--json", *WATCH_ARGS]
    exe, cmdline = _running(argv)
    assert exe == str(lean), exe
    assert cmdline == argv  # ps and systemd still show "headroom watch ..."


def test_a_symlinked_headroom_finds_the_sibling_of_its_real_path(scratch: Path, lean: Path):
    link = scratch / "bin" / "headroom"
    link.parent.mkdir()
    link.symlink_to(os.path.realpath(HEADROOM))
    exe, cmdline = _running([str(link), "--json", *WATCH_ARGS])
    assert exe == str(lean), exe
    assert cmdline[0] == str(link)


def test_without_the_sibling_watch_runs_in_process_with_the_same_json(alone: Path, lean: Path):
    exe, _ = _running([str(alone), "--json", *WATCH_ARGS])
    assert exe == str(alone), exe
    start = time.time()
    once = ["watch", "--once", "--json", "--no-shm-stale", "--no-stderr"]
    with_sibling = subprocess.run([HEADROOM, *once], capture_output=True, text=True, timeout=30)
    in_process = subprocess.run([str(alone), *once], capture_output=True, text=True, timeout=30)
    assert time.time() - start < 10
    assert with_sibling.returncode in (0, 1), with_sibling.stderr
    assert in_process.returncode == with_sibling.returncode, in_process.stderr
    lean_doc, alone_doc = json.loads(with_sibling.stdout), json.loads(in_process.stdout)
    assert _shape(alone_doc) == _shape(lean_doc)
    assert [f["path"] for f in alone_doc["filesystems"]] == \
        [f["path"] for f in lean_doc["filesystems"]]


def test_watch_help_lists_the_watch_flags_in_both_binaries(alone: Path, lean: Path):
    helps = []
    for binary in (HEADROOM, str(alone)):
        result = subprocess.run([binary, "watch", "--help"], capture_output=True, text=True,
                                timeout=30)
        assert result.returncode == 0, result.stderr
        missing = [flag for flag in FLAGS if flag not in result.stdout]
        assert missing == [], result.stdout
        assert "HEADROOM_ALERT_" in result.stdout  # --exec says how the command sees the alert
        helps.append(result.stdout)
    assert helps[0] == helps[1]


def test_usage_errors_keep_their_exit_code_through_the_exec(alone: Path, lean: Path):
    for binary in (HEADROOM, str(alone)):
        result = subprocess.run([binary, "watch", "--interval", "soon"], capture_output=True,
                                text=True, timeout=30)
        assert result.returncode == 2, (binary, result.stdout, result.stderr)
        assert "--interval" in result.stderr and len(result.stderr.splitlines()) == 1, \
            result.stderr


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "The following argument was not expected: --bogus"),
    (["--once=1"], "Could not convert: --once = 1"),
    (["--interval"], "--interval: 1 required DURATION missing"),
    (["--dir", "/a", "/b"], "The following argument was not expected: /b"),
    (["--count", "three"], "Could not convert: --count = three"),
    (["--warn-percent", "85%"], "Could not convert: --warn-percent = 85%"),
    # The file's rule for keep, worded as for the file with the flag named.
    (["--keep", "0"], "--keep 0 must be at least 1"),
    (["--signal", "USR1"], "--signal"),
])
def test_bad_watch_flags_are_named_and_exit_2(alone: Path, lean: Path, args, message):
    for argv in ([HEADROOM, "watch", *args], [str(alone), "watch", *args], [str(lean), *args]):
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert result.returncode == 2, (argv, result.stderr)
        assert message in result.stderr, (argv, result.stderr)
        assert "Traceback" not in result.stderr and result.stdout == ""


def test_flags_and_globals_parse_in_any_order(lean: Path):
    """Global flags before or after `watch`, `--listen` with its value as the
    next word or without one, and headroom-watch without the word watch."""
    common = ["--once", "--no-shm-stale", "--no-stderr", "--dir", "/", "--warn-percent", "80.5"]
    for argv in ([HEADROOM, "--json", "watch", *common],
                 [HEADROOM, "watch", *common, "--json"],
                 [str(lean), "--json", *common],
                 [str(lean), "watch", "--json", "--listen", "127.0.0.1:0", *common]):
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert result.returncode in (0, 1), (argv, result.stderr)
        doc = json.loads(result.stdout)
        assert [f["path"] for f in doc["filesystems"]][0] == "/", argv


def test_version_and_help_without_the_word_watch(lean: Path):
    version = subprocess.run([str(lean), "--version"], capture_output=True, text=True, timeout=30)
    assert version.returncode == 0 and version.stdout.startswith("headroom ")
    direct = subprocess.run([str(lean), "--help"], capture_output=True, text=True, timeout=30)
    routed = subprocess.run([HEADROOM, "--no-color", "watch", "-h"], capture_output=True,
                            text=True, timeout=30)
    assert direct.returncode == routed.returncode == 0
    assert direct.stdout == routed.stdout and "--webhook URL" in direct.stdout
