"""The suite's own layout, as the Makefile runs it.

    .venv/bin/python -m pytest -q tests/test_suite_layout.py

`make test` runs the tests marked `timed` alone after the parallel part, collecting only the files the
Makefile's TIMED_TESTS names (tests/conftest.py, Makefile): a `timed` test in any other file would never run.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _timed_files_in_makefile() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    found = re.search(r"^TIMED_TESTS\s*:?=\s*(.+)$", text, re.MULTILINE)
    assert found, "Makefile: no TIMED_TESTS line (the files `make test` collects for its timed part)"
    assert "$(TIMED_TESTS)" in text, "Makefile: the timed part does not collect $(TIMED_TESTS)"
    return set(found.group(1).split())


def test_every_timed_test_is_in_a_file_the_timed_part_collects():
    marked = {f"tests/{p.name}" for p in (REPO / "tests").glob("test_*.py")
              if re.search(r"mark\.timed\b", p.read_text(encoding="utf-8"))}
    listed = _timed_files_in_makefile()
    assert marked, "no test is marked timed: drop TIMED_TESTS and the timed part from the Makefile"
    assert marked <= listed, f"marked `timed` but not in the Makefile's TIMED_TESTS: {sorted(marked - listed)}"
    assert all((REPO / f).is_file() for f in listed), f"TIMED_TESTS names a missing file: {sorted(listed)}"
