"""The probe bundle's contract as names only: what moving the probe's code must leave unchanged.

    .venv/bin/python -m tests.probe_contract BUNDLE.json > tests/fixtures/probe_quick_cpu_contract.json

`contract(doc)` keeps the schema and probe versions, the field names at every level (per
measurement also its benchmark version and its params' names, per fine-tune record its fields),
the tasks that left attempts and the telemetry columns; it drops every measured value, and
environment.extra, whose keys depend on the host (container, NVML). A fine-tune record's fields
depend on its status (a run that timed out on a loaded box has no measured fields), so the status
stands beside them. Two quick-profile CPU bundles of the same code and seed have the same contract;
tests/test_probe_cli.py holds today's probe to the one the pre-move code wrote (its fine-tune
entry from the same code's run_finetunes(['tiny'], device='cpu', budget_s=900, options={'steps': 8}),
as this 2-core box timed the bundle's own fine-tune out).
"""

from __future__ import annotations

import json
import sys


def _fields(rows: list[dict]) -> list[str]:
    return sorted(set().union(*(r.keys() for r in rows))) if rows else []


def contract(doc: dict) -> dict:
    return {
        "schema_version": doc["schema_version"],
        "probe_version": doc["probe_version"],
        "fields": sorted(doc),
        "environment": sorted(k for k in doc["environment"] if k != "extra"),
        "attempt_fields": _fields(doc["attempts"]),
        "tasks": sorted({a["task"] for a in doc["attempts"]}),
        "measurement_fields": _fields(doc["measurements"]),
        "measurements": sorted(f"{m['benchmark']} v{m['benchmark_version']} {m['metric']}: "
                               + ",".join(sorted(m["params"])) for m in doc["measurements"]),
        "finetune": sorted(f"{f['preset']} {f['status']}: " + ",".join(sorted(f)) for f in doc["finetune"]),
        "telemetry": sorted(doc["telemetry"]),
    }


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        print(json.dumps(contract(json.load(f)), indent=1))
