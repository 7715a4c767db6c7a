"""A minimal training loop whose DataLoader has a known shared-memory shape.

usage: dataloader_job.py WORKERS BATCH_MIB STEPS [PREFETCH]
Each batch is one float32 tensor of BATCH_MIB MiB, so the loader keeps up to
WORKERS x PREFETCH x BATCH_MIB MiB in /dev/shm at once.
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Synthetic(Dataset):
    def __init__(self, length: int, mib: int):
        self.length = length
        self.elements = mib * 1024 * 1024 // 4

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.full((self.elements,), float(index))


def main() -> int:
    workers, mib, steps = (int(value) for value in sys.argv[1:4])
    prefetch = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    loader = DataLoader(Synthetic(steps, mib), batch_size=1, num_workers=workers,
                        prefetch_factor=prefetch)
    total = 0.0
    for step, batch in enumerate(loader):
        total += float(batch[0, 0])
        print(f"step {step} ok", flush=True)
    print(f"done {total}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
