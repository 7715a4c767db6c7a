"""The exporter beside the rest of a monitoring stack: an idle TCP client does
not block scrapes (issue 15, item 13), series join node_exporter's on
(instance, mountpoint, device) after the relabeling docs/watch.md gives, and a
node agent under --root labels a host dir with the host's mount (issue 21)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import HEADROOM, REPO, require_root
from watch_helpers import free_port, wait_for


def _scrape(port: int, timeout: float) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as response:
        return response.read()


def _serving(port: int) -> bool:
    try:
        return b"headroom_samples_total" in _scrape(port, 5)
    except OSError:
        return False


def test_idle_and_slow_clients_do_not_block_scrapes(headroom: str):
    port = free_port()
    watch = subprocess.Popen([headroom, "watch", "--listen", f"127.0.0.1:{port}", "--interval",
                              "200ms", "--no-stderr", "--no-shm-stale"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    idle: list[socket.socket] = []
    try:
        wait_for(lambda: _serving(port), 10, "the first scrape")
        # Connections that never send a request and ones that send half of one: a
        # port scanner, half-open connections (4 used to delay a scrape by 2 s, 16
        # by 8 s; 1 by 30 s before that).
        for partial in (b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n") * 4:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(partial)
            idle.append(sock)
        time.sleep(0.2)  # all are in the server's hands now
        for _ in range(3):
            started = time.monotonic()
            body = _scrape(port, 10)
            took = time.monotonic() - started
            assert b"headroom_samples_total" in body
            assert took < 1.0, f"a scrape waited {took:.1f}s behind idle connections"
        # And the server lets go of them: a request that has not come in 2 s is dropped.
        deadline = time.monotonic() + 4.0
        for sock in idle:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                while sock.recv(4096):  # an error page, if any, then the close
                    pass
            except ConnectionResetError:
                pass
            except TimeoutError:
                pytest.fail("an idle connection was still open after 4 s")
    finally:
        for sock in idle:
            sock.close()
        watch.terminate()
        watch.wait(timeout=10)


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def test_series_join_node_exporters_on_instance_mountpoint_and_device(scratch: Path,
                                                                       headroom: str):
    for tool in ("prometheus", "prometheus-node-exporter"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (scripts/install-deps)")
    headroom_port, node_port, web_port = free_port(), free_port(), free_port()
    # The relabeling of docs/watch.md: both jobs' instance becomes the host part of
    # the address, so the ports (9840, 9100) no longer keep them apart.
    relabel = ("    relabel_configs:\n"
               "      - source_labels: [__address__]\n"
               "        regex: '(.+):\\d+'\n"
               "        target_label: instance\n")
    config = scratch / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n"
        "scrape_configs:\n"
        f"  - job_name: headroom\n    static_configs:\n      - targets: ['127.0.0.1:{headroom_port}']\n"
        + relabel +
        f"  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{node_port}']\n"
        + relabel)
    processes = []
    log = open(scratch / "stack.log", "w")
    try:
        processes.append(subprocess.Popen(
            ["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{node_port}",
             "--collector.disable-defaults", "--collector.filesystem"], stdout=log, stderr=log))
        processes.append(subprocess.Popen(
            [headroom, "watch", "--listen", f"127.0.0.1:{headroom_port}", "--interval", "1s",
             "--dir", str(REPO), "--no-stderr", "--no-shm-stale"], stdout=log, stderr=log))
        processes.append(subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={scratch / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{web_port}"], stdout=log, stderr=log))
        base = f"http://127.0.0.1:{web_port}"
        join = ('headroom_filesystem_avail_bytes{role="dir"} - on(instance, mountpoint, device, '
                'fstype) node_filesystem_avail_bytes')
        result: list = []

        def joined() -> bool:
            nonlocal result
            try:
                result = _get(f"{base}/api/v1/query?query={urllib.parse.quote(join)}")["data"][
                    "result"]
            except OSError:
                return False
            return bool(result)

        wait_for(joined, 30, "the join of headroom's and node_exporter's series")
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=10)
        log.close()
    assert len(result) == 1, result
    labels = result[0]["metric"]
    assert labels["instance"] == "127.0.0.1" and labels["device"].startswith("/"), labels
    # The same filesystem seen by both a second apart: nearly equal.
    assert abs(float(result[0]["value"][1])) < 1 << 30, result


ROOT = r'''
mount -t tmpfs -o size=16m headroom-hostdisk "$DATA"   # the node's data disk
mkdir -p "$ROOT/proc" "$ROOT/sys" "$ROOT/dev/shm" "$ROOT$DATA"
mount --bind /proc "$ROOT/proc"
mount --bind "$DATA" "$ROOT$DATA"                      # the DaemonSet's hostPath mount
# The pod: a mount namespace of its own where only $ROOT$DATA is the disk.
unshare -m --propagation private bash -c '
  umount -l "$DATA"
  "$HEADROOM" --root "$ROOT" watch --once --json --dir "$DATA" --no-shm-stale >"$OUT/pod.json"
' || true
'''


def test_a_node_agent_under_root_labels_a_host_dir_with_the_hosts_mount(scratch: Path):
    require_root()
    data, root = scratch / "data", scratch / "root"
    data.mkdir()
    env = dict(os.environ, HEADROOM=HEADROOM, DATA=str(data), ROOT=str(root), OUT=str(scratch))
    # A pid namespace of its own: its pid 1 (this script's shell) is "the node's init".
    result = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "--propagation",
                             "private", "bash", "-euo", "pipefail", "-c", ROOT],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    sample = json.loads((scratch / "pod.json").read_text())
    disk = [f for f in sample["filesystems"] if f["path"] == str(data)][0]
    assert disk["ok"], disk
    assert disk["mountpoint"] == str(data) and disk["fstype"] == "tmpfs", disk
    assert disk["device"] == "headroom-hostdisk", disk
