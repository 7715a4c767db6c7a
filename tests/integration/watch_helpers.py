"""Helpers of the watch integration tests: a loopback webhook receiver, free
ports, reading `headroom watch --json` lines, and a watch started in a private
mount namespace in the background."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from conftest import HEADROOM, PYTHON, require_root


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class WebhookReceiver:
    """An HTTP server on 127.0.0.1 that records every POST: `requests` holds
    (path, body, monotonic time, Content-Type), `events` the JSON bodies that
    got a 200. The first `fail_first[path]` requests to a path get a 503."""

    def __init__(self, fail_first: dict[str, int] | None = None) -> None:
        self.events: list[dict] = []
        self.requests: list[tuple[str, bytes, float, str]] = []
        self.fail_first = dict(fail_first or {})
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.requests.append((self.path, body, time.monotonic(),
                                              self.headers.get("Content-Type", "")))
                    left = receiver.fail_first.get(self.path, 0)
                    receiver.fail_first[self.path] = left - 1
                    if left <= 0:
                        receiver.events.append(json.loads(body))
                self.send_response(503 if left > 0 else 200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.base}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "WebhookReceiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def of(self, rule: str, subject: str | None = None) -> list[dict]:
        with self.lock:
            return [e for e in self.events
                    if e["rule"] == rule and (subject is None or e["subject"] == subject)]

    def on(self, path: str) -> list[tuple[bytes, float, str]]:
        """(body, time, Content-Type) of every request to `path`, in order."""
        with self.lock:
            return [(body, when, kind) for p, body, when, kind in self.requests if p == path]


class HangingServer:
    """Accepts connections and never answers: a webhook that hangs."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.held: list[socket.socket] = []
        self.stop = False
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.held.append(conn)
            except OSError:
                continue

    def __enter__(self) -> "HangingServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop = True
        self.thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def filesystem(step: dict, path: str) -> dict:
    for item in step["filesystems"]:
        if item["path"] == path:
            return item
    raise AssertionError(f"{path} not in {[f['path'] for f in step['filesystems']]}")


def start_in_namespace(script: str, out: Path, env: dict, args: list[str] = ()) -> subprocess.Popen:
    """Starts a bash script in a private mount namespace without waiting.

    A script ending in `exec "$HEADROOM" watch ...` makes the Popen's pid the
    watch pid (unshare -m and bash exec, they do not fork), so the test can
    signal it; its mounts vanish when it exits. stdout and stderr go to
    out/watch.out and out/watch.err; `args` are the script's "$@".
    """
    require_root()
    full_env = dict(os.environ, HEADROOM=HEADROOM, PY=PYTHON, PYTHONUNBUFFERED="1", OUT=str(out))
    full_env.update(env)
    with open(out / "watch.out", "w") as stdout, open(out / "watch.err", "w") as stderr:
        return subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "bash", "-euo", "pipefail", "-c", script,
             "bash", *args], env=full_env, stdout=stdout, stderr=stderr)


def running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(predicate, timeout: float, what: str) -> None:
    """Polls `predicate` every 50 ms; fails naming `what` after `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def seconds(text: str) -> float:
    """Unix time of an RFC 3339 time from the JSON output."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
