"""headroom inside the training script: a preflight, a monitor, and checkpoints that survive.

Before the first step, check the host for this job (raises with the exact fixes):

    import headroom, headroom.torch
    headroom.torch.preflight(loader, ckpt_dir="/ckpt", ckpt_bytes="2GiB", keep=3).raise_for_critical()

In the loop (docs/python.md has the whole pattern):

    with headroom.Monitor("/ckpt", ckpt_bytes="2GiB", keep=3, on_alert=print) as monitor:
        for step, batch in enumerate(loader):
            ...
            if step % 1000 == 0:
                headroom.save_checkpoint(state, f"/ckpt/step_{step:07d}.pt", keep=3)
            if not monitor.ok:      # the next checkpoint will not fit: save and stop
                break

The API:
    check(dirs, workers=, batch_bytes=, ckpt_bytes=, keep=, only=, ...) -> Report
        the checks of `headroom check`; Report.ok, .findings, .raise_for_critical()
    headroom.torch.preflight(loader, ckpt_dir, ...), .shm_need(loader), .measure(loader)
        the same, with the /dev/shm a real DataLoader needs measured
    Monitor(dirs, interval=, ckpt_bytes=, keep=, window=, on_alert=)
        `headroom watch` in a thread; `ok` is False when the loop should save and stop
    save_checkpoint(obj, path, keep=N) -> Path
        an atomic torch.save with retention of its series, as `headroom prune` plans it
    DiskFullError (alias DiskFull), CriticalFindingError (alias CriticalFinding)
    CHECKS (the finding ids only= takes), parse_size, format_bytes, series_template

The checks and sampling run in headroom's C++ core (the same as the `headroom` CLI)
with the GIL released. `import headroom` never imports torch; the parts that need it
(headroom.torch, save_checkpoint) import it when called.
"""
from __future__ import annotations

from . import _headroom
from .checkpoint import (DiskFull, DiskFullError, retention_pattern, save_checkpoint,
                         series_template)
from .checks import check, check_ids, format_bytes, parse_size
from .monitor import Alert, Monitor, MonitorStatus
from .report import CriticalFinding, CriticalFindingError, Evidence, Finding, Report, Verdict

# Tracebacks show headroom.DiskFullError, the name users catch, not headroom.checkpoint....
for _exported in (Alert, CriticalFindingError, DiskFullError, Evidence, Finding, Monitor,
                  MonitorStatus, Report, Verdict):
    _exported.__module__ = __name__
del _exported

__version__: str = _headroom.__version__
#: Ids of every finding the checks yield, in the order they run, as reports print them;
#: `only=` takes these or their prefixes ("shm", "tmp").
CHECKS = tuple(check_ids())

__all__ = [
    "Alert", "CHECKS", "CriticalFinding", "CriticalFindingError", "DiskFull", "DiskFullError",
    "Evidence", "Finding", "Monitor", "MonitorStatus", "Report", "Verdict", "check",
    "format_bytes", "parse_size", "retention_pattern", "save_checkpoint", "series_template",
]
