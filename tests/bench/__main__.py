"""Run the project's benchmarks: every tests/bench/bench_*.py main(), one after another.

    make bench                                   # all of them
    .venv/bin/python -m tests.bench land cost   # only those whose name contains 'land' or 'cost'

Each benchmark prints its own figures and ratios and returns 0 when it met its target. Benchmarks are
not unit tests: targets are measured and printed here, never asserted inside the test suite.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import tests.bench as bench_pkg


def main(argv: list[str]) -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(bench_pkg.__path__) if m.name.startswith("bench_"))
    if argv:
        names = [n for n in names if any(a in n for a in argv)]
    if not names:
        print("no benchmark matched", argv)
        return 2
    results: list[tuple[str, int, float]] = []
    for name in names:
        print(f"\n=== {name} ===", flush=True)
        t0 = time.perf_counter()
        try:
            rc = int(importlib.import_module(f"tests.bench.{name}").main() or 0)
        except Exception as e:  # one broken benchmark must not hide the others' figures
            print(f"{name}: error: {type(e).__name__}: {e}")
            rc = 1
        results.append((name, rc, time.perf_counter() - t0))
    print("\n=== summary ===")
    for name, rc, secs in results:
        print(f"{name:<24} {'met target' if rc == 0 else 'MISSED/ERROR':<13} {secs:7.1f} s")
    return 0 if all(rc == 0 for _, rc, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
