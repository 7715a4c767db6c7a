"""headroom.torch's walk and batch drawing, in-process (no workers start)."""
from __future__ import annotations

import dataclasses
from collections import namedtuple

import pytest

from conftest import needs_torch

pytestmark = needs_torch

PAGE = 4096


@pytest.fixture(scope="module")
def torch():
    import torch as real_torch

    return real_torch


@pytest.fixture(scope="module")
def ht():
    import headroom.torch as module

    return module


def test_headroom_torch_imports_the_real_torch(ht, torch):
    assert ht._torch() is torch and ht._torch().__name__ == "torch"


def test_tensor_bytes_walks_nested_structures_and_counts_storages_once(ht, torch):
    Pair = namedtuple("Pair", "left right")

    @dataclasses.dataclass
    class Sample:
        pixels: object
        meta: dict

    base = torch.zeros(1000, dtype=torch.float32)  # 4000 bytes
    batch = {
        "a": [base, base[10:20]],  # a view: same storage, counted once
        "b": (Pair(torch.zeros(10, dtype=torch.int64), "text"), 3.5),
        "c": Sample(torch.zeros(2, 3, dtype=torch.float64), {"mask": torch.ones(5, dtype=torch.bool)}),
    }
    assert ht.tensor_bytes(batch) == 4000 + 80 + 48 + 5
    assert ht.tensor_bytes(batch, round_to=PAGE) == 4 * PAGE


def _loader(torch, **kwargs):
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.zeros(64, 3, 32, 32), torch.arange(64))
    return DataLoader(data, batch_size=16, **kwargs)


def _need(workers, prefetch, batch):
    """The bound: (W x P + 2 batches in the loop's hands) x batch + 4 x (W + 2) semaphore pages."""
    return (workers * prefetch + 2) * batch + 4 * (workers + 2) * PAGE


def test_shm_need_bounds_workers_times_prefetch_batches_and_two_in_hand(ht, torch):
    batch = 16 * 3 * 32 * 32 * 4 + PAGE  # images + one page of labels
    assert ht.shm_need(_loader(torch, num_workers=4, prefetch_factor=3)) == _need(4, 3, batch)
    shape = ht.measure(_loader(torch, num_workers=2))
    assert (shape.workers, shape.prefetch, shape.batch_bytes) == (2, 2, batch)
    assert ht.shm_need(_loader(torch, num_workers=0)) == 0


def test_draw_batch_leaves_the_random_state_alone(ht, torch):
    loader = _loader(torch, shuffle=True, num_workers=2)
    state = torch.get_rng_state()
    images, labels = ht.draw_batch(loader)
    assert images.shape == (16, 3, 32, 32) and labels.shape == (16,)
    assert torch.equal(torch.get_rng_state(), state)


def test_iterable_and_unbatched_loaders(ht, torch):
    from torch.utils.data import DataLoader, IterableDataset

    class Stream(IterableDataset):
        def __iter__(self):
            return (torch.zeros(256) for _ in range(10))

    assert ht.measure(DataLoader(Stream(), batch_size=4, num_workers=1)).batch_bytes == PAGE
    unbatched = DataLoader([torch.zeros(2048)] * 3, batch_size=None, num_workers=2)
    assert ht.shm_need(unbatched) == _need(2, 2, 2 * PAGE)


def test_preflight_passes_the_measured_shape(ht, torch, scratch):
    report = ht.preflight(_loader(torch, num_workers=4), scratch, only=["shm.capacity"])
    shm = report.find("shm.capacity")
    assert shm.value("dataloader_need_bytes") == _need(4, 2, 16 * 3 * 32 * 32 * 4 + PAGE)
