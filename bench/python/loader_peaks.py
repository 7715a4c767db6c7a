"""What a real PyTorch DataLoader uses at its peak: /dev/shm bytes and open fds.

Runs inside a private mount namespace with its own tmpfs on /dev/shm (bench/python/run
sets that up; tests/python/test_torch_shm.py and test_torch_fd.py run a few shapes of it).
Prints one JSON object per line:

  python3 loader_peaks.py shm W P SIDE BATCH [SLEEP_S] [STEPS]
      /dev/shm used bytes sampled every 0.5 ms while a loader of W workers, prefetch P,
      batches of BATCH images 3 x SIDE x SIDE float32 (+ labels) is iterated; with the
      headroom.torch estimate (shm_need) beside it.
  python3 loader_peaks.py fd W P TENSORS [STEPS]
      the main process's open fds (/proc/self/fd) sampled while a loader with the
      file_descriptor sharing strategy hands over batches of TENSORS tensors, with
      headroom's fd estimate beside it.
  python3 loader_peaks.py fdmin W P TENSORS [STEPS]
      the smallest RLIMIT_NOFILE (soft = hard) under which the same loop completes,
      found by bisection over child processes.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time

MIB = 1 << 20


def shm_used() -> int:
    stats = os.statvfs("/dev/shm")
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize


class Sampler:
    """Samples a value in a thread every `interval` seconds and keeps the maximum."""

    def __init__(self, probe, interval: float = 0.0005):
        self.probe, self.interval, self.peak = probe, interval, probe()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, self.probe())
            time.sleep(self.interval)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, self.probe())


def images(side: int, count: int, tensors: int = 1):
    import torch
    from torch.utils.data import Dataset

    class Images(Dataset):
        def __len__(self):
            return count

        def __getitem__(self, index):
            item = {"label": index}
            for number in range(tensors):
                item[f"image{number}"] = torch.full((3, side, side), float(index))
            return item

    return Images()


def shm_run(workers: int, prefetch: int, side: int, batch: int, sleep: float,
            steps: int) -> dict:
    from torch.utils.data import DataLoader

    import headroom.torch as ht

    loader = DataLoader(images(side, batch * steps), batch_size=batch, num_workers=workers,
                        prefetch_factor=prefetch)
    need = ht.shm_need(loader)
    baseline = shm_used()
    count = 0
    with Sampler(lambda: shm_used() - baseline) as sampler:
        for _ in loader:
            count += 1
            if sleep:
                time.sleep(sleep)
    shape = ht.measure(loader)
    return {"kind": "shm", "workers": workers, "prefetch": prefetch, "side": side, "batch": batch,
            "sleep": sleep, "steps": count, "batch_bytes": shape.batch_bytes, "need": need,
            "peak": sampler.peak, "peak_batches": round(sampler.peak / shape.batch_bytes, 2)}


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def fd_loop(workers: int, prefetch: int, tensors: int, steps: int, sample: bool) -> dict:
    import torch.multiprocessing
    from torch.utils.data import DataLoader

    torch.multiprocessing.set_sharing_strategy("file_descriptor")
    # A timeout turns a loader that hangs at the limit into an error.
    loader = DataLoader(images(8, 4 * steps, tensors), batch_size=4, num_workers=workers,
                        prefetch_factor=prefetch, timeout=20 if workers else 0)
    baseline = fd_count()
    count = 0
    if sample:
        with Sampler(fd_count) as sampler:
            for _ in loader:
                count += 1
                time.sleep(0.002)
        return {"baseline": baseline, "peak": sampler.peak, "steps": count}
    for _ in loader:
        count += 1
    return {"baseline": baseline, "steps": count}


def estimate(workers: int, prefetch: int, tensors: int):
    """headroom's estimate for this shape (None with a headroom that cannot take it)."""
    import headroom

    try:
        # The batch holds `tensors` images and a label tensor.
        report = headroom.check(workers=workers, prefetch=prefetch, tensors_per_batch=tensors + 1,
                                only="fd.limit")
    except TypeError:
        return None
    return int(report.find("fd.limit").value("estimated_need"))


def fd_min(workers: int, prefetch: int, tensors: int, steps: int) -> dict:
    """Bisects the smallest soft = hard RLIMIT_NOFILE under which the loop completes."""
    def completes(limit: int) -> bool:
        code = ("import sys; sys.path.insert(0, %r); import loader_peaks as l; "
                "r = l.fd_loop(%d, %d, %d, %d, False); sys.exit(0 if r['steps'] == %d else 1)"
                % (os.path.dirname(os.path.abspath(__file__)), workers, prefetch, tensors, steps,
                   steps))
        try:
            done = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, timeout=60,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
        except subprocess.TimeoutExpired:
            return False  # a hang at the limit counts as a failure
        return done.returncode == 0

    low, high = 8, 256
    if not completes(high):
        return {"kind": "fdmin", "error": f"does not complete at {high}"}
    while high - low > 1:
        middle = (low + high) // 2
        if completes(middle):
            high = middle
        else:
            low = middle
    return {"kind": "fdmin", "workers": workers, "prefetch": prefetch, "tensors": tensors,
            "steps": steps, "min_limit": high}


def main(argv: list) -> None:
    mode = argv[0]
    if mode == "shm":
        workers, prefetch, side, batch = (int(value) for value in argv[1:5])
        sleep = float(argv[5]) if len(argv) > 5 else 0.02
        steps = int(argv[6]) if len(argv) > 6 else 40
        print(json.dumps(shm_run(workers, prefetch, side, batch, sleep, steps)), flush=True)
    elif mode == "fd":
        workers, prefetch, tensors = (int(value) for value in argv[1:4])
        steps = int(argv[4]) if len(argv) > 4 else 200
        result = fd_loop(workers, prefetch, tensors, steps, True)
        result.update(kind="fd", workers=workers, prefetch=prefetch, tensors=tensors,
                      estimate=estimate(workers, prefetch, tensors))
        print(json.dumps(result), flush=True)
    elif mode == "fdmin":
        workers, prefetch, tensors = (int(value) for value in argv[1:4])
        steps = int(argv[4]) if len(argv) > 4 else 200
        result = fd_min(workers, prefetch, tensors, steps)
        result["estimate"] = estimate(workers, prefetch, tensors)
        print(json.dumps(result), flush=True)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
