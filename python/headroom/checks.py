"""headroom.check(): the preflight of `headroom check`, from Python."""
from __future__ import annotations

import json
import math
import os
from typing import Iterable, List, Mapping, Optional, Union

from . import _headroom
from ._args import check_count, check_environment, check_path, check_percent, one_or_list
from .report import Report

#: A size in bytes: an int (or a float, rounded up), or a string such as "32MiB", "1.5G".
Size = Union[int, float, str]
#: One directory or several.
Dirs = Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]], None]


def parse_size(value: Optional[Size], name: str = "size") -> Optional[int]:
    """Bytes from an int or a string like "32MiB" (binary and decimal suffixes, as the CLI).

    None stays None. Raises ValueError (naming `name`) for negatives and malformed text,
    TypeError for other types.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"{name} must be bytes as an int or a string like '32MiB', "
                        f"got {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number of bytes, got {value}")
        value = math.ceil(value)
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
        if value >= 1 << 64:
            raise ValueError(f"{name} is too large: {value} bytes")
        return value
    try:
        return int(_headroom.parse_size(value.strip()))
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def format_bytes(count: int) -> str:
    """Bytes for people, as the CLI prints them: "64.0 MiB"."""
    return str(_headroom.format_bytes(int(count)))


def check_ids() -> List[str]:
    """Ids of every finding the checks yield, in the order they run (headroom.CHECKS)."""
    return [str(item) for item in _headroom.check_ids()]


def resolve_only(only: Optional[Iterable[str]]) -> List[str]:
    """`only` as a list of known ids or id prefixes ("fd.system", "shm", "tmp.")."""
    if only is None:
        return []
    entries = one_or_list(only, str, "only must be a check id or a list of them")
    ids = check_ids()
    for entry in entries:
        if not isinstance(entry, str):
            raise TypeError(f"only must hold check ids as str, got {type(entry).__name__}")
        if not entry or not any(item.startswith(entry) for item in ids):
            raise ValueError(f"only: no check named {entry!r}; the ids are {', '.join(ids)} "
                             f"(headroom.CHECKS), and prefixes such as 'shm' select several")
    return entries


def resolve_dirs(dirs: Dirs, cwd: str) -> List[str]:
    """Absolute, existing directories; a single path may be given without a list."""
    if dirs is None:
        return [cwd]
    entries = one_or_list(dirs, (str, os.PathLike), "dirs must be a path or a list of paths")
    # The core's rule, the one check --dir follows.
    return _headroom.resolve_job_dirs([check_path(entry, "dirs") for entry in entries], cwd)


def check_options(dirs: Dirs = None, *, workers: int = 0, batch_bytes: Optional[Size] = None,
                  prefetch: int = 2, ranks: int = 1, gpus: int = 0,
                  ckpt_bytes: Optional[Size] = None, keep: int = 1,
                  worker_rss: Optional[Size] = None, only: Optional[Iterable[str]] = None,
                  warn_percent: float = 85.0, critical_percent: float = 95.0,
                  tensors_per_batch: Optional[int] = None, base_fds: Optional[int] = None,
                  cwd: Optional[str] = None) -> "_headroom.CheckOptions":
    """The core's CheckOptions from Python arguments (see check() for their meaning)."""
    options = _headroom.CheckOptions()
    options.dirs = resolve_dirs(dirs, cwd or os.getcwd())
    options.workers = check_count(workers, "workers")
    options.prefetch = check_count(prefetch, "prefetch", 1 if workers else 0)
    options.ranks = check_count(ranks, "ranks", 1)
    options.gpus = check_count(gpus, "gpus")
    options.keep = check_count(keep, "keep", 1)
    options.batch_bytes = parse_size(batch_bytes, "batch_bytes")
    options.checkpoint_bytes = parse_size(ckpt_bytes, "ckpt_bytes")
    options.worker_rss = parse_size(worker_rss, "worker_rss")
    if tensors_per_batch is not None:
        options.tensors_per_batch = check_count(tensors_per_batch, "tensors_per_batch", 1)
    if base_fds is not None:
        options.base_fds = check_count(base_fds, "base_fds")
    options.only = resolve_only(only)
    options.warn_percent = check_percent(warn_percent, "warn_percent")
    options.critical_percent = check_percent(critical_percent, "critical_percent")
    options.validate()  # the core's rules (ranges, warn <= critical), as the CLI's
    return options


def check(dirs: Dirs = None, *, workers: int = 0, batch_bytes: Optional[Size] = None,
          prefetch: int = 2, ranks: int = 1, gpus: int = 0, ckpt_bytes: Optional[Size] = None,
          keep: int = 1, worker_rss: Optional[Size] = None, only: Optional[Iterable[str]] = None,
          warn_percent: float = 85.0, critical_percent: float = 95.0,
          tensors_per_batch: Optional[int] = None, base_fds: Optional[int] = None,
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
        only: report only these findings: ids as printed ("fd.system", "tmp.exec") or
            prefixes ("shm"); headroom.CHECKS lists the ids.
        warn_percent, critical_percent: use% thresholds of filesystems.
        tensors_per_batch: tensor storages in one batch (each holds an fd while it lives with
            the file_descriptor sharing strategy); 2 when None. headroom.torch.preflight
            counts them.
        base_fds: fds the main process holds before the DataLoader starts (logs, datasets,
            CUDA); None: assumed. headroom.torch.preflight counts them.
        environment: the job's environment (default os.environ): TMPDIR, SLURM_JOB_ID, ...
        cwd: the job's working directory (default os.getcwd()).

    The checks run in C++ with the GIL released. Raises ValueError or TypeError naming the
    argument for bad arguments.
    """
    cwd = check_path(cwd, "cwd") if cwd is not None else os.getcwd()
    options = check_options(dirs, workers=workers, batch_bytes=batch_bytes, prefetch=prefetch,
                            ranks=ranks, gpus=gpus, ckpt_bytes=ckpt_bytes, keep=keep,
                            worker_rss=worker_rss, only=only, warn_percent=warn_percent,
                            critical_percent=critical_percent,
                            tensors_per_batch=tensors_per_batch, base_fds=base_fds, cwd=cwd)
    env = check_environment(environment)
    return Report.from_dict(json.loads(_headroom.run_checks(options, env, cwd)))
