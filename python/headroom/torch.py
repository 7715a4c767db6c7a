"""headroom.torch: the shared memory a real DataLoader needs, measured, and a preflight for it.

PyTorch is imported lazily (inside the functions), so `import headroom` never
needs it, and `import torch` here always means the real torch, never this module.

Why the bound holds (torch/utils/data/dataloader.py, _MultiProcessingDataLoaderIter):
each worker collates a batch straight into shared memory (default_collate
allocates the output with `_new_shared` when it runs in a worker; other tensors
move there when pickled), one /dev/shm segment per tensor storage, and the
iterator keeps at most num_workers x prefetch_factor batches in flight. When a
batch arrives the iterator asks for the next one before the loop has let go of
the batch it holds, and `for batch in loader` still holds the previous batch
while next() runs: two batches more. The queues' semaphores add a few pages. So
the peak is at most (workers x prefetch + 2) x (bytes of one batch, each storage
rounded up to a page) + 4 x (workers + 2) pages, the core's formula
(dataloader_shm_need), measured against real loaders in bench/python/RESULTS.md.
Pinned-memory copies (pin_memory=True) are page-locked host RAM made by
cudaHostAlloc, not /dev/shm; they are reported separately as `pinned_bytes`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import itertools
import os
import random
import sys
from collections.abc import Mapping
from typing import Any, Iterator, Optional

from . import _headroom
from .checks import Dirs, Size, check
from .report import Report

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _torch() -> Any:
    return importlib.import_module("torch")


def _storage_key_and_bytes(tensor: Any) -> tuple:
    """(identity of the storage, its bytes); views of one storage share one segment."""
    try:
        storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage()
        return (str(tensor.device), storage.data_ptr()), int(storage.nbytes())
    except (RuntimeError, NotImplementedError, AttributeError):
        # Sparse and other storage-less tensors: their element bytes.
        return ("tensor", id(tensor)), int(tensor.element_size() * tensor.numel())


def tensor_bytes(obj: Any, round_to: int = 1) -> int:
    """Bytes of every tensor storage reachable from `obj`, each counted once.

    Walks dicts and other mappings, lists, tuples (namedtuples too), sets,
    dataclasses and the attributes of plain objects (e.g. an nn.Module). Each
    storage is rounded up to a multiple of `round_to` (a page, for /dev/shm).
    """
    return _storages(obj, round_to)[0]


def _storages(obj: Any, round_to: int = 1) -> tuple:
    """(bytes, count) of the tensor storages reachable from `obj`, each counted once."""
    torch = _torch()
    seen_storages: set = set()
    seen_objects: set = set()
    total = 0
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            key, size = _storage_key_and_bytes(item)
            if key not in seen_storages:
                seen_storages.add(key)
                total += -(-size // round_to) * round_to
            continue
        if item is None or isinstance(item, (str, bytes, bytearray, int, float, bool, complex)):
            continue
        if id(item) in seen_objects:
            continue
        seen_objects.add(id(item))
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.extend(vars(item).values())
    return total, len(seen_storages)


@contextlib.contextmanager
def _random_states_kept() -> Iterator[None]:
    """Restores the random states a dataset may draw from: torch's, Python's `random`
    and, when imported, numpy's global one."""
    torch = _torch()
    python_state = random.getstate()
    numpy = sys.modules.get("numpy")
    numpy_state = numpy.random.get_state() if numpy is not None else None
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        random.setstate(python_state)
        if numpy is not None and numpy_state is not None:
            numpy.random.set_state(numpy_state)


def draw_batch(loader: Any) -> Any:
    """One batch built in this process exactly as a worker would, without starting workers.

    Uses loader.dataset, loader.collate_fn and the batch sampler (or sampler, or
    the iterable dataset). torch's, Python's `random` and numpy's global random
    states are saved and restored, so the training run's shuffling and
    augmentation are not changed by the draw.
    """
    data = importlib.import_module("torch.utils.data")
    dataset = loader.dataset
    with _random_states_kept():
        if isinstance(dataset, data.IterableDataset):
            items = iter(dataset)
            if loader.batch_size is None:
                return loader.collate_fn(next(items))
            batch = list(itertools.islice(items, loader.batch_size))
            if not batch:
                raise ValueError("the DataLoader's dataset yielded no sample")
            return loader.collate_fn(batch)
        if loader.batch_sampler is not None:
            indices = next(iter(loader.batch_sampler))
            return loader.collate_fn([dataset[index] for index in indices])
        return loader.collate_fn(dataset[next(iter(loader.sampler))])


@dataclasses.dataclass(frozen=True)
class LoaderShm:
    """The shared-memory shape of one DataLoader."""

    workers: int  #: num_workers
    prefetch: int  #: prefetch_factor (batches in flight per worker)
    batch_bytes: int  #: bytes of one batch in /dev/shm (storages rounded up to pages)
    tensors: int  #: tensor storages in one batch (each is a segment, and an fd while it lives)
    #: Upper bound of the peak /dev/shm bytes while iterating: (workers x prefetch + 2) x
    #: batch_bytes + the queues' semaphores; 0 without workers.
    shm_bytes: int
    pinned_bytes: int  #: page-locked RAM of pin_memory buffers (not /dev/shm); 0 without
    pin_memory: bool


def measure(loader: Any, batches: int = 1) -> LoaderShm:
    """Draws `batches` batches in this process and returns the loader's shared-memory shape.

    With several batches the largest counts (batches of varying size).
    """
    workers = int(getattr(loader, "num_workers", 0) or 0)
    prefetch = int(getattr(loader, "prefetch_factor", None) or 2)
    drawn = [_storages(draw_batch(loader), round_to=_PAGE) for _ in range(max(1, batches))]
    batch = max(size for size, _ in drawn)
    tensors = max(count for _, count in drawn)
    pin = bool(getattr(loader, "pin_memory", False))
    # The pin thread copies each batch as it arrives; the loop holds one, the
    # queue the ones already pinned: at most one per batch in flight, plus one.
    pinned = batch * (max(workers, 1) * prefetch + 1) if pin else 0
    options = _headroom.CheckOptions()
    options.workers, options.prefetch, options.batch_bytes = workers, prefetch, batch
    return LoaderShm(workers=workers, prefetch=prefetch, batch_bytes=batch, tensors=tensors,
                     shm_bytes=int(_headroom.dataloader_shm_need(options)),
                     pinned_bytes=pinned, pin_memory=pin)


def shm_need(loader: Any) -> int:
    """An upper bound of the peak /dev/shm bytes `loader` uses while iterating; 0 when
    num_workers is 0.

    Draws one batch in the current process (no workers start), measures every
    tensor in it (nested dicts, lists, tuples, namedtuples, dataclasses), and
    returns (num_workers x prefetch_factor + 2) x batch bytes + the semaphores' pages.
    """
    return measure(loader).shm_bytes


def preflight(loader: Any, ckpt_dir: Dirs = None, *, ckpt_bytes: Optional[Size] = None,
              keep: int = 1, ranks: int = 1, gpus: int = 0, worker_rss: Optional[Size] = None,
              only: Optional[Any] = None, **kwargs: Any) -> Report:
    """headroom.check() with the loader's measured shape: workers, prefetch, batch bytes,
    tensors per batch, and the fds this process holds now (for fd.limit).

    `ckpt_dir` (one dir or several) is where checkpoints go; `ranks` multiplies the
    loader's need for jobs that run one loader per rank. Other keyword arguments
    go to headroom.check().
    """
    shape = measure(loader)
    kwargs.setdefault("tensors_per_batch", max(1, shape.tensors))
    kwargs.setdefault("base_fds", _open_fds())
    return check(ckpt_dir, workers=shape.workers, prefetch=shape.prefetch,
                 batch_bytes=shape.batch_bytes, ckpt_bytes=ckpt_bytes, keep=keep, ranks=ranks,
                 gpus=gpus, worker_rss=worker_rss, only=only, **kwargs)


def _open_fds() -> Optional[int]:
    """The fds this process holds now; None where /proc/self/fd cannot be listed."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # the listing's own fd
    except OSError:
        return None
