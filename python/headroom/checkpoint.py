"""headroom.save_checkpoint: a torch.save that never destroys the last good checkpoint.

A plain `torch.save(state, "ckpt.pt")` on a full disk truncates "ckpt.pt" first
and then fails half-way: the job loses its only checkpoint. Here the save goes
to a temporary file in the same directory, is fsynced, renamed over the target
atomically (rename(2) within one filesystem), and the directory is fsynced so
the rename survives a crash. Before starting, the free space is compared with
the expected size, and DiskFull is raised without touching anything.
"""
from __future__ import annotations

import errno
import fnmatch
import importlib
import os
import re
import threading
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from .checks import format_bytes

PathLike = Union[str, "os.PathLike[str]"]

#: Extra room asked for beyond the expected size: 5% plus 1 MiB (zip headers, pickle).
MARGIN_FRACTION = 0.05
MARGIN_BYTES = 1 << 20

_TEMP_MARK = ".headroom-tmp-"
_last_size: Dict[str, int] = {}  # directory -> bytes of the last save there
_last_size_lock = threading.Lock()


class DiskFull(OSError):
    """The checkpoint cannot fit (errno ENOSPC); the previous checkpoints are untouched.

    Attributes: filename (the target), needed_bytes (expected size with margin,
    0 when the disk filled mid-write), avail_bytes (free space when it was raised).
    """

    def __init__(self, path: str, needed_bytes: int, avail_bytes: int, detail: str):
        super().__init__(errno.ENOSPC, detail, path)
        self.needed_bytes = needed_bytes
        self.avail_bytes = avail_bytes


def retention_pattern(path: PathLike) -> "re.Pattern[str]":
    """The names that count as the same series as `path`: every run of digits may vary.

    "step_000100.pt" -> step_\\d+\\.pt, "epoch3-step100.ckpt" -> epoch\\d+-step\\d+\\.ckpt.
    A name without digits is a series of one (it is simply replaced).
    """
    parts = re.split(r"(\d+)", Path(path).name)
    return re.compile("".join(r"\d+" if part.isdigit() else re.escape(part) for part in parts))


def _series(directory: Path, path: Path, pattern: Optional[str]) -> List[Path]:
    """Existing checkpoints of the series of `path` in `directory`, newest first."""
    regex = retention_pattern(path)
    members = []
    for entry in os.scandir(directory):
        name = entry.name
        if _TEMP_MARK in name or not entry.is_file(follow_symlinks=False):
            continue
        matched = fnmatch.fnmatchcase(name, pattern) if pattern else bool(regex.fullmatch(name))
        if matched:
            members.append((entry.stat(follow_symlinks=False).st_mtime_ns, _natural(name), entry.path))
    members.sort(reverse=True)
    return [Path(item[2]) for item in members]


def _natural(name: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _avail_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def _expected_bytes(obj: Any, directory: Path, series: List[Path]) -> int:
    """The larger of: tensor bytes of `obj`, the last save into this directory
    (or, in a fresh process, the newest checkpoint of the series)."""
    with _last_size_lock:
        last = _last_size.get(str(directory))
    if last is None and series:
        try:
            last = series[0].stat().st_size
        except OSError:
            last = None
    from .torch import tensor_bytes  # noqa: PLC0415 - imports torch lazily

    return max(last or 0, tensor_bytes(obj))


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


class _GuardedWriter:
    """The file object torch.save writes to: a failed write is remembered, not raised.

    torch 1.13's zip writer must never see a write fail: it raises RuntimeError
    ("unexpected pos 320 vs 248"), and then its destructor raises again while
    finishing the archive, which calls std::terminate and aborts the whole Python
    process (measured: exit by SIGABRT). So after the first error the rest of the
    archive is dropped, torch.save returns normally, and finish() raises the error.
    """

    def __init__(self, stream: Any):
        self._stream = stream
        self._error: Optional[OSError] = None

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


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_temps(directory: Path, name: str) -> None:
    """Temp files of earlier saves of `name` whose process is gone (killed mid-save)."""
    prefix = f".{name}{_TEMP_MARK}"
    for entry in os.scandir(directory):
        if not entry.name.startswith(prefix):
            continue
        pid = entry.name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass


def save_checkpoint(obj: Any, path: PathLike, keep: Optional[int] = None, *,
                    pattern: Optional[str] = None, **save_kwargs: Any) -> Path:
    """Saves `obj` with torch.save to `path` atomically; keeps the newest `keep` of its series.

    1. Free space (statvfs of the directory) must hold the expected size plus 5% and 1 MiB;
       the expected size is the larger of the tensor bytes in `obj` and the size of the last
       save into this directory (in a new process: the newest checkpoint of the series).
       If it does not fit and `keep` allows, older checkpoints that retention would delete
       anyway are removed first (never the newest one). Still short: DiskFull, nothing touched.
    2. torch.save to ".<name>.headroom-tmp-<pid>-<id>" in the same directory, flush, fsync.
       (A write error is kept from torch's zip writer, which in torch 1.13 aborts the
       process when a write fails; see _GuardedWriter.)
    3. os.replace onto `path` (atomic), fsync the directory.
    4. Retention: of the files in the series, newest (by mtime) first, all but `keep` are
       deleted. The series of "step_000100.pt" is every "step_<digits>.pt" in the directory
       (each run of digits may vary); `pattern` (a glob such as "ckpt-*.pt") overrides it.
       keep=None keeps everything.

    If the disk fills during the write anyway, the temp file is removed and DiskFull is
    raised: the previous checkpoint stays intact and loadable. Returns the path written.
    """
    torch = importlib.import_module("torch")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ValueError(f"keep must be a positive int or None, got {keep!r}")
    target = Path(os.path.abspath(os.fspath(path)))
    directory = target.parent
    if not directory.is_dir():
        raise FileNotFoundError(errno.ENOENT, "checkpoint directory does not exist", str(directory))
    _remove_stale_temps(directory, target.name)

    series = _series(directory, target, pattern)
    expected = _expected_bytes(obj, directory, series)
    needed = int(expected * (1 + MARGIN_FRACTION)) + MARGIN_BYTES
    avail = _avail_bytes(directory)
    if avail < needed and keep is not None:
        # Files retention deletes after this save anyway: keep-1 newest survive, and always one.
        for old in series[max(keep - 1, 1):]:
            if old != target:
                old.unlink(missing_ok=True)
        avail = _avail_bytes(directory)
    if avail < needed:
        raise DiskFull(str(target), needed, avail,
                       f"not enough space for the checkpoint: {format_bytes(avail)} free in "
                       f"{directory}, need {format_bytes(needed)} (expected "
                       f"{format_bytes(expected)} + margin); nothing was written, the previous "
                       f"checkpoints are intact")

    temp = directory / f".{target.name}{_TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        with open(temp, "wb") as stream:
            guarded = _GuardedWriter(stream)
            torch.save(obj, guarded, **save_kwargs)
            guarded.finish()
        os.replace(temp, target)
    except BaseException as error:
        temp.unlink(missing_ok=True)
        if isinstance(error, Exception) and _is_enospc(error):
            avail = _avail_bytes(directory)
            raise DiskFull(str(target), 0, avail,
                           f"the disk filled while writing the checkpoint ({format_bytes(avail)} "
                           f"free in {directory}); the partial file was removed, the previous "
                           f"checkpoints are intact") from error
        raise
    _fsync_dir(directory)
    with _last_size_lock:
        _last_size[str(directory)] = target.stat().st_size

    if keep is not None:
        survivors = [target] + [old for old in _series(directory, target, pattern) if old != target]
        for old in survivors[keep:]:
            old.unlink(missing_ok=True)
    return target
