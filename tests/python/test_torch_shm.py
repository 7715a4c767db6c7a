"""headroom.torch against real DataLoaders with 4 workers, in a private /dev/shm tmpfs.

The measuring runs in a subprocess inside `unshare -m`, with its own tmpfs on
/dev/shm, so the peak used bytes come only from the loader under test.
"""
from __future__ import annotations

import json

from conftest import REPO, needs_torch, run_isolated

MIB = 1 << 20

# A dataset of "images": 3 x SIDE x SIDE float32 each, with an int label.
DATASET = """
import json, os, threading, time
import torch
from torch.utils.data import DataLoader, Dataset
import headroom
import headroom.torch as ht

class Images(Dataset):
    def __init__(self, side, count):
        self.side, self.count = side, count
    def __len__(self):
        return self.count
    def __getitem__(self, index):
        return {"image": torch.full((3, self.side, self.side), float(index)), "label": index}

def shm_used():
    stats = os.statvfs("/dev/shm")
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize
"""


SHAPES = """
import json, subprocess, sys
# workers, prefetch, image side, batch size: 6, 12 and 3 MiB batches, 2 to 11 batches in flight.
for shape in ["4 2 256 8", "1 2 512 4", "3 3 64 64"]:
    done = subprocess.run([sys.executable, "BENCH/loader_peaks.py", "shm", *shape.split(),
                           "0.02", "30"], capture_output=True, text=True)
    print("RESULT " + json.dumps({shape: done.stdout.strip() or done.stderr[-2000:]}), flush=True)
"""


@needs_torch
def test_shm_need_is_an_upper_bound_of_the_peak_of_real_loaders():
    # bench/python/loader_peaks.py samples /dev/shm's used bytes every 0.5 ms while a real
    # DataLoader is iterated by a loop that takes 20 ms a step (so the workers fill every
    # prefetch slot); the full campaign is bench/python/run (RESULTS.md).
    script = SHAPES.replace("BENCH", str(REPO / "bench/python"))
    result = run_isolated(script, mounts="mount -t tmpfs -o size=512m tmpfs /dev/shm", timeout=300)
    for shape in ["4 2 256 8", "1 2 512 4", "3 3 64 64"]:
        measured = json.loads(result[shape])
        need, peak, batch = measured["need"], measured["peak"], measured["batch_bytes"]
        workers, prefetch = measured["workers"], measured["prefetch"]
        print(f"{shape}: shm_need {need / MIB:.2f} MiB, peak {peak / MIB:.2f} MiB "
              f"({peak / need:.2f} of the bound)")
        assert need == (workers * prefetch + 2) * batch + 4 * (workers + 2) * 4096
        assert peak <= need, (shape, measured)
        # A bound, not a guess far above: the workers fill W x P slots at 20 ms a step.
        assert peak >= workers * prefetch * batch * 0.9, (shape, measured)


@needs_torch
def test_loader_whose_peak_exceeds_64m_shm_is_critical_and_really_fails():
    # 4 workers x prefetch 2 x 7.5 MiB batches: W x P x B is 60 MiB, which fits in Docker's
    # default 64 MiB /dev/shm, but the measured peak is about 9 batches (68 MiB): the bound
    # (4 x 2 + 2) x 7.5 MiB = 75 MiB makes preflight critical, and iterating really fails.
    result = run_isolated(DATASET + """
loader = DataLoader(Images(256, 10 * 40), batch_size=10, num_workers=4, prefetch_factor=2,
                    timeout=60)
report = ht.preflight(loader, only=["shm.capacity"])
shm = report.find("shm.capacity")
try:
    report.raise_for_critical()
    raised = ""
except headroom.CriticalFindingError as error:
    raised = str(error)
print("RESULT " + json.dumps({"verdict": report.verdict, "severity": shm.severity,
                              "summary": shm.summary, "need": shm.value("dataloader_need_bytes"),
                              "raised": raised}), flush=True)
try:
    for batch in loader:
        time.sleep(0.02)
    outcome = "finished"
except Exception as error:
    outcome = f"{type(error).__name__}: {error}"
print("RESULT " + json.dumps({"outcome": outcome}))
""", mounts="mount -t tmpfs -o size=64m tmpfs /dev/shm", timeout=180)
    assert result["verdict"] == "critical" and result["severity"] == "critical", result
    assert result["need"] == 10 * (10 * 768 * 1024 + 4096) + 24 * 4096
    assert "shm.capacity" in result["raised"] and "fix:" in result["raised"]
    assert "+ 2 in the loop's hands" in result["summary"], result["summary"]
    # The same loader really dies there: a worker killed by SIGBUS (RuntimeError in the
    # main process) or, if the main process itself takes the SIGBUS, no outcome at all.
    outcome = result.get("outcome", f"main process died, rc={result['returncode']}")
    assert outcome != "finished", result
    # Workers print "ERROR: Unexpected bus error encountered in worker" on stderr; the main
    # process sees RuntimeError (worker killed by signal: Bus error) or, when the worker
    # died while handing over a segment, ConnectionResetError.
    assert "bus error" in (outcome + result["stderr"]).lower(), result
