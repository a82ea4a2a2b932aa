"""The README's runnable examples: fenced blocks whose info string is `console demo`, run against the demo warehouse.

    .venv/bin/python -m tests.readme_blocks          # print every block's commands with their whole output

A block holds commands (lines starting with `$ costgap `, optionally ending in `# exit N`, the exit code
they must give; 0 otherwise) each followed by the output lines the README shows. A line `...` stands for
any number of lines, and a line ending in ` ...` for any line it begins (an import's id differs per run); every other run of lines must appear, in that order and next to each other, in what
the command prints (stdout and stderr as they interleave, trailing spaces ignored). Each block starts from
a fresh copy of the demo warehouse (COSTGAP_WAREHOUSE; `.costgap/demo.duckdb` in a command means it too),
with `today` pinned to TODAY, so a price's age and the prices in force read the same on any day.
`$ costgap demo` is not run again: the output of the build that made the copy stands for it.
tests/test_readme.py checks every block; a section added to the README later is checked the same way by
marking its examples `console demo`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
INFO = "console demo"  # the fenced block's info string: ```console demo
DEMO_WAREHOUSE = ".costgap/demo.duckdb"  # as the README names it; replaced by the test's copy
TODAY = datetime(2026, 12, 7, 12, 0, tzinfo=timezone.utc)  # the day the README's outputs were pasted on
ELLIPSIS = "..."


@dataclass
class Command:
    argv: list[str]  # after `costgap`
    exit_code: int = 0
    shown: list[str] = field(default_factory=list)  # the output lines the README shows (with `...`)
    line: int = 0  # README line of the command, for the failure message


def blocks(text: str | None = None) -> list[list[Command]]:
    """The README's `console demo` blocks, each a list of commands with the output lines shown under them."""
    text = README.read_text(encoding="utf-8") if text is None else text
    out, cur, inside = [], None, False
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not inside and line.startswith("```") and line[3:].strip() == INFO:
            inside, cur = True, []
            continue
        if inside and line.startswith("```"):
            out.append(cur)
            inside = False
            continue
        if not inside:
            continue
        if line.startswith("$ "):
            words = shlex.split(line[2:], comments=False)
            code = 0
            m = re.search(r"\s#\s*exit\s+(\d+)\s*$", line)
            if m:
                code = int(m.group(1))
                words = shlex.split(line[2:m.start()])
            if not words or words[0] != "costgap":
                raise ValueError(f"README.md:{n}: a `{INFO}` block runs costgap commands only: {line!r}")
            cur.append(Command(words[1:], code, [], n))
        elif cur:
            cur[-1].shown.append(line)
        elif line:
            raise ValueError(f"README.md:{n}: output before the block's first command: {line!r}")
    return out


def _same(shown: str, printed: str) -> bool:
    """A shown line equals the printed one; a shown line ending in ` ...` stands for any line it begins (for
    what differs from run to run, like an import's id)."""
    if shown.endswith(" " + ELLIPSIS):
        return printed.startswith(shown[:-len(ELLIPSIS)].rstrip())
    return shown == printed


def missing(shown: list[str], printed: list[str]) -> str | None:
    """None when every run of shown lines (between `...`) appears in order, each run contiguous; else the first
    run that does not."""
    runs, run = [], []
    for line in shown:
        if line.strip() == ELLIPSIS:
            runs.append(run)
            run = []
        else:
            run.append(line)
    runs.append(run)
    at = 0
    got = [p.rstrip() for p in printed]
    for run in (r for r in runs if r):
        found = next((i for i in range(at, len(got) - len(run) + 1)
                      if all(_same(s, g) for s, g in zip(run, got[i:i + len(run)]))), None)
        if found is None:
            return "\n".join(run)
        at = found + len(run)
    return None


def _show() -> None:
    """Run every block against a fresh demo warehouse here and print the whole output of each command."""
    import os
    import shutil
    import tempfile
    from unittest import mock

    from tests.test_readme import build_demo, run_command

    root = Path(tempfile.mkdtemp(prefix="readme-"))
    demo, demo_out = build_demo(root)
    for i, block in enumerate(blocks()):
        wh = root / f"block{i}.duckdb"
        shutil.copy(demo, wh)
        with mock.patch.dict(os.environ, {"COSTGAP_WAREHOUSE": str(wh), "COSTGAP_RESULTS": str(root / "results")}):
            for cmd in block:
                code, printed = run_command(cmd.argv, wh, demo_out)
                print(f"$ costgap {shlex.join(cmd.argv)}   # exit {code}")
                print("\n".join(printed))
        print()


if __name__ == "__main__":
    _show()
