"""Compile the bytecode of what costgap's commands and tests import, by importing it once.

    PYTHONDONTWRITEBYTECODE= .venv/bin/python -m runtime.bytecode torch prefect.server.api.server ...

The Makefile's install runs this (two processes side by side) instead of compiling every file of every
installed package: this machine sets PYTHONDONTWRITEBYTECODE, so a module without a .pyc is compiled again by
every process that imports it, and compiling all of site-packages costs far more than the few hundred modules
the commands use. Importing a module writes the .pyc of it and of everything it imports, provided bytecode
writing is on for this process (the Makefile runs it with PYTHONDONTWRITEBYTECODE unset). A module that fails
to import is named on stderr and skipped: it compiles, or fails, where it is first used.
"""

from __future__ import annotations

import importlib
import sys


def main(modules: list[str]) -> int:
    if sys.dont_write_bytecode:
        print("runtime.bytecode: bytecode writing is off here (PYTHONDONTWRITEBYTECODE is set): nothing to do",
              file=sys.stderr)
        return 0
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as e:  # reported, not fatal: an optional package's import is not the install's business
            print(f"runtime.bytecode: importing {name} to compile its bytecode failed: {type(e).__name__}: {e}",
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
