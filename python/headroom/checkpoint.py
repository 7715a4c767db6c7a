"""headroom.save_checkpoint: a torch.save that never destroys the last good checkpoint.

A plain `torch.save(state, "ckpt.pt")` on a full disk truncates "ckpt.pt" first
and then fails half-way: the job loses its only checkpoint. Here the save goes
to a temporary file in the same directory, is fsynced, renamed over the target
atomically (rename(2) within one filesystem), and the directory is fsynced so
the rename survives a crash. What the series is, which of its checkpoints are
complete, what retention removes and whether the next save fits are decided by
the core's planner, the one `headroom prune` uses (src/core/prune/).
"""
from __future__ import annotations

import errno
import importlib
import json
import logging
import os
import signal
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from . import _headroom
from .checks import format_bytes

PathLike = Union[str, "os.PathLike[str]"]

_log = logging.getLogger("headroom")
_TEMP_MARK = ".headroom-tmp-"  # the core's kSaveTempMarker: prune lists these temps
_last_size: Dict[Tuple[str, str], int] = {}  # (directory, series) -> bytes of the last save
_last_size_lock = threading.Lock()


class DiskFullError(OSError):
    """The checkpoint cannot fit (errno ENOSPC); no complete checkpoint was lost.

    Attributes: filename (the target), needed_bytes (free space the save asked for,
    0 when the disk filled mid-write), avail_bytes (free space when it was raised),
    removed (paths this save removed before giving up: temps of dead saves, and
    older checkpoints retention would have removed after this save anyway).
    """

    def __init__(self, path: str, needed_bytes: int, avail_bytes: int, detail: str,
                 removed: Tuple[str, ...] = ()):
        super().__init__(errno.ENOSPC, detail, path)
        self.needed_bytes = needed_bytes
        self.avail_bytes = avail_bytes
        self.removed = tuple(removed)

    def __reduce__(self) -> Tuple[Any, ...]:
        # OSError pickles as type(*args) with args (errno, strerror): not this signature.
        return (type(self), (self.filename, self.needed_bytes, self.avail_bytes, self.strerror,
                             self.removed))


#: The name before PEP 8's "Error" suffix; the same class.
DiskFull = DiskFullError


def series_template(path: PathLike, directory: bool = False) -> str:
    """The series a checkpoint name belongs to: its name with the step, epoch and metric
    values replaced, as `headroom prune` groups them.

    "step_000100.pt" -> "step_{N}.pt", "fold1_epoch_002.pt" -> "fold1_epoch_{E}.pt" (not the
    series of "fold0_epoch_009.pt"), "epoch=3-step=400.ckpt" -> "epoch={E}-step={N}.ckpt";
    "resnet50.pt" has no step and is a series of its own.
    """
    return str(_headroom.series_template(Path(os.fspath(path)).name, directory))


def retention_pattern(path: PathLike) -> str:
    """Deprecated name of series_template()."""
    return series_template(path)


def _avail_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def _is_enospc(error: BaseException) -> bool:
    """A full disk: OSError(ENOSPC or EDQUOT) anywhere in the chain, or the words of one."""
    seen = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "No space left on device" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


class _Abandoned(Exception):
    """The save was abandoned on SIGINT; never leaves save_checkpoint."""


class _GuardedWriter:
    """The file object torch.save writes to: a failed write is remembered, not raised.

    torch 1.13's zip writer must never see a write fail: it raises RuntimeError
    ("unexpected pos 320 vs 248"), and then its destructor raises again while
    finishing the archive, which calls std::terminate and aborts the whole Python
    process (measured: exit by SIGABRT). So after the first error the rest of the
    archive is dropped, torch.save returns normally, and finish() raises the error.
    abandon() drops the rest the same way (a Ctrl-C during the save).
    """

    def __init__(self, stream: Any):
        self._stream = stream
        self._error: Optional[BaseException] = None

    def write(self, data: Any) -> int:
        size = memoryview(data).nbytes
        if self._error is None:
            try:
                self._stream.write(data)
            except OSError as error:
                self._error = error
        return size

    def flush(self) -> None:
        if self._error is None:
            try:
                self._stream.flush()
            except OSError as error:
                self._error = error

    def abandon(self) -> None:
        if self._error is None:
            self._error = _Abandoned()

    def finish(self) -> None:
        """Flushes and fsyncs the file; raises the first write error, if any."""
        self.flush()
        if self._error is None:
            try:
                os.fsync(self._stream.fileno())
            except OSError as error:
                self._error = error
        if self._error is not None:
            raise self._error


class _DeferredSigint:
    """Holds SIGINT back while a save runs, then delivers it as its handler would.

    A KeyboardInterrupt raised inside torch.save unwinds through torch's C++ zip
    writer, whose destructor then throws again: std::terminate, SIGABRT, exit 134
    (measured with torch 1.13, 8 of 10 Ctrl-C 0.05-0.3 s into a 384 MiB save). Here
    the handler only records the signal and tells the writer to drop the rest; the
    save is abandoned cleanly (temp removed) and the signal is then handled as the
    program asked: KeyboardInterrupt by default, or the program's own handler.
    Only the main thread receives signals in Python; elsewhere this does nothing.
    """

    def __init__(self, on_signal: Callable[[], None]):
        self._on_signal = on_signal
        self._previous: Any = None
        self._installed = False
        self.frame: Any = None
        self.received = False

    def __enter__(self) -> "_DeferredSigint":
        if threading.current_thread() is threading.main_thread():
            try:
                self._previous = signal.signal(signal.SIGINT, self._handle)
                self._installed = True
            except (ValueError, OSError):  # not the main interpreter, or no signals here
                self._installed = False
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.received = True
        self.frame = frame
        self._on_signal()

    def restore(self) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def __exit__(self, *exc: Any) -> None:
        self.restore()

    def deliver(self) -> None:
        """Acts on a held-back SIGINT as the previous handler would have."""
        if not self.received:
            return
        previous = self._previous
        if previous is signal.SIG_IGN:
            return
        if previous is signal.SIG_DFL or previous is None:
            os.kill(os.getpid(), signal.SIGINT)
            return
        previous(signal.SIGINT, self.frame)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _validate(keep: Any, pattern: Any) -> None:
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ValueError(f"keep must be a positive int or None (keep all), got {keep!r}")
    if pattern is not None and (not isinstance(pattern, str) or not pattern or "/" in pattern):
        raise ValueError(f"pattern must be a glob of names in the checkpoint's directory such "
                         f"as 'ckpt-*.pt', got {pattern!r}")


class _Series:
    """The target's series in its directory, planned by the core (headroom prune's planner)."""

    def __init__(self, directory: Path, target: Path, pattern: Optional[str]):
        self.directory = directory
        self.template = "" if pattern else series_template(target)
        self.pattern = pattern or ""

    def plan(self, keep_last: int, just_saved: str = "") -> Tuple[Any, Dict[str, Any]]:
        plan = _headroom.plan_series(str(self.directory), keep_last, series=self.template,
                                     glob=self.pattern, just_saved=just_saved)
        return plan, json.loads(plan.json())

    def remove(self, plan: Any, names: List[str]) -> List[str]:
        """Removes planned deletions; returns the paths removed (skips are logged)."""
        if not names:
            return []
        removed = []
        for outcome in json.loads(plan.remove(names)):
            path = str(self.directory / outcome["name"])
            if outcome["outcome"] == "removed":
                removed.append(path)
            else:
                _log.warning("headroom.save_checkpoint: left %s: %s", path, outcome["reason"])
        return removed


def _deletions(document: Dict[str, Any], temps: bool) -> List[str]:
    return [item["name"] for item in document["checkpoints"]
            if item["decision"] == "delete" and (item["type"] == "save_temp") == temps]


def _expected_bytes(obj: Any, series: _Series, document: Dict[str, Any]) -> int:
    """The larger of: tensor bytes of `obj`, the last save into this series in this process,
    and the newest complete checkpoint of the series on disk."""
    with _last_size_lock:
        last = _last_size.get((str(series.directory), series.template + series.pattern), 0)
    on_disk = 0
    newest = next((entry["newest_complete"] for entry in document.get("series", [])
                   if entry.get("newest_complete")), None)
    for item in document["checkpoints"]:
        if item["name"] == newest:
            on_disk = int(item["apparent_bytes"])
    from .torch import tensor_bytes  # noqa: PLC0415 - imports torch lazily

    return max(last, on_disk, tensor_bytes(obj))


def _removed_text(removed: List[str]) -> str:
    if not removed:
        return "nothing was removed"
    return "removed " + ", ".join(os.path.basename(path) for path in removed)


def save_checkpoint(obj: Any, path: PathLike, keep: Optional[int] = None, *,
                    pattern: Optional[str] = None, **save_kwargs: Any) -> Path:
    """Saves `obj` with torch.save to `path` atomically; keeps the newest `keep` of its series.

    The series of "step_000100.pt" is every "step_<N>.pt" in the directory: the names that
    share everything but the step, epoch and metric values (series_template), as `headroom
    prune` groups them; `pattern` (a glob such as "ckpt-*.pt") makes every matching name one
    series instead. Only complete checkpoints count towards `keep` (a truncated or partial
    one pushes no good one out). keep=None keeps all.

    1. Temp files of earlier saves in the directory whose writer is gone are removed.
    2. The expected size is the larger of the tensor bytes in `obj`, the last save into the
       series and its newest complete checkpoint; the save asks for 5% and 1 MiB more. If that
       is not free, the older checkpoints that retention removes after this save anyway go
       first (never the newest complete one), but only when that makes it fit; otherwise
       DiskFullError is raised and no checkpoint is touched.
    3. torch.save into ".<name>.headroom-tmp-<pid>-<id>" in the same directory, fsync, rename
       onto `path`, fsync the directory. A Ctrl-C meanwhile abandons the save cleanly and is
       then handled (KeyboardInterrupt) once the temp is gone.
    4. Retention: the newest `keep` complete checkpoints of the series stay.

    If the disk fills during the write anyway, the temp file is removed and DiskFullError is
    raised: the previous checkpoint stays intact and loadable. Returns the path written.
    What was removed is logged on the "headroom" logger (INFO) and, on failure, listed in
    DiskFullError.removed.
    """
    _validate(keep, pattern)
    torch = importlib.import_module("torch")
    target = Path(os.path.abspath(os.fspath(path)))
    directory = target.parent
    if not directory.is_dir():
        raise FileNotFoundError(errno.ENOENT, "checkpoint directory does not exist", str(directory))
    series = _Series(directory, target, pattern)
    unlimited = sys.maxsize
    plan, document = series.plan(max(keep - 1, 1) if keep else unlimited)
    removed = series.remove(plan, _deletions(document, temps=True))

    expected = _expected_bytes(obj, series, document)
    avail = _avail_bytes(directory)
    capacity = json.loads(plan.capacity(avail, expected, keep or 0, reclaimable=False))
    needed = int(capacity["need_bytes"])
    if capacity["saves"] == 0:
        raise DiskFullError(
            str(target), needed, avail,
            f"not enough space for the checkpoint: {capacity['summary']}; nothing was written, "
            f"{_removed_text(removed)}, the previous checkpoints are intact", tuple(removed))
    if avail < needed:
        # It fits once the checkpoints retention removes after this save anyway are gone.
        removed += series.remove(plan, _deletions(document, temps=False))
        avail = _avail_bytes(directory)
        if avail < needed:
            raise DiskFullError(
                str(target), needed, avail,
                f"not enough space for the checkpoint: {format_bytes(avail)} free in "
                f"{directory}, need {format_bytes(needed)}; nothing was written, "
                f"{_removed_text(removed)}", tuple(removed))

    _write(torch, obj, target, save_kwargs, removed, series)
    with _last_size_lock:
        _last_size[(str(directory), series.template + series.pattern)] = target.stat().st_size
    if keep is not None:
        plan, document = series.plan(keep, just_saved=target.name)
        removed += series.remove(plan, _deletions(document, temps=False))
    if removed:
        _log.info("headroom.save_checkpoint: saved %s; %s", target, _removed_text(removed))
    return target


def _write(torch: Any, obj: Any, target: Path, save_kwargs: Dict[str, Any], removed: List[str],
           series: _Series) -> None:
    """torch.save into a temp file, fsync, rename onto `target` while still open, fsync the dir."""
    directory = target.parent
    temp = directory / f".{target.name}{_TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    guarded: Optional[_GuardedWriter] = None
    deferred = _DeferredSigint(lambda: guarded.abandon() if guarded is not None else None)
    try:
        with deferred:
            try:
                with open(temp, "wb") as stream:
                    guarded = _GuardedWriter(stream)
                    torch.save(obj, guarded, **save_kwargs)
                    guarded.finish()
                    # Renamed while open: a concurrent save never sees it unheld and dead.
                    os.replace(temp, target)
            except BaseException as error:
                temp.unlink(missing_ok=True)
                if isinstance(error, _Abandoned):
                    return  # deliver() below raises KeyboardInterrupt (or what the program asked)
                if isinstance(error, Exception) and _is_enospc(error):
                    avail = _avail_bytes(directory)
                    raise DiskFullError(
                        str(target), 0, avail,
                        f"the disk filled while writing the checkpoint ({format_bytes(avail)} "
                        f"free in {directory}); the partial file was removed, "
                        f"{_removed_text(removed)}, the previous complete checkpoints are "
                        f"intact", tuple(removed)) from error
                raise
            _fsync_dir(directory)
    finally:
        deferred.restore()
        deferred.deliver()
