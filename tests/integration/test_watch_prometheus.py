"""Real Prometheus (Debian's) scrapes `headroom watch --listen` every second
while the test fills a tmpfs in a private mount namespace; its HTTP API returns
the headroom series for that tmpfs with a falling fill-ETA."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import HEADROOM, PYTHON, require_root
from watch_helpers import free_port

WRITER = r'''
import os, sys, time
path = sys.argv[1]
start = time.time()
with open(path + "/fill", "wb", buffering=0) as out:
    for n in range(1, 49):  # 24 MiB of the 64 MiB tmpfs in 12 s
        time.sleep(max(0.0, start + n * 0.25 - time.time()))
        out.write(b"\1" * (512 << 10))
'''

SCRIPT = r'''
mount -t tmpfs -o size=64m headroom-prom "$MNT"
"$HEADROOM" watch --listen "127.0.0.1:$PORT" --interval 200ms --window 5s --dir "$MNT" \
    --no-shm-stale --no-stderr 2>"$OUT/watch.err" &
pid=$!
"$PY" -c "$WRITER" "$MNT"
sleep "$LINGER"
kill -TERM $pid
wait $pid
'''


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def _query(base: str, expr: str) -> list:
    return _get(f"{base}/api/v1/query?query={urllib.parse.quote(expr)}")["data"]["result"]


def _query_range(base: str, expr: str, seconds: int) -> list:
    end = time.time()
    params = urllib.parse.urlencode(
        {"query": expr, "start": end - seconds, "end": end, "step": "1"})
    return _get(f"{base}/api/v1/query_range?{params}")["data"]["result"]


@pytest.fixture
def prometheus(scratch: Path):
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus is not installed (scripts/install-deps)")
    headroom_port, web_port = free_port(), free_port()
    config = scratch / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: headroom\n    scrape_interval: 1s\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{headroom_port}']\n")
    log = open(scratch / "prometheus.log", "w")
    server = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={scratch / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{web_port}"], stdout=log, stderr=log)
    base = f"http://127.0.0.1:{web_port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/-/ready", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("prometheus did not become ready:\n" + (scratch / "prometheus.log").read_text())
        yield base, headroom_port
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


def test_prometheus_scrapes_tmpfs_series_with_falling_eta(scratch: Path, prometheus, headroom):
    require_root()
    base, port = prometheus
    mnt = scratch / "mnt"
    mnt.mkdir()
    env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON, MNT=str(mnt), OUT=str(scratch),
               PORT=str(port), WRITER=WRITER, LINGER="4")
    watch = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "bash", "-euo", "pipefail", "-c", SCRIPT],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(12)  # the writer is still filling: ETA published and falling
        selector = f'{{mountpoint="{mnt}",role="dir",fstype="tmpfs"}}'
        eta = _query_range(base, f"headroom_filesystem_fill_eta_seconds{selector}", 6)
        avail = _query(base, f"headroom_filesystem_avail_bytes{selector}")
        shm = _query(base, "headroom_shm_avail_bytes")
        probes = _query(base, 'headroom_probe_success{probe="filesystem"}')
        up = _query(base, 'up{job="headroom"}')
    finally:
        out, err = watch.communicate(timeout=30)
    assert watch.returncode == 0, err + (scratch / "watch.err").read_text()
    assert up and up[0]["value"][1] == "1", up
    assert len(avail) == 1, avail
    assert avail[0]["metric"]["path"] == str(mnt)
    assert 0 < float(avail[0]["value"][1]) < 64 << 20
    assert shm and shm[0]["metric"]["path"] == "/dev/shm", shm  # not dropped as a /dev mount
    assert probes and probes[0]["value"][1] == "1"
    assert len(eta) == 1, eta
    values = [float(v) for _, v in eta[0]["values"]]
    assert len(values) >= 4, values
    assert values[-1] < values[0], values  # falling as the tmpfs fills
    # 2 MiB/s into what is left of 64 MiB: between ~20 s and ~60 s from full.
    assert 10 < values[-1] < 60, values


def test_listen_address_is_checked_and_port_0_reports_the_bound_port(scratch: Path):
    # inet_aton would wrap 999 to 231 and listen on multicast 231.1.1.1.
    for address, message in [("999.1.1.1:9840", "has no IPv4 address"),
                             ("::1:9840", "IPv6 address without brackets"),
                             ("127.0.0.1:70000", "has no port 0-65535")]:
        result = subprocess.run([HEADROOM, "watch", "--listen", address, "--count", "1"],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 2, (address, result.stderr)
        assert message in result.stderr and "use IPV4:PORT" in result.stderr, result.stderr
    # A bare port is loopback; port 0 is a free one, and the log says which.
    watch = subprocess.Popen([HEADROOM, "watch", "--listen", "0", "--interval", "200ms",
                              "--no-stderr"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    try:
        line = watch.stderr.readline()
        assert line.startswith("headroom watch: serving /metrics on http://127.0.0.1:"), line
        url = line.split(" on ")[1].strip()
        assert not url.endswith(":0/metrics"), url
        # The line comes before the first sample: its series appear once it is taken.
        body = b""
        for _ in range(50):
            with urllib.request.urlopen(url, timeout=5) as response:
                body = response.read()
            if b"headroom_sample_duration_seconds" in body:
                break
            time.sleep(0.1)
        assert b"headroom_sample_duration_seconds" in body, body
    finally:
        watch.terminate()
        watch.wait(timeout=10)
