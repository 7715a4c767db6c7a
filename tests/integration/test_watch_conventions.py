"""watch as a user meets it (issue 16): one sign for the fill rate in --json and
/metrics, no time-to-full left over on an emptied disk, a --once that says
whether a disk fills, the argument errors every other command gives, and a
/metrics page that `promtool check metrics` accepts."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import HEADROOM, REPO, in_namespace
from watch_helpers import filesystem, free_port, json_lines, seconds, start_in_namespace, \
    wait_for

# Appends CHUNK bytes every PERIOD seconds for SECONDS, then (HOLD > 0) waits,
# removes the file and waits again; prints when it freed the space.
WRITER = r'''
import json, os, sys, time
path, chunk, period, seconds, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
fd = os.open(path + "/fill", os.O_WRONLY | os.O_CREAT, 0o644)
start = time.time()
n = 0
while time.time() - start < seconds:
    n += 1
    time.sleep(max(0.0, start + n * period - time.time()))
    os.write(fd, b"\1" * chunk)
os.close(fd)
freed = None
if hold > 0:
    time.sleep(hold)
    os.unlink(path + "/fill")
    freed = time.time()
    time.sleep(hold)
print(json.dumps({"start": start, "freed": freed}))
'''


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def _value(page: str, name: str, must_contain: str = "") -> float | None:
    for line in page.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if must_contain in line:
                return float(line.rsplit(" ", 1)[1])
    return None


def test_fill_rate_has_one_sign_in_json_and_metrics_and_ends_with_the_fill(scratch: Path):
    """The same sample in --json and /metrics: the same fill rate, positive while
    the disk fills. After the disk is emptied no sample keeps a time-to-full."""
    mnt = scratch / "mnt"
    mnt.mkdir()
    port = free_port()
    script = r'''
mount -t tmpfs -o size=64m headroom-conv "$MNT"
"$PY" -c "$WRITER" "$MNT" 262144 0.0625 6 2 >"$OUT/writer.json" &
exec "$HEADROOM" watch --json --interval 200ms --window 5s --dir "$MNT" --no-shm-stale \
    --no-stderr --listen "127.0.0.1:$PORT"
'''
    watch = start_in_namespace(script, scratch, {"MNT": str(mnt), "WRITER": WRITER,
                                                 "PORT": str(port)})
    pages = []
    try:
        written = scratch / "writer.json"
        deadline = time.time() + 20
        while time.time() < deadline and not (written.exists() and written.read_text()):
            try:
                pages.append(_scrape(port))
            except OSError:
                pass
            time.sleep(0.1)
    finally:
        watch.terminate()
        watch.wait(10)
    steps = json_lines((scratch / "watch.out").read_text())
    writer = json.loads((scratch / "writer.json").read_text())
    emptied = [step for step in steps if time_of(step) > writer["freed"] + 0.3]
    assert emptied, "no sample after the disk was emptied"
    for step in emptied:
        row = filesystem(step, str(mnt))
        assert row["used_percent"] < 1
        assert row["prediction"]["eta_seconds"] is None, \
            f"{row['used_percent']}% used and still 'full in {row['prediction']['eta_seconds']}s'"
    # JSON times are in whole milliseconds (truncated); the metric has the full time.
    by_time = {round(time_of(step) * 1000): step for step in steps}
    compared = 0
    for page in pages:
        stamp = _value(page, "headroom_sample_timestamp_seconds")
        metric = _value(page, "headroom_filesystem_fill_rate_bytes_per_second",
                        f'path="{mnt}"')
        step = by_time.get(int(stamp * 1000)) if stamp is not None else None
        if step is None or metric is None:
            continue
        prediction = filesystem(step, str(mnt))["prediction"]
        # (before issue 16 the key was rate_bytes_per_second, with the other sign)
        rate = prediction.get("fill_rate_bytes_per_second", prediction.get("rate_bytes_per_second"))
        assert rate == pytest.approx(metric, rel=1e-6, abs=1e-3), (rate, metric)
        if time_of(step) < writer["start"] + 5 and prediction["eta_seconds"] is not None:
            assert metric > 0, (metric, prediction)  # filling: positive in both
        compared += 1
    assert compared >= 10, f"only {compared} scrapes matched a JSON sample"


def time_of(step: dict) -> float:
    return seconds(step["time"])


def _fill_rate(prediction: dict) -> float | None:
    """Bytes per second filled (older builds had rate_bytes_per_second, negated)."""
    if "fill_rate_bytes_per_second" in prediction:
        return prediction["fill_rate_bytes_per_second"]
    rate = prediction.get("rate_bytes_per_second")
    return None if rate is None else -rate


def test_once_says_whether_a_disk_fills_now(scratch: Path):
    """--once takes its samples over a second: a disk being written says how
    soon it is full, an idle one 'not filling'; neither says 'collecting'."""
    mnt = scratch / "mnt"
    mnt.mkdir()
    script = r'''
mount -t tmpfs -o size=256m headroom-once "$MNT"
mkdir "$MNT/idle"
mount -t tmpfs -o size=16m headroom-idle "$MNT/idle"
"$PY" -c "$WRITER" "$MNT" 524288 0.0625 4 0 >/dev/null &
sleep 0.3
start=$(date +%s.%N)
"$HEADROOM" watch --once --json --dir "$MNT" --dir "$MNT/idle" --no-shm-stale --no-stderr \
    >"$OUT/once.json" || true
end=$(date +%s.%N)
echo "$start $end" >"$OUT/took"
"$HEADROOM" watch --once --dir "$MNT" --dir "$MNT/idle" --no-shm-stale --no-stderr \
    >"$OUT/once.txt" || true
wait
'''
    result = in_namespace(script, env={"MNT": str(mnt), "WRITER": WRITER, "OUT": str(scratch)})
    assert result.returncode == 0, result.stderr
    doc = json.loads((scratch / "once.json").read_text())
    filling = filesystem(doc, str(mnt))["prediction"]
    assert (_fill_rate(filling) or 0) > 4 << 20, filling  # 8 MiB/s written
    assert filling["eta_seconds"] is not None and filling["eta_seconds"] < 60, filling
    idle = filesystem(doc, f"{mnt}/idle")["prediction"]
    assert _fill_rate(idle) == 0 and idle["eta_seconds"] is None, idle
    start, end = map(float, (scratch / "took").read_text().split())
    assert end - start < 3, f"--once took {end - start:.1f}s"
    text = (scratch / "once.txt").read_text()
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith(str(mnt))}
    # The host's own /tmp row may still be collecting when other work writes there.
    assert not any("collecting" in row for row in rows.values()), text
    assert "not filling" in rows[f"{mnt}/idle"], text
    assert "full in: " in rows[str(mnt)] and "not filling" not in rows[str(mnt)], text


def _stderr(argv: list[str]) -> tuple[int, str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return result.returncode, result.stderr


@pytest.mark.parametrize("cli11_args, watch_args, expected, parse_error", [
    (["du", "--bogus"], ["--bogus"], "The following argument was not expected: --bogus", True),
    (["du", "/a", "/b"], ["--dir", "/a", "/b"], "The following argument was not expected: /b",
     True),
    (["du", "--top"], ["--interval"], "--{flag}: 1 required {type} missing", True),
    # A value checked with the config (flags and TOML together): one line, as
    # every config error of watch (docs/watch.md).
    (["du", "--top", "x"], ["--count", "x"], "Could not convert: --{flag} = x", False),
])
def test_watch_words_argument_errors_as_every_other_command(cli11_args, watch_args, expected,
                                                            parse_error):
    """headroom-watch keeps its small getopt parser, but a typo reads as CLI11
    words it for du, check or run: same sentence, same second line, exit 2."""
    flags = {"du": ("top", "UINT"), "watch": (watch_args[0].lstrip("-"), None)}
    code, err = _stderr([HEADROOM, *cli11_args])
    assert code == 2
    want = expected.format(flag=flags["du"][0], type=flags["du"][1])
    assert err.splitlines()[0] == f"headroom: {want}", err
    hint = err.splitlines()[1]
    lean = str(Path(HEADROOM).parent / "headroom-watch")
    for argv in ([HEADROOM, "watch", *watch_args], [lean, *watch_args]):
        code, err = _stderr(argv)
        assert code == 2, (argv, err)
        want = expected.format(flag=watch_args[0].lstrip("-"), type="DURATION")
        assert err.splitlines() == [f"headroom: {want}"] + ([hint] if parse_error else []), \
            (argv, err)


def test_watch_help_has_the_cli11_layout():
    du = subprocess.run([HEADROOM, "du", "--help"], capture_output=True, text=True).stdout
    watch = subprocess.run([HEADROOM, "watch", "--help"], capture_output=True, text=True).stdout
    du_lines, watch_lines = du.splitlines(), watch.splitlines()
    assert watch_lines[1] == "Usage: headroom watch [OPTIONS]"
    # Options: first, -h,--help first among them, with CLI11's words and column.
    help_line = next(line for line in du_lines if "--help" in line)
    assert watch_lines[watch_lines.index("Options:") + 1] == help_line
    assert "  -v,--verbose" in watch and "--version" in watch
    # A flag too long for the column has its help on the next line, at column 30.
    for line in watch_lines:
        if line.startswith("  --") and len(line.split("  ")[1]) >= 28:
            pytest.fail(f"help not in its column: {line!r}")
    for line in watch_lines:
        if line.startswith("  -") and line[30:31] not in ("", " ") and line[28:30] != "  ":
            pytest.fail(f"help not at column 30: {line!r}")


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_accepts_the_golden_and_a_live_metrics_page(headroom: str, scratch: Path):
    golden = (REPO / "tests/golden/metrics.prom").read_text()
    for name, page in (("golden", golden),):
        checked = subprocess.run(["promtool", "check", "metrics"], input=page,
                                 capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0 and checked.stdout + checked.stderr == "", \
            f"{name}: {checked.stdout}{checked.stderr}"
    port = free_port()
    watch = subprocess.Popen([headroom, "watch", "--listen", f"127.0.0.1:{port}", "--interval",
                              "200ms", "--no-stderr", "--no-shm-stale", "--dir", str(scratch)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: _has_rate(port), 15, "a page with a fill rate")
        page = _scrape(port)
    finally:
        watch.terminate()
        watch.wait(10)
    checked = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True,
                             text=True, timeout=30)
    assert checked.returncode == 0 and checked.stdout + checked.stderr == "", \
        checked.stdout + checked.stderr
    assert "_percent" not in page and "psi_full_avg10_ratio" in page


def _has_rate(port: int) -> bool:
    try:
        return "headroom_filesystem_fill_rate_bytes_per_second" in _scrape(port)
    except OSError:
        return False


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


@pytest.mark.parametrize("listen, reach", [
    ("[::1]:0", ["[::1]"]),
    ("[::]:0", ["[::1]", "127.0.0.1"]),  # all interfaces, both families (as Go exporters)
    ("127.0.0.1:0", ["127.0.0.1"]),
])
def test_listen_takes_ipv6_says_what_it_bound_and_serves_an_index(headroom: str, listen, reach):
    watch = subprocess.Popen([headroom, "watch", "--listen", listen, "--interval", "200ms",
                              "--no-stderr", "--no-shm-stale"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        line = watch.stderr.readline()
        host = listen.rsplit(":", 1)[0]
        assert line.startswith(f"headroom watch: serving /metrics on http://{host}:"), line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        assert port != 0, line
        for address in reach:
            wait_for(lambda: "headroom_samples_total" in _get(
                f"http://{address}:{port}/metrics")[2], 10, f"metrics on {address}")
            status, kind, body = _get(f"http://{address}:{port}/")
            assert status == 200 and kind.startswith("text/html"), (status, kind)
            assert '<a href="/metrics">' in body, body
            status, _, body = _get(f"http://{address}:{port}/nothing")
            assert status == 404 and "/metrics" in body
    finally:
        watch.terminate()
        watch.wait(10)
