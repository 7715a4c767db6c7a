"""Runs a command under the SystemCallFilter= of a systemd unit file, as systemd
would (without systemd as PID 1): usage `unit_syscall_filter.py UNIT -- CMD ARGS...`.

The sets (@system-service, @privileged, ...) are expanded by the host's own
`systemd-analyze syscall-filter`, so they are systemd's, for its version. As in
systemd.exec(5): the first line without "~" is an allow list (everything else
fails), later "~" lines take calls out of it, and a denied call fails with
SystemCallErrorNumber= (here EPERM) instead of killing the process. Uses
libseccomp's Python binding (Debian python3-seccomp).
"""
from __future__ import annotations

import errno
import os
import re
import subprocess
import sys

import seccomp


def systemd_sets() -> dict[str, list[str]]:
    text = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True,
                          check=True).stdout
    sets: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("@"):
            current = sets.setdefault(line.strip(), [])
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return sets


def expand(names: list[str], sets: dict[str, list[str]]) -> set[str]:
    calls: set[str] = set()
    for name in names:
        if name.startswith("@"):
            calls |= expand(sets.get(name, []), sets)
        else:
            calls.add(name)
    return calls


def main() -> None:
    split = sys.argv.index("--")
    unit = open(sys.argv[1]).read()
    command = sys.argv[split + 1:]
    sets = systemd_sets()
    allowed: set[str] | None = None
    denied: set[str] = set()
    for value in re.findall(r"^SystemCallFilter=(.*)$", unit, re.M):
        if value.startswith("~"):
            denied |= expand(value[1:].split(), sets)
        elif allowed is None:
            allowed = expand(value.split(), sets)
        else:
            allowed |= expand(value.split(), sets)
    error = re.search(r"^SystemCallErrorNumber=(\w+)$", unit, re.M)
    number = getattr(errno, error.group(1)) if error else errno.EPERM
    if allowed is None:
        rules, default, action = denied, seccomp.ALLOW, seccomp.ERRNO(number)
    else:
        rules, default, action = allowed - denied, seccomp.ERRNO(number), seccomp.ALLOW
        rules |= {"execve", "exit", "exit_group", "rt_sigreturn"}  # implicitly allowed
    sandbox = seccomp.SyscallFilter(default)
    for call in sorted(rules):
        try:
            sandbox.add_rule(action, call)
        except (RuntimeError, ValueError):
            pass  # not a call of this architecture (e.g. the *32 variants)
    sandbox.load()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
