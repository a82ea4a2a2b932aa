"""Fan-out is parallel: a compare over two pool targets takes <= max(probe time) + 20 s.

    .venv/bin/python -m tests.bench fanout

Starts a real Prefect server on loopback, two process work pools with a worker each (two
"instance types" on this host), deploys the probe deployments, then times one compare flow over
both targets (in this process, quick profile; COSTGAP_BENCH_SKIP, default "finetune,storage",
keeps the bench ~2 min). A target's probe time is what it takes that target to answer one
dispatch: its probe flow run from creation to end as Prefect recorded it (worker pickup, process
start and the probe itself: all of it happens once per target, in parallel). The Running -> end
part is printed too. Prints compare wall time, the probe times, their sum, the overhead over the
slowest probe and the ratio wall / (max probe + 20 s); returns 1 when that ratio is above 1.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

OVERHEAD_BUDGET_S = 20.0  # issue 5: compare <= max(probe time) + 20 s
SKIP = json.dumps([p for p in os.environ.get("COSTGAP_BENCH_SKIP", "finetune,storage").split(",") if p])
TARGETS = """
[[target]]
id = "bench-a"
dispatch = "pool"
work_pool = "bench-pool-a"
timeout_s = 600
skip = SKIP

[[target]]
id = "bench-b"
dispatch = "pool"
work_pool = "bench-pool-b"
timeout_s = 600
skip = SKIP
"""


def main() -> int:
    from tests.pool_harness import Harness

    with tempfile.TemporaryDirectory(prefix="costgap-bench-fanout-") as tmp:
        root = Path(tmp)
        targets = root / "targets.toml"
        targets.write_text(TARGETS.replace("SKIP", SKIP))
        with Harness(root / "h", {"COSTGAP_TARGETS": str(targets)}) as h:
            for pool in ("bench-pool-a", "bench-pool-b"):
                h.worker(pool)
            # compare/report deployments go to the control pool: it must exist, no worker needed here
            h.run(["prefect", "work-pool", "create", "costgap-control", "--type", "process", "--overwrite"])
            yaml_file = root / "prefect.yaml"
            h.run([sys.executable, "-m", "deploy.render", "--targets-file", str(targets), "--out", str(yaml_file)])
            h.run(["prefect", "--no-prompt", "deploy", "--all", "--prefect-file", str(yaml_file)])
            return _measure(h, root, targets)


def _measure(h, root: Path, targets: Path) -> int:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, PREFECT_LOGGING_LEVEL, temporary_settings

    from flows.compare import compare

    with temporary_settings({PREFECT_API_URL: h.api, PREFECT_LOGGING_LEVEL: "WARNING"}):
        h.wait_workers(["bench-pool-a", "bench-pool-b"])
        t0 = time.perf_counter()
        state = compare(targets=["bench-a", "bench-b"], profile="quick", warehouse=str(root / "wh.duckdb"),
                        site=str(root / "site"), results=str(root / "results"), targets_file=str(targets),
                        return_state=True)
        wall = time.perf_counter() - t0
        summary = state.result(raise_on_failure=False)
        if not isinstance(summary, dict) or summary["status"] != "completed":
            print(f"compare did not complete: {state.name}: {state.message}")
            return 1
        probe_s, running_s = {}, {}
        with get_client(sync_client=True) as c:
            for o in summary["outcomes"]:
                run = c.read_flow_run(o["probe_flow_run_id"])
                probe_s[o["target"]] = (run.end_time - run.created).total_seconds()
                running_s[o["target"]] = (run.end_time - run.start_time).total_seconds()
    slowest, total = max(probe_s.values()), sum(probe_s.values())
    ratio = wall / (slowest + OVERHEAD_BUDGET_S)
    print(f"skipped probe parts: {SKIP}")
    for t, s in probe_s.items():
        print(f"probe {t:<10} {s:7.1f} s  (flow run created -> end; {running_s[t]:.1f} s of it Running)")
    print(f"compare wall     {wall:7.1f} s  (2 pool targets, dispatch + wait + land + report + artifacts)")
    print(f"sum of probes    {total:7.1f} s  (what a serial fan-out would need at least)")
    print(f"overhead         {wall - slowest:7.1f} s  over the slowest probe (budget {OVERHEAD_BUDGET_S:.0f} s)")
    print(f"ratio            {ratio:7.2f}    wall / (max probe + {OVERHEAD_BUDGET_S:.0f} s); <= 1 meets the target")
    print(f"parallel speedup {total / wall:7.2f}x   sum of probes / wall")
    return 0 if ratio <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
