"""headroom run as root on a shared host, tried as an attacker and an unlucky user would.

- The files run writes (--log and its rotations, --report, and watch's --jsonl alert
  sink) in a directory another user (uid 65534, via setpriv) can write: a symlink
  planted at the name or at a rotated name, a hard link to a system file, a FIFO,
  the directory swapped for a symlink mid-run, a full disk under the log.
- Signals: `nohup` (an inherited SIG_IGN) survives into the job; SIGTERM reaches
  the job while headroom's own stdout is a FIFO nobody reads.

Victims are files of the test's own scratch dir that only root can write; nothing
outside the build tree is touched. The fs.protected_* sysctls are whatever the host
has: the tests do not depend on them (a hard link to a root file, which
fs.protected_hardlinks=1 stops an unprivileged user from making, is made by root here).
"""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import HEADROOM, PYTHON, in_namespace, require_root

NOBODY = 65534


def as_nobody(*argv: str) -> None:
    """Runs argv as uid/gid 65534 with no supplementary groups; fails the test on error."""
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
                   check=True, capture_output=True, text=True, timeout=30)


@pytest.fixture
def shared(scratch: Path):
    """A dir the other user owns (logs/), and root's victim files it must never reach."""
    require_root()
    scratch.chmod(0o755)
    logs = scratch / "logs"
    logs.mkdir()
    os.chown(logs, NOBODY, NOBODY)
    victim = scratch / "victim"
    victim.mkdir(mode=0o755)
    (victim / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (victim / "passwd").chmod(0o644)
    return scratch, logs, victim


def victim_state(victim: Path) -> dict:
    return {p.name: (p.read_bytes(), p.stat().st_mode) for p in sorted(victim.iterdir())}


def run(args: list, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([HEADROOM, "run", "--only", "container", *args], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


# --- item 9: the files run writes -------------------------------------------------------


def test_a_log_or_report_symlink_planted_by_another_user_is_refused(shared):
    scratch, logs, victim = shared
    before = victim_state(victim)
    as_nobody("ln", "-s", str(victim / "passwd"), str(logs / "job.log"))
    as_nobody("ln", "-s", str(victim / "passwd"), str(logs / "report.json"))
    result = run(["--log", str(logs / "job.log"), "--", "echo", "pwned::0:0::/:/bin/sh"])
    assert result.returncode == 125, result.stderr
    assert "symbolic link" in result.stderr and "job.log" in result.stderr
    assert "pwned" not in result.stdout, "the job ran although its log was refused"
    # --report is written only at the end: refused before the job starts, not after it.
    result = run(["--report", str(logs / "report.json"), "--", "sh", "-c", "exit 3"])
    assert result.returncode == 125, result.stderr
    assert "symbolic link" in result.stderr
    assert victim_state(victim) == before


def test_a_hard_link_fifo_or_other_users_file_at_the_log_path_is_refused(shared):
    scratch, logs, victim = shared
    before = victim_state(victim)
    # A hard link to a root file (fs.protected_hardlinks=0 lets any user make one).
    os.link(victim / "passwd", logs / "linked.log")
    result = run(["--log", str(logs / "linked.log"), "--", "echo", "x"])
    assert result.returncode == 125 and "hard links" in result.stderr, result.stderr
    # A FIFO nobody reads: opening it for writing would block forever.
    as_nobody("mkfifo", "-m", "666", str(logs / "fifo.log"))
    started = time.monotonic()
    result = run(["--log", str(logs / "fifo.log"), "--", "echo", "x"], timeout=20)
    assert result.returncode == 125 and "FIFO" in result.stderr, result.stderr
    assert time.monotonic() - started < 10
    # The other user's own file: root does not write into it.
    as_nobody("sh", "-c", f"echo theirs > {logs / 'theirs.log'}")
    result = run(["--log", str(logs / "theirs.log"), "--", "echo", "x"])
    assert result.returncode == 125 and "belongs to uid 65534" in result.stderr, result.stderr
    assert (logs / "theirs.log").read_text() == "theirs\n"
    assert victim_state(victim) == before


def test_created_log_and_report_are_not_world_readable(shared):
    scratch, logs, victim = shared
    out = scratch / "own"
    out.mkdir()
    result = run(["--log", str(out / "job.log"), "--report", str(out / "r.json"), "--",
                  "sh", "-c", "echo secret; exit 4"])
    assert result.returncode == 4, result.stderr
    assert (out / "job.log").read_text() == "secret\n"
    assert stat.S_IMODE((out / "job.log").stat().st_mode) & 0o007 == 0
    assert stat.S_IMODE((out / "r.json").stat().st_mode) == 0o600
    assert json.loads((out / "r.json").read_text())["exit_code"] == 4


# Prints a line, waits for the test to swap the log directory, then prints enough
# to rotate the log several times.
ROTATING_JOB = r'''
import os, sys, time
print("first", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
for i in range(400):
    print(f"line {i:04d} " + "x" * 90, flush=True)
    if i % 20 == 0:
        time.sleep(0.02)  # several reads, so several rotations
'''


def test_rotation_never_follows_a_planted_name_or_a_swapped_directory(shared):
    scratch, logs, victim = shared
    # The other user owns the parent too, so it can rename logs/ away mid-run.
    base = scratch / "base"
    base.mkdir()
    os.chown(base, NOBODY, NOBODY)
    logs.rename(base / "logs")
    logs = base / "logs"
    (victim / "job.log.1").write_text("precious 1\n")
    (victim / "job.log.2").write_text("precious 2\n")
    before = victim_state(victim)
    # A rotated name planted before the run: rotation renames it, never writes through it.
    as_nobody("ln", "-s", str(victim / "passwd"), str(logs / "job.log.1"))
    go = scratch / "go"
    job = scratch / "job.py"
    job.write_text(ROTATING_JOB)
    proc = subprocess.Popen([HEADROOM, "run", "--only", "container", "--log", str(logs / "job.log"),
                             "--log-size", "4KiB", "--log-keep", "3", "--", PYTHON, str(job), str(go)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "first\n"
    # Mid-run: the directory is swapped for a symlink to root's directory.
    as_nobody("mv", str(logs), str(base / "moved"))
    as_nobody("ln", "-s", str(victim), str(logs))
    go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.count("\n") == 400
    assert victim_state(victim) == before, "rotation wrote into the swapped-in directory"
    moved = base / "moved"
    kept = sorted(p.name for p in moved.iterdir())
    assert kept == ["job.log", "job.log.1", "job.log.2"], kept
    for name in kept:
        path = moved / name
        assert not path.is_symlink() and path.stat().st_uid == 0, name
        # Only the job's output (a rotation may split a line between two files).
        assert all(line.startswith(("line ", "first", "x")) or line == ""
                   for line in path.read_text().split("\n")), name
    assert "line 0399" in (moved / "job.log").read_text()


def test_a_full_disk_under_the_log_keeps_the_job_and_its_output(headroom, scratch):
    # The log's disk fills: the job keeps running, its stdout is complete, the loss is said.
    result = in_namespace(f'''
        mkdir -p {scratch}/logdisk
        mount -t tmpfs -o size=256k headroom-logdisk {scratch}/logdisk
        "$HEADROOM" run --only container --log {scratch}/logdisk/job.log -- \
            "$PY" -c 'import sys
for i in range(20000): sys.stdout.write(f"step {{i:06d}} loss 0.123456\\n")' \
            >{scratch}/out.txt
        umount {scratch}/logdisk
    ''', timeout=120)
    assert result.returncode == 0, result.stderr
    lines = (scratch / "out.txt").read_text().splitlines()
    assert len(lines) == 20000 and lines[-1] == "step 019999 loss 0.123456"
    assert "--log lost" in result.stderr and "No space left on device" in result.stderr


WATCH_CONFIG = "temp_dir = false\nshm = false\nshm_stale = false\n"


def test_watch_jsonl_sink_does_not_follow_a_planted_symlink(shared):
    scratch, logs, victim = shared
    before = victim_state(victim)
    as_nobody("ln", "-s", str(victim / "passwd"), str(logs / "alerts.jsonl"))
    (scratch / "watch.toml").write_text(WATCH_CONFIG)
    mnt = scratch / "mnt"
    mnt.mkdir()
    # An 8 MiB tmpfs 61% full: a warning fires at once and goes to the sink.
    result = in_namespace(f'''
        mount -t tmpfs -o size=8m headroom-sinks {mnt}
        head -c 5000k /dev/zero >{mnt}/big
        timeout -s INT 4 "$HEADROOM" watch --json --config {scratch}/watch.toml --interval 100ms \
            --dir {mnt} --warn-percent 50 --critical-percent 90 \
            --jsonl {logs}/alerts.jsonl --jsonl {scratch}/own.jsonl >/dev/null || true
    ''', timeout=60)
    assert victim_state(victim) == before, result.stderr
    assert "symbolic link" in result.stderr, result.stderr
    # The sink that is not attacked still works, and gets a private file.
    assert '"kind"' in (scratch / "own.jsonl").read_text(), result.stderr
    assert stat.S_IMODE((scratch / "own.jsonl").stat().st_mode) & 0o007 == 0


# --- item 10: nohup --------------------------------------------------------------------


# Reports which signals it ignores, then waits to be told to finish.
IGNORING_JOB = r'''
import os, sys, time
ignored = int([l for l in open("/proc/self/status") if l.startswith("SigIgn:")][0].split()[1], 16)
print("ready", os.getpid(), ignored, flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
print("survived", flush=True)
'''


def sig_bit(signal_number: int) -> int:
    return 1 << (signal_number - 1)


def test_nohup_job_keeps_sighup_ignored_and_is_not_sent_it(scratch):
    job = scratch / "job.py"
    job.write_text(IGNORING_JOB)
    done = scratch / "done"
    # nohup sets SIGHUP to SIG_IGN and execs headroom (stdout is not a terminal: no nohup.out).
    proc = subprocess.Popen(["nohup", HEADROOM, "run", "--only", "container", "--", PYTHON, str(job),
                             str(done)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, pid, ignored = proc.stdout.readline().split()
    assert int(ignored) & sig_bit(signal.SIGHUP), "the job lost nohup's SIG_IGN for SIGHUP"
    # The terminal closes: SIGHUP to headroom and to the job's process group.
    os.kill(proc.pid, signal.SIGHUP)
    os.killpg(int(pid), signal.SIGHUP)
    time.sleep(0.5)
    done.touch()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == "survived\n"
    assert "SIGHUP" not in err


def test_every_ignored_signal_stays_ignored_and_is_not_forwarded(scratch):
    # A non-interactive shell starts a background job with SIGINT and SIGQUIT
    # ignored; a parent may ignore others (SIGUSR2 here).
    job = scratch / "job.py"
    job.write_text(IGNORING_JOB)
    done = scratch / "done"
    proc = subprocess.Popen(
        ["sh", "-c", 'trap "" USR2; "$0" run --only container -- "$1" "$2" "$3" & wait', HEADROOM,
         PYTHON, str(job), str(done)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, pid, ignored = proc.stdout.readline().split()
    for number in (signal.SIGINT, signal.SIGQUIT, signal.SIGUSR2):
        assert int(ignored) & sig_bit(number), f"{signal.Signals(number).name} not ignored: {ignored}"
    assert not int(ignored) & sig_bit(signal.SIGTERM)
    headroom_pid = int(subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                      text=True).stdout.split()[0])
    for number in (signal.SIGINT, signal.SIGUSR2):
        os.kill(headroom_pid, number)
    time.sleep(0.5)
    done.touch()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == "survived\n"


# --- item 11: SIGTERM while headroom's stdout is not read -------------------------------


# Writes 24 MiB to stdout (more than headroom holds for a stalled reader), says so in a
# file, then waits; on SIGTERM it saves its "checkpoint" and exits 0.
STALLED_JOB = r'''
import os, signal, sys, time
marker = sys.argv[1]
open(marker + ".pid", "w").write(str(os.getpid()))
def on_term(signum, frame):
    open(marker + ".handled", "w").write("checkpoint saved\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
line = ("step %06d loss 0.123456 " + "x" * 100 + "\n")
for i in range(200000):
    sys.stdout.write(line % i)
sys.stdout.flush()
open(marker + ".wrote", "w").write("all\n")
time.sleep(120)
'''


def wait_for_file(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


def test_sigterm_reaches_the_job_while_stdout_is_a_fifo_nobody_reads(scratch):
    fifo = scratch / "out.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # held open, never read
    writer = os.open(fifo, os.O_WRONLY)
    job = scratch / "job.py"
    job.write_text(STALLED_JOB)
    marker = scratch / "job"
    proc = subprocess.Popen([HEADROOM, "run", "--only", "container", "--report", str(scratch / "r.json"),
                             "--", PYTHON, str(job), str(marker)],
                            stdout=writer, stderr=subprocess.PIPE, text=True)
    os.close(writer)
    err = ""
    try:
        # The job is never blocked on its pipe although nothing reads headroom's stdout.
        wrote_all = wait_for_file(Path(str(marker) + ".wrote"), 30)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    finally:
        if proc.poll() is None:  # headroom never served the signal (today's main)
            proc.kill()
            proc.wait()
            os.kill(int(Path(str(marker) + ".pid").read_text()), signal.SIGKILL)  # its job
        os.close(reader)
    assert Path(str(marker) + ".handled").exists(), "the job never got SIGTERM"
    assert wrote_all, "the job blocked on its output"
    assert proc.returncode == 0, err
    # The output that could not be written is said, with how much.
    assert "could not be written to headroom's stdout" in err, err
    # Forwarded at once; the end waits the documented 5 s for the stalled reader, no more.
    assert time.monotonic() - sent < 15


SLOW_READER = r'''
import sys, time
total = 0
while True:
    chunk = sys.stdin.buffer.read1(65536)
    if not chunk:
        break
    sys.stdout.buffer.write(chunk)
    total += len(chunk)
    time.sleep(0.004)          # about 15 MB/s: slower than the job, never stopped
'''


def test_a_reader_slower_than_the_job_gets_every_byte(scratch):
    """`headroom run -- job | slow-consumer` (a log shipper, tee to a slow disk): the reader
    is behind but reading. Without headroom the job would wait on its pipe and nothing would
    be lost; with it, the same. (headroom once dropped whatever did not fit its 16 MiB queue
    as soon as the reader fell behind, "its reader stopped reading; the longest wait was 0s".)"""
    out = scratch / "out.txt"
    # 40 MB of numbered lines, written as fast as the pipe takes them.
    job = "import sys\nsys.stdout.write(''.join('%09d\\n' % i for i in range(4000000)))\n"
    with open(out, "wb") as sink:
        reader = subprocess.Popen([PYTHON, "-c", SLOW_READER], stdin=subprocess.PIPE, stdout=sink)
        run = subprocess.run([HEADROOM, "run", "--only", "container", "--", PYTHON, "-c", job],
                             stdout=reader.stdin, stderr=subprocess.PIPE, text=True, timeout=300)
        reader.stdin.close()
        assert reader.wait(timeout=120) == 0
    assert run.returncode == 0, run.stderr
    assert "could not be written" not in run.stderr, run.stderr
    data = out.read_bytes()
    assert len(data) == 40_000_000, len(data)
    lines = data.split(b"\n")
    assert lines[0] == b"000000000" and lines[-2] == b"003999999" and len(lines) == 4_000_001
    # In order, none lost or repeated: every 99,991st line is where it must be.
    assert all(int(lines[at]) == at for at in range(0, 4_000_000, 99_991))


F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032


def test_the_readers_small_pipe_is_grown_so_output_moves_without_copies(scratch):
    """`headroom run -- job | reader`: the shell gives headroom a 64 KiB pipe, the job gets
    1 MiB. A splice moves only what the reader's pipe has room for and the rest went through
    headroom's queue, two copies of every byte of a fast writer. headroom grows the reader's
    pipe to the job's size, and every byte still arrives in order."""
    import fcntl
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, 65536)
    assert fcntl.fcntl(read_end, F_GETPIPE_SZ) == 65536
    job = "import sys\nsys.stdout.write(''.join('%09d\\n' % i for i in range(200000)))\n"
    run = subprocess.Popen([HEADROOM, "run", "--only", "container", "--", PYTHON, "-c", job],
                           stdout=write_end, stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    data = bytearray()
    grown = 0
    while chunk := os.read(read_end, 1 << 20):
        grown = max(grown, fcntl.fcntl(read_end, F_GETPIPE_SZ))
        data += chunk
    assert run.wait(timeout=120) == 0, run.stderr.read()
    assert grown == 1 << 20, grown
    lines = bytes(data).split(b"\n")
    assert len(lines) == 200_001 and all(int(lines[at]) == at for at in range(0, 200_000, 997))
    os.close(read_end)
