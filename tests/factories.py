"""Build valid, sealed bundle documents for tests (plain dicts, as the probe writes them).

    python -c "from tests.factories import bundle_doc; print(bundle_doc()['bundle_id'])"
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tasks.canonical import canonical_json, seal

BASE_TIME = datetime(2026, 11, 2, 12, 0, tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def bundle_doc(
    target: str = "local",
    started_at: datetime | None = None,
    tokens_per_s: float = 1000.0,
    gemm_tflops: float = 0.5,
    gpu_name: str | None = None,
    driver: str | None = None,
    torch_version: str = "2.13.0+cpu",
    failed_attempts: int = 0,
    profile: str = "quick",
    seq: int = 0,
    **overrides: Any,
) -> dict[str, Any]:
    """A valid schema_version 1 bundle. `seq` varies the content so ids differ."""
    t0 = started_at or BASE_TIME
    attempts = [
        {"task": "finetune", "attempt": i + 1, "state": "failed", "error_kind": "oom",
         "message": "CUDA out of memory (injected)", "duration_s": 1.5}
        for i in range(failed_attempts)
    ]
    attempts += [
        {"task": "gemm", "attempt": 1, "state": "completed", "duration_s": 2.0},
        {"task": "finetune", "attempt": failed_attempts + 1, "state": "completed", "duration_s": 9.0},
    ]
    doc: dict[str, Any] = {
        "schema_version": 1,
        "probe_version": "0.1.0",
        "target": target,
        "profile": profile,
        "started_at": _iso(t0),
        "finished_at": _iso(t0 + timedelta(seconds=30)),
        "environment": {
            "hostname": "test-host", "os": "Linux", "kernel": "6.1.0", "python": "3.11.7",
            "torch": torch_version, "cpu_model": "Test CPU", "cpu_cores": 2, "ram_gib": 24.0,
            "gpu_name": gpu_name, "gpu_count": 1 if gpu_name else 0, "driver": driver,
            "source": "nvml" if gpu_name else "none",
        },
        "attempts": attempts,
        "measurements": [
            {"benchmark": "gemm", "benchmark_version": "1", "metric": "fp32_tflops",
             "value": gemm_tflops, "unit": "TFLOP/s", "params": {"m": 2048, "n": 2048, "k": 2048, "seq": seq},
             "peak": None, "peak_source": None, "repeats": 5, "statistic": "median",
             "spread": 0.01, "spread_kind": "iqr", "flags": []},
            {"benchmark": "memory", "benchmark_version": "1", "metric": "copy_gbps",
             "value": 10.0, "unit": "GB/s", "params": {"bytes": 1 << 26}, "repeats": 5,
             "statistic": "median", "spread": 0.2, "spread_kind": "iqr"},
        ],
        "finetune": [
            {"preset": "tiny", "status": "ok", "mode": "full", "precision": "fp32", "device": "cpu",
             "seq_len": 128, "micro_batch": 4, "steps_warmup": 2, "steps_timed": 5,
             "tokens_per_s": tokens_per_s, "step_time_s": [0.5, 0.51, 0.5, 0.49, 0.5],
             "step_time_median_s": 0.5, "mfu": None, "loss_first": 5.5, "loss_last": 4.9,
             "params_total": 3_000_000, "params_trainable": 3_000_000, "params_non_embedding": 2_000_000}
        ],
        "telemetry": {"t": [], "gpu": [], "util": [], "mem_util": [], "power_w": [],
                      "sm_clock_mhz": [], "temp_c": []},
        "origin": {"kind": "cli"},
    }
    doc.update(copy.deepcopy(overrides))
    return seal(doc)


def write_bundle(directory: Path, doc: dict[str, Any], name: str | None = None) -> Path:
    """Write a bundle document as the probe does: <bundle_id>.json."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (name or f"{doc['bundle_id']}.json")
    path.write_bytes(canonical_json(doc))
    return path


def write_raw(directory: Path, name: str, payload: bytes | str | dict) -> Path:
    """Write arbitrary (possibly broken) content, for bad-input cases."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    if isinstance(payload, dict):
        payload = json.dumps(payload)
    path.write_bytes(payload.encode() if isinstance(payload, str) else payload)
    return path
