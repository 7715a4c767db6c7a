"""A whole alerting stack on this machine, as a site runs it: `headroom watch`
on a tmpfs in a private mount namespace, real Prometheus scraping it with the
shipped rules (deploy/prometheus/headroom.rules.yml), real Alertmanager routing
to a webhook receiver, and a writer that fills the tmpfs at a fixed rate from a
steady state, then frees it. measure() says when the page arrived against when
the disk was full, and when the resolution arrived against when it was freed.

Used by tests/integration/test_watch_alertmanager.py (scaled down, in the
suite) and bench/watch-e2e/run (the shipped settings; docs/watch.md)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from conftest import REPO
from watch_helpers import WebhookReceiver, free_port, start_in_namespace, wait_for

RULES = REPO / "deploy" / "prometheus" / "headroom.rules.yml"
ALERTMANAGER = REPO / "deploy" / "alertmanager" / "alertmanager.yml"


@dataclass
class Settings:
    """What the stack runs with; the defaults are the shipped ones."""
    interval: str = "5s"           # headroom watch --interval
    window: str = "10m"            # --window (eta_min_span is a quarter of it)
    scrape: str = "15s"            # Prometheus scrape_interval
    evaluation: str = "30s"        # Prometheus evaluation_interval (the rules' group: 30s)
    rule_for: str | None = None    # replaces HeadroomFilesystemFillingUp's `for` (None: shipped 1m)
    # Alertmanager: deploy/alertmanager/alertmanager.yml as shipped, its receivers
    # pointed at the test's webhook; these replace its routes' timings when set.
    group_wait: str | None = None
    group_interval: str | None = None
    size_mib: int = 1024           # the tmpfs
    steady_seconds: float = 120    # nothing written before the fill
    fill_seconds: float = 600      # from empty to full at a fixed rate
    hold_seconds: float = 30       # full for this long, then freed
    linger_seconds: float = 120    # after freeing, waiting for the resolution


@dataclass
class Measurement:
    settings: Settings
    fill_started: float = 0
    full: float = 0
    freed: float = 0
    page: float | None = None           # Alertmanager's webhook: HeadroomFilesystemFillingUp firing
    resolved: float | None = None       # ... and resolved
    daemon_page: float | None = None    # headroom's own webhook: filesystem_fill_eta firing
    daemon_resolved: float | None = None
    prometheus_firing: float | None = None    # Prometheus's rule state: first evaluation firing
    prometheus_resolved: float | None = None  # ... first evaluation no longer firing after that
    notes: list[str] = field(default_factory=list)

    @property
    def page_before_full(self) -> float | None:
        return None if self.page is None else self.full - self.page

    @property
    def resolve_after_free(self) -> float | None:
        return None if self.resolved is None else self.resolved - self.freed


SCRIPT = r'''
mount -t tmpfs -o size="${SIZE_MIB}m" headroom-e2e "$MNT"
"$HEADROOM" watch --listen "127.0.0.1:$PORT" --interval "$INTERVAL" --window "$WINDOW" \
    --dir "$MNT" --no-shm-stale --repeat 0 --webhook "$HOOK" 2>"$OUT/watch.err" &
watch=$!
"$PY" -c "$WRITER" "$MNT" "$OUT/times" &
writer=$!
# Stopped early (the harness interrupted): take the watch and the writer along.
trap 'kill $watch $writer 2>/dev/null || true; exit 143' TERM INT
while [ ! -e "$OUT/done" ]; do sleep 0.2; done
wait $writer
kill -TERM $watch
wait $watch
'''

# Steady, then a fixed rate in 4 writes a second until the tmpfs is full, then
# full for a while, then freed. Times (wall clock) go to argv[2].
WRITER = r'''
import errno, os, sys, time
mnt, times = sys.argv[1], sys.argv[2]
size = int(os.environ["SIZE_MIB"]) << 20
steady, fill, hold = (float(os.environ[k]) for k in ("STEADY", "FILL", "HOLD"))
def note(what):
    with open(times, "a") as out: out.write(f"{what} {time.time()}\n")
time.sleep(steady)
note("fill_started")
chunk = int(size / fill / 4)
start = time.time()
with open(mnt + "/fill", "wb", buffering=0) as out:
    n = 0
    while True:
        n += 1
        time.sleep(max(0.0, start + n * 0.25 - time.time()))
        try:
            out.write(b"\1" * chunk)
        except OSError as error:
            if error.errno != errno.ENOSPC: raise
            break
        if os.statvfs(mnt).f_bavail == 0: break
note("full")
time.sleep(hold)
os.unlink(mnt + "/fill")
note("freed")
'''


def _duration(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    assert match, text
    return float(match[1]) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match[2]]


def _rules(settings: Settings, path: Path) -> None:
    text = RULES.read_text()
    if settings.rule_for is not None:
        text = re.sub(r"(- alert: HeadroomFilesystemFillingUp\n\s+expr: [^\n]+\n\s+for: )\S+",
                      rf"\g<1>{settings.rule_for}", text)
    # The recording group's own interval would override a faster evaluation.
    text = text.replace("    interval: 30s\n", f"    interval: {settings.evaluation}\n")
    path.write_text(text)


def _alertmanager(settings: Settings, hook: str, path: Path) -> None:
    """The shipped config, every receiver paging `hook`, timings replaced when set."""
    config = yaml.safe_load(ALERTMANAGER.read_text())
    for receiver in config["receivers"]:
        for webhook in receiver.get("webhook_configs", []):
            webhook["url"] = hook
            webhook["send_resolved"] = True

    def retime(route: dict) -> None:
        for key in ("group_wait", "group_interval"):
            if getattr(settings, key) is not None and (key in route or route is config["route"]):
                route[key] = getattr(settings, key)
        for child in route.get("routes", []):
            retime(child)
    retime(config["route"])
    path.write_text(yaml.safe_dump(config))


def _prometheus_alert_times(prom_port: int, path: Path, start: float,
                            end: float) -> tuple[float | None, float | None]:
    """When Prometheus's HeadroomFilesystemFillingUp for `path` first fired, and when it
    stopped."""
    query = urllib.parse.urlencode({
        "query": f'ALERTS{{alertname="HeadroomFilesystemFillingUp",alertstate="firing",'
                 f'path="{path}"}}',
        "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "1"})
    url = f"http://127.0.0.1:{prom_port}/api/v1/query_range?{query}"
    with urllib.request.urlopen(url, timeout=10) as response:
        result = json.loads(response.read())["data"]["result"]
    times = sorted(float(at) for series in result for at, _ in series["values"])
    if not times:
        return None, None
    # Prometheus ends ALERTS with a stale marker when the alert resolves: at a step of
    # 1 s, the first step without it (after the first run of firing steps) is then.
    stopped = next((a + 1 for a, b in zip(times, times[1:]) if b - a > 1.5), None)
    if stopped is None and times[-1] + 1 < end:
        stopped = times[-1] + 1
    return times[0], stopped


def _ready(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
        return True
    except OSError:
        return False


def measure(scratch: Path, settings: Settings) -> Measurement:
    for tool in ("prometheus", "prometheus-alertmanager"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed (scripts/install-deps)")
    result = Measurement(settings)
    headroom_port, prom_port, am_port = free_port(), free_port(), free_port()
    mnt = scratch / "mnt"
    mnt.mkdir()
    rules = scratch / "headroom.rules.yml"
    _rules(settings, rules)
    processes: list[subprocess.Popen] = []
    log = open(scratch / "stack.log", "w")
    offset = time.time() - time.monotonic()  # the receiver stamps monotonic times
    with WebhookReceiver() as hook:
        _alertmanager(settings, f"{hook.base}/alertmanager", scratch / "alertmanager.yml")
        (scratch / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {settings.scrape}\n"
            f"  evaluation_interval: {settings.evaluation}\n"
            f"rule_files: ['{rules}']\n"
            f"alerting:\n  alertmanagers:\n    - static_configs:\n"
            f"        - targets: ['127.0.0.1:{am_port}']\n"
            f"scrape_configs:\n  - job_name: headroom\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{headroom_port}']\n")
        try:
            processes.append(subprocess.Popen(
                ["prometheus-alertmanager", f"--config.file={scratch / 'alertmanager.yml'}",
                 f"--storage.path={scratch / 'am'}", f"--web.listen-address=127.0.0.1:{am_port}",
                 "--cluster.listen-address="], stdout=log, stderr=log))
            processes.append(subprocess.Popen(
                ["prometheus", f"--config.file={scratch / 'prometheus.yml'}",
                 f"--storage.tsdb.path={scratch / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{prom_port}"], stdout=log, stderr=log))
            for url in (f"http://127.0.0.1:{am_port}/-/ready",
                        f"http://127.0.0.1:{prom_port}/-/ready"):
                wait_for(lambda url=url: _ready(url), 30, url)
            watch = start_in_namespace(SCRIPT, scratch, {
                "MNT": str(mnt), "PORT": str(headroom_port), "INTERVAL": settings.interval,
                "WINDOW": settings.window, "HOOK": f"{hook.base}/headroom",
                "SIZE_MIB": str(settings.size_mib), "STEADY": str(settings.steady_seconds),
                "FILL": str(settings.fill_seconds), "HOLD": str(settings.hold_seconds),
                "WRITER": WRITER})
            processes.append(watch)
            times = scratch / "times"
            total = settings.steady_seconds + settings.fill_seconds * 1.5 + settings.hold_seconds
            wait_for(lambda: times.exists() and "freed" in times.read_text(), total + 60,
                     "the writer to fill and free the tmpfs")

            def resolved() -> bool:
                return any(p["status"] == "resolved" and _fill_alert(p, mnt)
                           for p in _payloads(hook, "/alertmanager"))

            try:
                wait_for(resolved, settings.linger_seconds, "Alertmanager's resolution")
            except AssertionError:
                result.notes.append(f"no resolution within {settings.linger_seconds} s")
            started = float((scratch / "times").read_text().split()[1])
            time.sleep(2 * _duration(settings.evaluation))  # its resolution is in the TSDB
            result.prometheus_firing, result.prometheus_resolved = _prometheus_alert_times(
                prom_port, mnt, started - settings.steady_seconds, time.time())
            (scratch / "done").touch()
            watch.wait(timeout=30)
        finally:
            (scratch / "done").touch()
            for process in reversed(processes):
                if process.poll() is None:
                    process.terminate()
                    process.wait(timeout=30)
            log.close()
        for line in (scratch / "times").read_text().splitlines():
            what, at = line.split()
            setattr(result, what, float(at))
        for body, when, _ in hook.on("/alertmanager"):
            payload = json.loads(body)
            if not _fill_alert(payload, mnt):
                continue
            if payload["status"] == "firing" and result.page is None:
                result.page = when + offset
            if payload["status"] == "resolved" and result.resolved is None:
                result.resolved = when + offset
        for body, when, _ in hook.on("/headroom"):
            event = json.loads(body)
            if event["rule"] != "filesystem_fill_eta" or event["subject"] != str(mnt):
                continue
            if event["kind"] == "firing" and result.daemon_page is None:
                result.daemon_page = when + offset
            if event["kind"] == "resolved" and result.daemon_resolved is None:
                result.daemon_resolved = when + offset
    return result


def _payloads(hook: WebhookReceiver, path: str) -> list[dict]:
    return [json.loads(body) for body, _, _ in hook.on(path)]


def _fill_alert(payload: dict, path: Path) -> bool:
    """An Alertmanager notification of the tmpfs's HeadroomFilesystemFillingUp (not of
    /tmp or /dev/shm, which watch also watches and other jobs on the host may fill)."""
    return any(a["labels"].get("alertname") == "HeadroomFilesystemFillingUp" and
               a["labels"].get("path") == str(path) for a in payload.get("alerts", []))


def describe(m: Measurement) -> str:
    def since(at: float | None, origin: float) -> str:
        return "never" if at is None else f"{at - origin:+.1f} s"
    return (f"fill started {m.fill_started:.0f}, full after {m.full - m.fill_started:.1f} s; "
            f"Alertmanager page {since(m.page, m.full)} from full, "
            f"headroom's own webhook {since(m.daemon_page, m.full)}; "
            f"Prometheus firing {since(m.prometheus_firing, m.full)} from full; "
            f"resolved {since(m.resolved, m.freed)} after freeing "
            f"(headroom's own {since(m.daemon_resolved, m.freed)}, "
            f"Prometheus's {since(m.prometheus_resolved, m.freed)})"
            + ("; " + "; ".join(m.notes) if m.notes else ""))
