"""One demo warehouse per test session, built once and shared by every pytest-xdist worker.

    .venv/bin/pytest -q -n 2 tests/test_readme.py tests/test_cli_text.py    # one `costgap demo` between them

`costgap demo` takes 40-60 s of CPU; the tests that read it (the README's examples, the command line's
text, the site-against-CLI consistency checks) share one build under the session's temporary root, made by
whichever worker asks first while the others wait on a lock. A test that writes copies the file first; the
shared one is only ever read.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def shared_demo(tmp_path_factory) -> tuple[Path, list[str]]:
    """(the demo warehouse, the lines `costgap demo` printed), built once per session."""
    from typer.testing import CliRunner

    from cli.main import app

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the session's root under xdist
    folder = root / "shared-demo"
    with open(root / "shared-demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = folder / "demo-output.txt"
        if not done.exists():
            folder.mkdir(exist_ok=True)
            res = CliRunner().invoke(app, ["demo", "--warehouse", str(folder / "demo.duckdb"),
                                           "--site", str(shared_demo_site(folder / "demo.duckdb")), "--no-images"])
            assert res.exit_code == 0, res.output
            done.write_text(res.output, encoding="utf-8")
    return folder / "demo.duckdb", done.read_text(encoding="utf-8").splitlines()


def shared_demo_site(warehouse: Path) -> Path:
    """The site `costgap demo` rendered beside the shared warehouse (shared_demo), read only as well."""
    return Path(warehouse).parent / "demo-site"
