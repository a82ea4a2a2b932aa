"""The `costgap` entry point: hands the command to the warm process when one serves this machine
(runtime/warm.py: no import cost), else runs it here (cli/main.py). Standard library only until then.

    costgap --help
"""

from __future__ import annotations

import sys


def main() -> None:
    from runtime import warm

    code = warm.delegate(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from cli.main import main as run_here

    run_here()


if __name__ == "__main__":
    main()
