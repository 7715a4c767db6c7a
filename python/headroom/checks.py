"""headroom.check(): the preflight of `headroom check`, from Python."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, List, Mapping, Optional, Union

from . import _headroom
from .report import Report

#: A size in bytes: an int, or a string such as "32MiB", "1.5G", "4096".
Size = Union[int, str]
#: One directory or several.
Dirs = Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]], None]


def parse_size(value: Optional[Size], name: str = "size") -> Optional[int]:
    """Bytes from an int or a string like "32MiB" (binary and decimal suffixes, as the CLI).

    None stays None. Raises ValueError (naming `name`) for negatives and malformed text,
    TypeError for other types.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{name}: expected bytes as an int or a string like '32MiB', "
                        f"got {type(value).__name__}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
        return value
    try:
        return int(_headroom.parse_size(value.strip()))
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def format_bytes(count: int) -> str:
    """Bytes for people, as the CLI prints them: "64.0 MiB"."""
    return str(_headroom.format_bytes(int(count)))


def _count(value: int, name: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def resolve_dirs(dirs: Dirs, cwd: str) -> List[str]:
    """Absolute, existing directories; a single path may be given without a list."""
    if dirs is None:
        return [cwd]
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    resolved = []
    for entry in dirs:
        path = Path(cwd, os.fspath(entry))
        if not path.exists():
            raise FileNotFoundError(f"dirs: {os.fspath(entry)}: no such directory")
        if not path.is_dir():
            raise NotADirectoryError(f"dirs: {os.fspath(entry)}: not a directory")
        resolved.append(os.path.normpath(str(path)))
    return resolved or [cwd]


def check_options(dirs: Dirs = None, *, workers: int = 0, batch_bytes: Optional[Size] = None,
                  prefetch: int = 2, ranks: int = 1, gpus: int = 0,
                  ckpt_bytes: Optional[Size] = None, keep: int = 1,
                  worker_rss: Optional[Size] = None, only: Optional[Iterable[str]] = None,
                  warn_percent: float = 85.0, critical_percent: float = 95.0,
                  cwd: Optional[str] = None) -> "_headroom.CheckOptions":
    """The core's CheckOptions from Python arguments (see check() for their meaning)."""
    options = _headroom.CheckOptions()
    options.dirs = resolve_dirs(dirs, cwd or os.getcwd())
    options.workers = _count(workers, "workers")
    options.prefetch = _count(prefetch, "prefetch")
    options.ranks = _count(ranks, "ranks", 1)
    options.gpus = _count(gpus, "gpus")
    options.keep = _count(keep, "keep", 1)
    options.batch_bytes = parse_size(batch_bytes, "batch_bytes")
    options.checkpoint_bytes = parse_size(ckpt_bytes, "ckpt_bytes")
    options.worker_rss = parse_size(worker_rss, "worker_rss")
    if isinstance(only, str):
        only = [only]
    options.only = list(only or [])
    options.warn_percent = float(warn_percent)
    options.critical_percent = float(critical_percent)
    return options


def check(dirs: Dirs = None, *, workers: int = 0, batch_bytes: Optional[Size] = None,
          prefetch: int = 2, ranks: int = 1, gpus: int = 0, ckpt_bytes: Optional[Size] = None,
          keep: int = 1, worker_rss: Optional[Size] = None, only: Optional[Iterable[str]] = None,
          warn_percent: float = 85.0, critical_percent: float = 95.0,
          environment: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> Report:
    """Runs the preflight checks of `headroom check` against this host and returns the Report.

    Args:
        dirs: directories the job writes to (checkpoints, logs); default: the working directory.
        workers: DataLoader num_workers per rank.
        batch_bytes: bytes of one batch (int or "32MiB"); headroom.torch.shm_need measures it.
        prefetch: DataLoader prefetch_factor.
        ranks: training processes on this host.
        gpus: GPUs on this host (NCCL's shared-memory transport, CUDA's address space under
            ulimit -v, the locked memory NCCL registers for InfiniBand).
        ckpt_bytes: size of one checkpoint; keep: checkpoints kept at once.
        worker_rss: resident memory of one training or worker process.
        only: run only these checks (ids or prefixes, e.g. "shm"); see headroom.CHECKS.
        warn_percent, critical_percent: use% thresholds of filesystems.
        environment: the job's environment (default os.environ): TMPDIR, SLURM_JOB_ID, ...
        cwd: the job's working directory (default os.getcwd()).

    The checks run in C++ with the GIL released. Raises ValueError for bad arguments.
    """
    cwd = cwd or os.getcwd()
    options = check_options(dirs, workers=workers, batch_bytes=batch_bytes, prefetch=prefetch,
                            ranks=ranks, gpus=gpus, ckpt_bytes=ckpt_bytes, keep=keep,
                            worker_rss=worker_rss, only=only, warn_percent=warn_percent,
                            critical_percent=critical_percent, cwd=cwd)
    env = dict(os.environ if environment is None else environment)
    return Report.from_dict(json.loads(_headroom.run_checks(options, env, cwd)))
