"""headroom inside the training script: preflight checks, a disk/shm monitor, and safe checkpoints.

    import headroom
    headroom.check(dirs="/ckpt", workers=8, batch_bytes="24MiB").raise_for_critical()

The checks and sampling run in headroom's C++ core (the same as the `headroom`
CLI) with the GIL released. `import headroom` never imports torch; the parts
that need it (headroom.torch, save_checkpoint) import it when called.
"""
from __future__ import annotations

from . import _headroom
from .checkpoint import DiskFull, retention_pattern, save_checkpoint
from .checks import check, format_bytes, parse_size
from .monitor import Alert, Monitor, MonitorStatus
from .report import CriticalFinding, Evidence, Finding, Report

# Tracebacks show headroom.CriticalFinding, the name users catch, not headroom.report....
for _exported in (Alert, CriticalFinding, DiskFull, Evidence, Finding, Monitor, MonitorStatus,
                  Report):
    _exported.__module__ = __name__
del _exported

__version__: str = _headroom.__version__
#: Ids of the checks, in the order they run; `only=` takes these or their prefixes.
CHECKS = tuple(_headroom.check_ids())

__all__ = [
    "Alert", "CHECKS", "CriticalFinding", "DiskFull", "Evidence", "Finding", "Monitor",
    "MonitorStatus", "Report", "check", "format_bytes", "parse_size", "retention_pattern",
    "save_checkpoint",
]
