"""The package's man pages and completions are generated from the CLI's own help
(packaging/generate.py, run by the `deb` build): one page per subcommand with every flag
its --help lists, and bash and zsh completions that complete what the CLI accepts. The
full package is tested in a bare Debian 12 root by `make test-deb` (tests/deb/run)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import HEADROOM, PYTHON, REPO

GENERATE = REPO / "packaging" / "generate.py"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    if shutil.which("help2man") is None:
        pytest.fail("help2man is missing: run scripts/install-deps")
    subprocess.run([PYTHON, str(GENERATE), "--headroom", HEADROOM, "--out", str(out)], check=True)
    return out


def help_of(*command: str) -> str:
    return subprocess.run([HEADROOM, *command, "--help"], capture_output=True, text=True,
                          check=True).stdout


def subcommands() -> list[str]:
    section = help_of().split("Subcommands:\n", 1)[1]
    return re.findall(r"^  (\w+) ", section, re.M)


def flags_of(*command: str) -> set[str]:
    return {flag for column in re.findall(r"^  (-\S+)", help_of(*command), re.M)
            for flag in column.split(",")}


def test_a_man_page_per_subcommand_lists_every_flag_of_its_help(generated: Path):
    commands = subcommands()
    assert {"check", "clean", "watch", "explain"} <= set(commands)
    pages = {p.name for p in (generated / "man1").iterdir()}
    assert pages == {"headroom.1.gz"} | {f"headroom-{c}.1.gz" for c in commands}
    for command in ["", *commands]:
        page = generated / "man1" / (f"headroom-{command}.1.gz" if command else "headroom.1.gz")
        rendered = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True,
                                  env={"MANWIDTH": "200", "PATH": "/usr/bin:/bin"})
        assert rendered.returncode == 0 and rendered.stderr == "", rendered.stderr
        text = rendered.stdout
        for flag in flags_of(*([command] if command else [])):
            assert re.search(rf"(^|[\s,]){re.escape(flag)}\b", text, re.M), (page.name, flag)
        assert "SEE ALSO" in text


def bash_complete(generated: Path, *words: str) -> list[str]:
    script = f'''
        source {generated}/bash/headroom
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _headroom
        printf '%s\\n' "${{COMPREPLY[@]}}"
    '''
    result = subprocess.run(["bash", "-c", script, "bash", *words], capture_output=True,
                            text=True, check=True, cwd=generated)
    return result.stdout.split()


def test_bash_completes_commands_flags_and_choices_from_the_help(generated: Path):
    assert bash_complete(generated, "headroom", "cl") == ["clean"]
    assert bash_complete(generated, "headroom", "--host-root", "/", "ch") == ["check"]
    assert set(bash_complete(generated, "headroom", "")) == set(subcommands())
    for command in subcommands():
        completed = set(bash_complete(generated, "headroom", command, "-"))
        assert flags_of(command) <= completed, command
    assert bash_complete(generated, "headroom", "check", "--fail-on", "") == \
        ["critical", "warn", "unknown", "never"]
    assert bash_complete(generated, "headroom-watch", "--onc") == ["--once"]


def zsh_complete(generated: Path, line: str, expected: str, scratch: Path) -> str:
    """Types LINE and TAB into an interactive zsh (zpty) with the completion on fpath;
    returns what the terminal showed once it shows EXPECTED (or after 20 s)."""
    if shutil.which("zsh") is None:
        pytest.fail("zsh is missing: run scripts/install-deps")
    script = scratch / "complete.zsh"
    script.write_text(r'''
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "fpath=($1 \$fpath); autoload -U compinit; compinit -u -D; PS1='%% '"
zpty -w -n z "$2"$'\t'
out=''
for i in {1..100}; do
  while zpty -r -t z chunk; do out+=$chunk; done
  [[ ${out//$'\e'\[[0-9;?]#[A-Za-z]/} == *"$3"* ]] && break
  sleep 0.2
done
print -r -- "$out"
''')
    result = subprocess.run(["zsh", "-f", str(script), str(generated / "zsh"), line, expected],
                            capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(scratch), "TERM": "dumb"})
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|.\x08|\r", "", result.stdout)


def test_zsh_completes_a_command_and_a_flags_choices(generated: Path, tmp_path: Path):
    assert subprocess.run(["zsh", "-n", str(generated / "zsh" / "_headroom")]).returncode == 0
    for line, expected in (("headroom cl", "headroom clean "),
                           ("headroom check --fail-on cr", "headroom check --fail-on critical")):
        assert expected in zsh_complete(generated, line, expected, tmp_path)
