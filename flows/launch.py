"""The `costgap` entry point: hands the command to the warm process when one serves this machine
(flows/warm.py: no import cost), else runs it here (flows/cli.py). Standard library only until then.

    costgap --help
"""

from __future__ import annotations

import sys


def main() -> None:
    from flows import warm

    code = warm.delegate(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from flows.cli import main as run_here

    run_here()


if __name__ == "__main__":
    main()
