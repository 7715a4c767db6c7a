#!/usr/bin/env python3
"""Man pages and shell completions of headroom, generated from the built CLI's own help.

    packaging/generate.py --headroom build/deb/src/cli/headroom --out build/deb/packaging

reads `headroom --help` (the subcommands and global flags) and `headroom CMD --help`
for each subcommand, and writes
    man1/headroom.1.gz, man1/headroom-CMD.1.gz   (help2man; headroom-watch.1.gz is watch's)
    bash/headroom                                 (bash-completion, loaded on demand)
    zsh/_headroom                                 (zsh vendor completion)
Nothing here lists a command or a flag: a new one appears in every output with the next
build, and a removed one disappears, so the pages and completions cannot drift from the CLI.
"""
from __future__ import annotations

import argparse
import gzip
import os
import re
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SUMMARY = "find and fix the host resources that kill training jobs"
# Value types whose values are paths (CLI11's TEXT:PATH(existing), the CLI's FILE, DIR...).
PATH_TYPES = re.compile(r"\b(PATH|FILE|DIR)\b")


@dataclass
class Option:
    names: list[str]          # e.g. ["-x", "--one-file-system"]
    takes_value: bool
    choices: list[str]
    paths: bool               # its value is a file or directory
    help: str


@dataclass
class Command:
    name: str
    help: str
    options: list[Option] = field(default_factory=list)
    positionals: bool = False  # takes operands (paths, logs, a command line)


def run_help(argv: list[str]) -> str:
    result = subprocess.run(argv + ["--help"], capture_output=True, text=True, check=True,
                            env={**os.environ, "NO_COLOR": "1"})
    return result.stdout


def sections(text: str) -> dict[str, list[str]]:
    """CLI11's help: "Options:", "Positionals:", "Subcommands:" headings, two-space items."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        heading = re.fullmatch(r"([A-Z][A-Za-z ]*):", line)
        if heading:
            current = found.setdefault(heading.group(1), [])
        elif current is not None and line.startswith("  "):
            current.append(line)
        elif line.strip() and not line.startswith(" "):
            current = None  # the free text after the options
    return found


def parse_options(lines: list[str]) -> list[Option]:
    options: list[Option] = []
    for line in lines:
        item = re.match(r"^  (-\S+)(?: (.*?))?(?:\s{2,}(.*))?$", line)
        if item:
            names = item.group(1).split(",")
            spec = item.group(2) or ""
            spec = re.split(r"\s*\b(?:Excludes|Needs):", spec)[0].strip()
            choices = re.search(r"\{([^}]*)\}", spec)
            options.append(Option(names=names, takes_value=bool(spec),
                                  choices=choices.group(1).split(",") if choices else [],
                                  paths=bool(PATH_TYPES.search(spec)) or spec.endswith("PATH"),
                                  help=(item.group(3) or "").strip()))
        elif options and not options[-1].help:
            options[-1].help = line.strip()  # a long first column: the help is on the next line
    return options


def read_cli(headroom: str) -> tuple[list[Option], list[Command]]:
    top = sections(run_help([headroom]))
    commands = []
    for line in top.get("Subcommands", []):
        name, _, help_text = line.strip().partition(" ")
        command = Command(name=name, help=help_text.strip())
        sub = sections(run_help([headroom, name]))
        command.options = parse_options(sub.get("Options", []))
        command.positionals = bool(sub.get("Positionals"))
        commands.append(command)
    if not commands:
        sys.exit(f"generate.py: no subcommands in `{headroom} --help`")
    return parse_options(top.get("Options", [])), commands


def write_gzip(path: Path, data: bytes) -> None:
    """gzip -9n: no name or time stamp, so a rebuild gives the same bytes (lintian)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                               compresslevel=9, mtime=0) as out:
        out.write(data)


def man_pages(headroom: str, commands: list[Command], out: Path) -> None:
    version = subprocess.run([headroom, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[-1]
    pages = ["headroom"] + [f"headroom-{c.name}" for c in commands]
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        for page, help_text, argv in [("headroom", SUMMARY, [headroom])] + [
                (f"headroom-{c.name}", c.help, [headroom, c.name]) for c in commands]:
            # help2man runs PROGRAM --help: a wrapper named after the page runs the subcommand.
            wrapper = Path(scratch) / page
            wrapper.write_text("#!/bin/sh\nexec " + " ".join(f"'{a}'" for a in argv) + ' "$@"\n')
            wrapper.chmod(stat.S_IRWXU)
            see_also = ", ".join(rf"\fB{p}\fR(1)" for p in pages if p != page)
            include = Path(scratch) / f"{page}.h2m"
            include.write_text(
                "[SEE ALSO]\n" + see_also + "\n.PP\n"
                "The documentation of every command is in /usr/share/doc/headroom/.\n")
            roff = subprocess.run(
                ["help2man", "--no-info", "--no-discard-stderr", "--section=1",
                 f"--version-string={version}", f"--name={help_text}",
                 f"--include={include}", str(wrapper)],
                capture_output=True, text=True, check=True, env={**os.environ, "NO_COLOR": "1"}).stdout
            # help2man dates the page from the clock: pin it for reproducible builds.
            if "SOURCE_DATE_EPOCH" not in os.environ:
                roff = re.sub(r'^(\.TH \S+ "1") "[^"]*"', r'\1 ""', roff, count=1, flags=re.M)
            write_gzip(out / "man1" / f"{page}.1.gz", roff.encode())


def words(options: list[Option]) -> list[str]:
    return [name for option in options for name in option.names]


def bash_completion(globals_: list[Option], commands: list[Command]) -> str:
    value_cases = []
    for command in commands:
        for option in command.options + globals_:
            if option.choices:
                value_cases.append(f"    {command.name}:{'|'.join(option.names)}) "
                                   f"COMPREPLY=($(compgen -W '{' '.join(option.choices)}' -- \"$cur\")); return ;;")
    takes_value = sorted({n for c in commands for o in c.options + globals_ if o.takes_value
                          for n in o.names})
    flag_cases = "\n".join(
        f"    {c.name}) flags='{' '.join(words(c.options + globals_))}' ;;" for c in commands)
    return f"""# bash completion for headroom and headroom-watch -*- shell-script -*-
# Generated from `headroom --help` by packaging/generate.py: do not edit.

_headroom() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local command='' i word
  # The first word that is not a global flag (or a global flag's value) is the command.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${{COMP_WORDS[i]}}
    case $word in
      --host-root|--root) ((i++)) ;;
      -*) ;;
      *) command=$word; break ;;
    esac
  done
  [[ ${{COMP_WORDS[0]##*/}} == headroom-watch ]] && command=watch
  if [[ -z $command ]]; then
    if [[ $prev == --host-root ]]; then
      COMPREPLY=($(compgen -d -- "$cur")); return
    fi
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W '{' '.join(words(globals_))}' -- "$cur"))
    else
      COMPREPLY=($(compgen -W '{' '.join(c.name for c in commands)}' -- "$cur"))
    fi
    return
  fi
  case $command:$prev in
{chr(10).join(value_cases)}
  esac
  case " {' '.join(takes_value)} " in
    *" $prev "*) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local flags=''
  case $command in
{flag_cases}
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}} &&
  complete -o filenames -F _headroom headroom headroom-watch
"""


def zsh_quote(text: str) -> str:
    # Inside _arguments' [...] only brackets need a backslash; quotes end the shell word.
    return text.replace("\\", "\\\\").replace("'", "'\\''").replace("[", "\\[") \
               .replace("]", "\\]")


def zsh_specs(options: list[Option]) -> list[str]:
    specs = []
    for option in options:
        if option.names == ["-h", "--help"]:
            names = "'(- *)'{-h,--help}"
        elif len(option.names) > 1:
            names = "{" + ",".join(option.names) + "}"
        else:
            names = option.names[0]
        value = ""
        if option.choices:
            value = f":value:({' '.join(option.choices)})"
        elif option.takes_value:
            value = ":value:_files" if option.paths or "--dir" in option.names else ":value: "
        if names.startswith("'"):
            specs.append(f"{names}'[{zsh_quote(option.help)}]'")
        elif names.startswith("{"):
            specs.append(f"{names}'[{zsh_quote(option.help)}]{value}'")
        else:
            specs.append(f"'{names}[{zsh_quote(option.help)}]{value}'")
    return specs


def zsh_completion(globals_: list[Option], commands: list[Command]) -> str:
    described = "\n".join(f"    '{c.name}:{zsh_quote(c.help)}'" for c in commands)
    cases = []
    for command in commands:
        specs = zsh_specs(command.options) + (["'*:file:_files'"] if command.positionals else [])
        cases.append(f"    ({command.name})\n      _arguments -s \\\n        "
                     + " \\\n        ".join(specs) + "\n      ;;")
    return f"""#compdef headroom headroom-watch
# zsh completion for headroom, generated from `headroom --help` by packaging/generate.py: do not edit.

_headroom() {{
  local -a commands
  commands=(
{described}
  )
  local curcontext=$curcontext state line
  if [[ $service == headroom-watch ]]; then
    words=(headroom watch "${{words[@]:1}}"); (( CURRENT++ ))
  fi
  _arguments -C \\
    {' '.join(zsh_specs(globals_))} \\
    '1:command:->command' \\
    '*::argument:->argument'
  case $state in
    (command) _describe -t commands 'headroom command' commands ;;
    (argument)
      case $words[1] in
{chr(10).join(cases)}
      esac
      ;;
  esac
}}

_headroom "$@"
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headroom", required=True, help="the built headroom binary")
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--no-man", action="store_true", help="completions only (no help2man)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    globals_, commands = read_cli(args.headroom)
    if not args.no_man:
        man_pages(args.headroom, commands, args.out)
    (args.out / "bash").mkdir(exist_ok=True)
    (args.out / "bash" / "headroom").write_text(bash_completion(globals_, commands))
    (args.out / "zsh").mkdir(exist_ok=True)
    (args.out / "zsh" / "_headroom").write_text(zsh_completion(globals_, commands))


if __name__ == "__main__":
    main()
