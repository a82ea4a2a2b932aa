"""Commands as a person runs them: ten `costgap ingest` of one bundle each and ten `costgap gap`, with the
machine's local Prefect server already running, then the same with an ephemeral server per command.

    .venv/bin/python -m tests.bench commands

On a warehouse built by `costgap demo` (the committed samples), in a fresh PREFECT_HOME on a free port,
every command a real child process of the `costgap` entry point, wall time from spawn to exit. With the
local server, commands fork from its warm process (runtime/warm.py), which `costgap server start` starts
and the bench waits for. Prints each
mode's median and the ratio. Target (issue 23): an ingest of one bundle with a running server <= 3 s
median on this 2-core box, and >= 5x faster than with an ephemeral server.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runtime import warm
from tests.factories import bundle_doc, write_bundle
from tests.pool_harness import free_port

REPEATS = 10
TARGET_INGEST_S = 3.0
TARGET_RATIO = 5.0
COSTGAP = [str(Path(sys.executable).with_name("costgap"))]  # the entry point a person runs (cli/launch.py)
REPO = Path(__file__).resolve().parents[2]


def _timed(env: dict, *args: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([*COSTGAP, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"costgap {' '.join(args)} exited {r.returncode}: {r.stderr[-2000:]}")
    return wall


def _pair(env: dict, wh: Path) -> list[str]:
    """The overview's first pair: the two cheapest targets of the preset with the most targets."""
    r = subprocess.run([*COSTGAP, "targets", "--warehouse", str(wh), "--json"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300, check=True)
    rows = json.loads(r.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    by_preset: dict[str, list[str]] = {}
    for row in rows:
        by_preset.setdefault(row["preset"], []).append(row["target"])
    preset, targets = max(by_preset.items(), key=lambda kv: len(kv[1]))
    return [targets[0], targets[1], "--preset", preset]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="costgap-bench-commands-") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(PREFECT_HOME=str(root / "prefect-home"), COSTGAP_SERVER_PORT=str(free_port()),
                   PREFECT_LOGGING_LEVEL="WARNING", COSTGAP_API="local")
        wh = root / "demo.duckdb"
        print("building the demo warehouse and starting the local server (not timed) ...", flush=True)
        subprocess.run([*COSTGAP, "demo", "--warehouse", str(wh), "--site", str(root / "site"), "--no-images"],
                       cwd=REPO, env=env, check=True, capture_output=True, text=True, timeout=1800)
        subprocess.run([*COSTGAP, "server", "start"], cwd=REPO, env=env, check=True, capture_output=True, timeout=600)
        deadline = time.monotonic() + 300
        while not warm.answering(warm.prefect_home(env)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the warm process did not answer in 300 s: {root / 'prefect-home' / warm.LOG}")
            time.sleep(0.5)
        pair = _pair(env, wh)
        bundles = [write_bundle(root / "in", bundle_doc(seq=1000 + i)) for i in range(2 * REPEATS)]
        figures: dict[str, dict[str, list[float]]] = {}
        try:
            for mode, batch in (("local", bundles[:REPEATS]), ("ephemeral", bundles[REPEATS:])):
                menv = {**env, "COSTGAP_API": mode}
                ingest = [_timed(menv, "ingest", str(b), "--warehouse", str(wh)) for b in batch]
                gap = [_timed(menv, "gap", *pair, "--warehouse", str(wh)) for _ in range(REPEATS)]
                figures[mode] = {"ingest": ingest, "gap": gap}
                print(f"{mode:9}  ingest median {statistics.median(ingest):6.2f} s (min {min(ingest):.2f}, max "
                      f"{max(ingest):.2f})   gap median {statistics.median(gap):6.2f} s", flush=True)
        finally:
            subprocess.run([*COSTGAP, "server", "stop"], cwd=REPO, env=env, capture_output=True, timeout=120)
    local, eph = (statistics.median(figures[m]["ingest"]) for m in ("local", "ephemeral"))
    ratio = eph / local
    gap_ratio = statistics.median(figures["ephemeral"]["gap"]) / statistics.median(figures["local"]["gap"])
    print(f"ingest of one bundle: {local:.2f} s with the local server running, {eph:.2f} s with an ephemeral "
          f"server: {ratio:.1f}x (target <= {TARGET_INGEST_S:.0f} s and >= {TARGET_RATIO:.0f}x)")
    print(f"gap (reads only, needs no server): ephemeral/local {gap_ratio:.2f}x")
    return 0 if local <= TARGET_INGEST_S and ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
