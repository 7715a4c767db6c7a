"""Findings and reports: the Python form of `headroom check --json` (docs/json.md)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

class Verdict:
    """A yes/no answer that reads as a bool and can also be called.

    `Report.ok` and `Monitor.ok` return one, so `if not monitor.ok:` and
    `if not monitor.ok():` both mean what they say. Compare it with `==` or use it
    in a condition (`monitor.ok is True` is always False: it is not the bool object).
    """

    __slots__ = ("_value",)

    def __init__(self, value: bool):
        self._value = bool(value)

    def __bool__(self) -> bool:
        return self._value

    def __call__(self) -> bool:
        return self._value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Verdict, bool)):
            return self._value == bool(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return repr(self._value)

    def __reduce__(self) -> Any:
        return (Verdict, (self._value,))


#: Severities, mildest first; "unknown" means it could not be measured.
SEVERITIES = ("ok", "unknown", "warn", "critical")


def severity_rank(severity: str) -> int:
    """Orders severities: ok < unknown < warn < critical (as the core's rank())."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        raise ValueError(f"unknown severity {severity!r}; expected one of {SEVERITIES}") from None


@dataclass(frozen=True)
class Evidence:
    """One measured number or fact behind a finding."""

    name: str  #: snake_case, e.g. "avail_bytes"
    value: Any  #: int, float, bool or str
    unit: str = ""  #: "bytes", "percent", "count", ... ("" for facts)
    text: str = ""  #: the human rendering, e.g. "64.0 MiB"


@dataclass(frozen=True)
class Finding:
    """One result of one check, with what to do about it."""

    id: str  #: stable id, e.g. "shm.capacity"
    subject: str  #: what it is about, e.g. "/dev/shm" or a directory; may be ""
    severity: str  #: "ok", "unknown", "warn" or "critical"
    summary: str  #: one line for people
    evidence: List[Evidence] = field(default_factory=list)
    why: str = ""  #: why it matters for training
    remedy: List[str] = field(default_factory=list)  #: exact commands or steps
    reason: str = ""  #: why it could not be measured (severity "unknown")

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Finding":
        return cls(
            id=data["id"], subject=data.get("subject", ""), severity=data["severity"],
            summary=data.get("summary", ""),
            evidence=[Evidence(e["name"], e.get("value"), e.get("unit", ""), e.get("text", ""))
                      for e in data.get("evidence", [])],
            why=data.get("why", ""), remedy=list(data.get("remedy", [])),
            reason=data.get("reason", ""))

    def value(self, name: str, default: Any = None) -> Any:
        """The value of the evidence called `name`, or `default`."""
        for item in self.evidence:
            if item.name == name:
                return item.value
        return default

    def __str__(self) -> str:
        where = f" ({self.subject})" if self.subject else ""
        return f"[{self.severity}] {self.id}{where}: {self.summary}"


class CriticalFindingError(Exception):
    """Raised by Report.raise_for_critical(); `.findings` holds the critical ones.

    It pickles (a ProcessPoolExecutor or multiprocessing.Pool hands it back to the parent).
    """

    def __init__(self, findings: List[Finding], report: "Report"):
        self.findings = findings
        self.report = report
        lines = [f"headroom: {len(findings)} critical finding{'s' if len(findings) != 1 else ''}:"]
        for item in findings:
            lines.append(f"  {item}")
            lines.extend(f"    fix: {step}" for step in item.remedy)
        super().__init__("\n".join(lines))

    def __reduce__(self) -> Any:
        # Exception pickles as type(*args) with args (message,): not this signature.
        return (type(self), (self.findings, self.report))


#: The name before PEP 8's "Error" suffix; the same class.
CriticalFinding = CriticalFindingError


@dataclass(frozen=True)
class Report:
    """All findings of one run, worst first, and the verdict they add up to."""

    verdict: str  #: "ok", "warn" or "critical" (unknown findings count as ok)
    environment: str  #: "host", "docker", "kubernetes", "slurm", ...
    findings: List[Finding] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Report":
        return cls(verdict=data["verdict"], environment=data.get("environment", ""),
                   findings=[Finding.from_dict(item) for item in data.get("findings", [])])

    @property
    def ok(self) -> Verdict:
        """True when no finding is critical (`report.ok` and `report.ok()` both work)."""
        return Verdict(self.verdict != "critical")

    def at_least(self, severity: str) -> List[Finding]:
        """Findings at `severity` or worse ("unknown" counts only when asked for)."""
        floor = severity_rank(severity)
        return [item for item in self.findings
                if severity_rank(item.severity) >= floor and item.severity != "ok"]

    @property
    def critical(self) -> List[Finding]:
        return [item for item in self.findings if item.severity == "critical"]

    def find(self, finding_id: str, subject: Optional[str] = None) -> Optional[Finding]:
        """The first finding with this id (and subject, when given)."""
        for item in self.findings:
            if item.id == finding_id and (subject is None or item.subject == subject):
                return item
        return None

    def raise_for_critical(self) -> "Report":
        """Raises CriticalFindingError listing every critical finding and its fixes; else returns self."""
        if self.critical:
            raise CriticalFindingError(self.critical, self)
        return self

    def to_dict(self) -> Dict[str, Any]:
        """The same document as `headroom check --json`."""
        return asdict(self)

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        lines = [f"headroom: {self.verdict} ({self.environment})"]
        lines.extend(f"  {item}" for item in self.findings if item.severity != "ok")
        return "\n".join(lines)
