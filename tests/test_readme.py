"""Every command example in the README prints what the README shows (tests/readme_blocks.py says how).

    .venv/bin/pytest -q tests/test_readme.py
    .venv/bin/python -m tests.readme_blocks      # the whole output of each example, to paste from

The demo warehouse is built once per session (`costgap demo`, as the README's setup does;
tests/demo_world.py); each `console demo` block runs on its own copy, in this process (CliRunner), with
`today` pinned (readme_blocks.TODAY). A user error is printed and exits 2 exactly as cli/main.py does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.errors import UserError
from tests.demo_world import shared_demo
from tests.readme_blocks import DEMO_WAREHOUSE, TODAY, blocks, missing

pytestmark = pytest.mark.slow  # one `costgap demo` build, then every README command against a copy

BLOCKS = blocks()


def build_demo(root: Path) -> tuple[Path, list[str]]:
    """`costgap demo` into `root`: the warehouse and the lines it printed."""
    wh, site = root / "demo.duckdb", root / "demo-site"
    res = CliRunner().invoke(app, ["demo", "--warehouse", str(wh), "--site", str(site), "--no-images"])
    assert res.exit_code == 0, res.output
    return wh, res.output.splitlines()


def run_command(argv: list[str], warehouse: Path, demo_out: list[str]) -> tuple[int, list[str]]:
    """One README command on `warehouse` with today pinned: (exit code, lines printed, stdout and stderr)."""
    from unittest import mock

    if argv[:1] == ["demo"]:
        return 0, demo_out
    argv = [str(warehouse) if a == DEMO_WAREHOUSE else a for a in argv]
    with mock.patch("tasks.cost.rules.today", lambda: TODAY):
        res = CliRunner().invoke(app, argv)
    lines = res.output.splitlines()
    if isinstance(res.exception, UserError):  # cli/main.py: one line on stderr, exit 2
        return 2, lines + [f"costgap: error: {res.exception}"]
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, lines


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, list[str]]:
    return shared_demo(tmp_path_factory)  # one `costgap demo` for the session (tests/demo_world.py)


def test_the_readme_has_examples_to_check():
    assert len(BLOCKS) >= 4 and all(BLOCKS), "README.md: no `console demo` blocks (or an empty one)"
    assert any(c.argv[:1] == ["targets"] for b in BLOCKS for c in b)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{b[0].line}" for b in BLOCKS])
def test_readme_example(block, demo, tmp_path, monkeypatch):
    wh = tmp_path / "demo.duckdb"
    shutil.copy(demo[0], wh)
    monkeypatch.setenv("COSTGAP_WAREHOUSE", str(wh))
    monkeypatch.setenv("COSTGAP_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("COSTGAP_SITE", str(tmp_path / "site"))
    for cmd in block:
        code, printed = run_command(cmd.argv, wh, demo[1])
        where = f"README.md:{cmd.line}: costgap {' '.join(cmd.argv)}"
        assert code == cmd.exit_code, f"{where}: exit {code}, the README says {cmd.exit_code}\n" + "\n".join(printed)
        gap = missing(cmd.shown, printed)
        assert gap is None, f"{where}: the README shows\n{gap}\nbut it printed\n" + "\n".join(printed)


def test_the_comparison_needs_every_shown_line_in_order_and_next_to_each_other():
    printed = ["a", "b", "c", "d"]
    assert missing(["a", "b"], printed) is None and missing(["...", "c", "d"], printed) is None
    assert missing(["a", "...", "d"], printed) is None
    assert missing(["a", "c"], printed) == "a\nc"  # not next to each other without `...`
    assert missing(["c", "...", "a"], printed) == "a"  # not in order
    assert missing(["a", "x"], printed) == "a\nx"
    assert missing(["imported (import 3f2a)"], ["imported (import 9b1c)"]) is not None  # ids differ per run
    assert missing(["imported ...", "b"], ["x", "imported (import 9b1c)", "b"]) is None  # ` ...`: the line's start


def test_blocks_read_commands_exit_codes_and_shown_lines():
    text = ("```console demo\n$ costgap targets\nline 1\n...\n$ costgap gap a a   # exit 2\ncostgap: error: x\n```\n"
            "```sh\n$ costgap not-checked\n```\n")
    (block,) = blocks(text)
    assert [(c.argv, c.exit_code, c.shown) for c in block] == [
        (["targets"], 0, ["line 1", "..."]), (["gap", "a", "a"], 2, ["costgap: error: x"])]
    with pytest.raises(ValueError, match="costgap commands only"):
        blocks("```console demo\n$ rm -rf /\n```\n")
