#!/usr/bin/python3
"""Writes a realistic training log of about SIZE_MB megabytes for the explain benchmark.

Lines are what a PyTorch job prints: tqdm bars redrawn with carriage returns,
loss lines from several ranks with timestamps and "[rankN]:" prefixes, periodic
evaluation and checkpoint lines, NCCL INFO chatter, Python warnings. A handful
of failure lines (a worker killed by SIGKILL, the kernel's OOM line, a CUDA OOM
look-alike) sit near the end, where a real failure is.

usage: gen_log.py OUTPUT SIZE_MB
"""
import random
import sys


def block(rng, step0, n_lines):
    out = []
    step = step0
    for _ in range(n_lines):
        kind = rng.random()
        rank = rng.randrange(8)
        ts = f"2024-05-01T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z"
        if kind < 0.45:
            pct = rng.randrange(101)
            bar = "#" * (pct // 10) + " " * (10 - pct // 10)
            redraws = "".join(
                f"\rEpoch {step // 5000}: {p:3d}%|{bar}| {p * 50}/5000 [{p // 60:02d}:{p % 60:02d}<12:00, {rng.uniform(1, 9):.2f}it/s, loss={rng.uniform(0.1, 3):.4f}, v_num=3]"
                for p in range(pct, min(pct + 4, 101)))
            out.append(redraws)
        elif kind < 0.80:
            out.append(f"{ts} [rank{rank}]: step {step} loss {rng.uniform(0.1, 3):.4f} lr {rng.uniform(1e-5, 1e-3):.2e} grad_norm {rng.uniform(0.1, 10):.3f} tokens/s {rng.randrange(10000, 90000)}")
            step += 1
        elif kind < 0.90:
            out.append(f"gpu-node-{rank // 4}:{1000 + rank}:{2000 + rank} [{rank % 4}] NCCL INFO Channel {rng.randrange(32):02d}/0 : {rank} -> {(rank + 1) % 8} via P2P/IPC/read")
        elif kind < 0.95:
            out.append(f"{ts} INFO     eval step {step}: accuracy={rng.random():.4f} perplexity={rng.uniform(5, 40):.3f} samples={rng.randrange(1000, 50000)}")
        elif kind < 0.98:
            out.append(f"/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py:560: UserWarning: This DataLoader will create {rng.randrange(4, 32)} worker processes in total.")
        else:
            out.append(f"{ts} [rank{rank}]: Saving checkpoint to /ckpt/run{rank}/step{step}.pt ({rng.randrange(100, 9000)} MB)")
    return "\n".join(out) + "\n", step


FAILURE = (
    "[rank3]: RuntimeError: DataLoader worker (pid 51022) is killed by signal: Killed. \n"
    "[rank3]: RuntimeError: DataLoader worker (pid(s) 51022) exited unexpectedly\n"
    "[1209331.551301] Out of memory: Killed process 51022 (python) total-vm:38471200kB, anon-rss:30119232kB\n"
    "[rank5]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 5; 79.15 GiB total capacity)\n"
)


def main():
    path, size_mb = sys.argv[1], int(sys.argv[2])
    rng = random.Random(42)
    # A pool of distinct 4 MiB blocks written in a random order: realistic text
    # without spending minutes in Python on every line.
    pool = []
    step = 0
    for _ in range(16):
        text, step = block(rng, step, 30000)
        pool.append(text.encode())
    target = size_mb * 1024 * 1024
    written = 0
    failed = False
    with open(path, "wb") as out:
        while written < target:
            chunk = pool[rng.randrange(len(pool))]
            out.write(chunk)
            written += len(chunk)
            if written >= target * 0.97 and not failed:
                out.write(FAILURE.encode())
                written += len(FAILURE)
                failed = True


if __name__ == "__main__":
    main()
