"""headroom.Monitor: `headroom watch` in a background thread of the training script.

Each sample is taken by the core's Watcher (src/core/alerts/watcher.h: sample ->
history -> fill-rate prediction -> alert rules with hysteresis) in C++ with the
GIL released, so the training loop keeps running while the filesystems are read.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional

from . import _headroom
from ._args import (check_bool, check_callable, check_count, check_environment, check_percent,
                    check_seconds)
from .checks import Dirs, Size, parse_size, resolve_dirs
from .report import Verdict

_log = logging.getLogger("headroom")


@dataclass(frozen=True)
class Alert:
    """One alert event of the watch rules (docs/json.md, watch alerts)."""

    kind: str  #: "firing", "repeat" or "resolved"
    rule: str  #: "filesystem_usage", "filesystem_fill_eta", "checkpoint_space", "memory_psi", ...
    subject: str  #: the watched path, "memory", or the cgroup
    severity: str  #: "warn" or "critical"
    summary: str  #: one line for people, e.g. "/ckpt full in 12m (91.0% used)"
    value: float = 0.0  #: the measured value that tripped
    threshold: float = 0.0  #: what it was compared to
    time: str = ""  #: RFC 3339, of the sample
    started: str = ""  #: RFC 3339, when the alert first fired
    labels: Dict[str, str] = field(default_factory=dict)
    #: The loop should save and stop: the next checkpoint will not fit (checkpoint_space
    #: critical; without ckpt_bytes, a watched dir critically full or filling). Every other
    #: alert (/dev/shm, the temp dir, memory, fds) is a warning: the job goes on.
    stop: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Alert":
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})

    def __str__(self) -> str:
        return f"[{self.severity}] {self.rule} {self.subject}: {self.summary}"


@dataclass(frozen=True)
class MonitorStatus:
    """What the monitor knows now."""

    ok: bool  #: no alert asks the loop to save and stop (see Monitor.ok)
    running: bool
    samples: int  #: samples taken so far
    alerts: List[Alert]  #: alerts firing now, worst first
    last_sample: Optional[Dict[str, Any]]  #: the newest sample (the JSON of `watch --json`)
    error: Optional[str]  #: why the last sample failed, if it did


class Monitor:
    """Watches the job's directories, the temp dir and /dev/shm from a background thread.

    Args:
        dirs: directories to watch (checkpoints, logs); default: the working directory.
        interval: seconds between samples.
        on_alert: called as on_alert(alert) from the monitor thread for each firing,
            repeat and resolved event (see Alert.kind). Exceptions it raises are logged.
        ckpt_bytes, keep: enables the checkpoint rule: will the next save of that size fit,
            counting what retention with `keep` frees (the rule of check and
            save_checkpoint)?
        warn_percent, critical_percent: use% of a filesystem that alerts.
        eta_horizon: seconds; a filesystem predicted to be full sooner alerts.
        window: seconds of samples the predictions look back on; a time-to-full alert
            needs a trend of a quarter of it (150 s by default).
        temp_dir, shm: also watch $TMPDIR (or /tmp) and /dev/shm.
        clear_samples: consecutive clear samples before an alert resolves.
        repeat_interval: seconds between repeats of an alert that keeps firing; 0: never.

    Use as a context manager, or call start() and stop(). `ok` (also `ok()`) is False
    while an alert asks the loop to save and stop: the next checkpoint will not fit.
    """

    def __init__(self, dirs: Dirs = None, *, interval: float = 10.0,
                 on_alert: Optional[Callable[[Alert], Any]] = None,
                 ckpt_bytes: Optional[Size] = None, keep: int = 1,
                 warn_percent: float = 85.0, critical_percent: float = 95.0,
                 eta_horizon: float = 3600.0, window: float = 600.0, temp_dir: bool = True,
                 shm: bool = True, clear_samples: int = 3, repeat_interval: float = 3600.0,
                 environment: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None):
        interval = check_seconds(interval, "interval")
        check_callable(on_alert, "on_alert")
        keep = check_count(keep, "keep", 1)
        # Ranges and warn <= critical: the core's rule, checked when the watcher is made.
        warn_percent = check_percent(warn_percent, "warn_percent")
        critical_percent = check_percent(critical_percent, "critical_percent")
        eta_horizon = check_seconds(eta_horizon, "eta_horizon")
        window = check_seconds(window, "window")
        check_bool(temp_dir, "temp_dir")
        check_bool(shm, "shm")
        clear_samples = check_count(clear_samples, "clear_samples", 1)
        repeat_interval = check_seconds(repeat_interval, "repeat_interval", allow_zero=True)
        checkpoint_bytes = parse_size(ckpt_bytes, "ckpt_bytes")
        if checkpoint_bytes == 0:
            raise ValueError("ckpt_bytes must be positive (or None to turn the checkpoint rule off)")
        env = check_environment(environment)
        cwd = cwd or os.getcwd()
        self.interval = interval
        self.on_alert = on_alert
        self._watcher = _headroom.Watcher(
            resolve_dirs(dirs, cwd), env, cwd, temp_dir=temp_dir, shm=shm, shm_stale=False,
            warn_percent=warn_percent, critical_percent=critical_percent,
            eta_horizon_seconds=eta_horizon, checkpoint_bytes=checkpoint_bytes, keep=keep,
            clear_samples=clear_samples, repeat_interval_seconds=repeat_interval,
            window_seconds=window)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._samples = 0
        self._alerts: List[Alert] = []
        self._last: Optional[Dict[str, Any]] = None
        self._error: Optional[str] = None

    def sample(self) -> List[Alert]:
        """Takes one sample now (in the caller's thread) and returns its alert events.

        start() calls this from the monitor thread; call it yourself only when the
        monitor is not running.
        """
        try:
            step = json.loads(self._watcher.step())
            active = [Alert.from_dict(item) for item in json.loads(self._watcher.active())]
        except (OSError, ValueError) as error:
            with self._lock:
                self._error = str(error)
            return []
        active.sort(key=lambda alert: (not alert.stop, alert.severity != "critical"))
        events = [Alert.from_dict(item) for item in step.get("alerts", [])]
        with self._lock:
            self._samples += 1
            self._last = step
            self._alerts = active
            self._error = None
        for event in events:
            self._notify(event)
        return events

    def _notify(self, alert: Alert) -> None:
        if self.on_alert is None:
            return
        try:
            self.on_alert(alert)
        except Exception:  # a broken callback must not stop the monitoring
            _log.exception("headroom.Monitor: on_alert raised for %s", alert)

    def _run(self) -> None:
        next_time = time.monotonic()
        while not self._stop.is_set():
            self.sample()
            next_time += self.interval
            self._stop.wait(max(0.0, next_time - time.monotonic()))

    def start(self) -> "Monitor":
        """Starts the monitor thread (a daemon thread); the first sample is taken at once."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="headroom-monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: Optional[float] = None) -> None:
        """Stops the thread and waits for the sample in progress to finish."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> "Monitor":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def ok(self) -> Verdict:
        """False while an alert asks the loop to save and stop (Alert.stop): the next
        checkpoint will not fit in a watched dir. A full /dev/shm, temp dir or memory
        only warns (on_alert, status().alerts). Both `if not monitor.ok:` and
        `if not monitor.ok():` work."""
        with self._lock:
            return Verdict(not any(alert.stop for alert in self._alerts))

    def status(self) -> MonitorStatus:
        """The alerts firing now, the newest sample and the sample count."""
        with self._lock:
            return MonitorStatus(
                ok=not any(alert.stop for alert in self._alerts),
                running=self._thread is not None and self._thread.is_alive(),
                samples=self._samples, alerts=list(self._alerts), last_sample=self._last,
                error=self._error)
