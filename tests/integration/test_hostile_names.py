"""Names headroom did not choose: file names and command lines with terminal control
sequences, newlines and bytes that are not UTF-8, as another user of a shared host can
create them. The human output must not carry a control character to the terminal, and
--json must stay valid JSON (an invalid byte becomes U+FFFD) with the documented exit code,
never an internal error."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# Each would act on a terminal printed raw: retitle the window, clear the screen, ring the
# bell, start a new line that poses as headroom's own, a C1 CSI; and Latin-1 bytes.
HOSTILE = [
    b"title\x1b]2;pwned\x07",
    b"clear\x1b[2J\x1b[H",
    b"fake\nCRITICAL everything",
    b"csi\xc2\x9b31m",
    b"latin1-\xe9t\xe9",
]
CONTROL = [b"\x1b", b"\x07", b"\x9b"]


def make_files(root: Path) -> list[bytes]:
    paths = []
    for name in HOSTILE:
        path = os.path.join(os.fsencode(root), name)
        with open(path, "wb") as out:
            out.write(b"x" * 8192)
        paths.append(path)
    return paths


def run(headroom: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([headroom, *args], capture_output=True, timeout=120)


def assert_no_control(output: bytes, what: str) -> None:
    for byte in CONTROL:
        assert byte not in output, f"{what} printed {byte!r} raw:\n{output!r}"


def test_du_shows_hostile_names_escaped_and_json_stays_valid(headroom: str, scratch: Path):
    make_files(scratch)
    human = run(headroom, "du", scratch)
    assert human.returncode == 0, human.stderr
    assert_no_control(human.stdout, "du")
    assert b"title\\x1b]2;pwned\\x07" in human.stdout
    assert b"fake\\nCRITICAL everything" in human.stdout
    assert b"csi\\u009b31m" in human.stdout
    # The line count is the table's, not one more for the name with a newline.
    assert not any(line.startswith(b"CRITICAL") for line in human.stdout.splitlines())

    as_json = run(headroom, "du", "--json", scratch)
    assert as_json.returncode == 0, as_json.stderr
    names = {entry["name"] for entry in json.loads(as_json.stdout.decode("utf-8"))["entries"]}
    assert "latin1-\ufffdt\ufffd" in names
    assert "title\x1b]2;pwned\x07" in names  # JSON escapes it; the name is intact


def test_who_shows_a_hostile_holder_escaped_and_json_stays_valid(headroom: str, scratch: Path):
    paths = make_files(scratch)
    held = paths[4]  # the Latin-1 name
    # A holder whose name (comm, which any process sets for itself) clears the screen.
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; open('/proc/self/comm', 'wb').write(b'\\x1b[2Jhid');"
         " f = open(sys.argv[1], 'rb'); time.sleep(60)", held])
    try:
        for _ in range(100):
            if any(os.path.realpath(f"/proc/{holder.pid}/fd/{fd}") == os.fsdecode(held)
                   for fd in os.listdir(f"/proc/{holder.pid}/fd")):
                break
            subprocess.run(["sleep", "0.05"])
        human = run(headroom, "who", held)
        assert human.returncode == 0, human.stderr
        assert_no_control(human.stdout, "who")
        assert str(holder.pid).encode() in human.stdout
        assert b"\\x1b[2Jhid" in human.stdout

        as_json = run(headroom, "who", "--json", held)
        assert as_json.returncode == 0, as_json.stderr
        report = json.loads(as_json.stdout.decode("utf-8"))
        assert "\ufffd" in json.dumps(report, ensure_ascii=False)
        assert str(holder.pid) in as_json.stdout.decode("utf-8")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()


def test_prune_shows_hostile_checkpoint_names_escaped(headroom: str, scratch: Path):
    for step in (100, 200, 300):
        name = b"ckpt-\x1b[2J-" + str(step).encode() + b".pt"
        with open(os.path.join(os.fsencode(scratch), name), "wb") as out:
            out.write(b"w" * 4096)
        os.utime(os.path.join(os.fsencode(scratch), name), (1_700_000_000 + step,) * 2)
    human = run(headroom, "prune", "--keep-last", "1", "--no-holders", scratch)
    assert human.returncode == 0, human.stderr
    assert_no_control(human.stdout, "prune")
    assert b"ckpt-\\x1b[2J-" in human.stdout
    as_json = run(headroom, "prune", "--json", "--keep-last", "1", "--no-holders", scratch)
    assert as_json.returncode == 0, as_json.stderr
    json.loads(as_json.stdout.decode("utf-8"))
