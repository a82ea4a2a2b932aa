"""Plain-dict builders for bundle measurements and attempts, and the attempt-recording task runner.

    python -c "from tasks.probe.record import run_task; print(run_task('demo', lambda: [], []))"

Every try of every task lands in `attempts` (DESIGN.md): `run_task` times the call, classifies a
failure into the bundle's error kinds and retries up to `retries` more times.
"""

from __future__ import annotations

import time
import traceback
from datetime import datetime, timezone
from typing import Any, Callable

from tasks.probe.host import nvml


def iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def measurement(
    benchmark: str, version: str, metric: str, value: float, unit: str, *,
    params: dict | None = None, repeats: int = 1, statistic: str = "median",
    spread: float | None = None, spread_kind: str | None = None, peak: float | None = None,
    peak_source: str | None = None, flags: list[str] | None = None,
    conditions: dict | None = None, window=None,
) -> dict[str, Any]:
    """One bundle Measurement dict. With an nvml.Window, its conditions are taken and the
    "throttled" flag set when a throttle reason held over enough of it; else from `conditions`."""
    flags = list(flags or [])
    if window is not None:
        conditions = window.conditions()
        throttled = window.throttled()
    else:
        throttled = nvml.throttled(conditions)
    if throttled and "throttled" not in flags:
        flags.append("throttled")
    return {
        "benchmark": benchmark, "benchmark_version": version, "metric": metric,
        "value": float(value), "unit": unit, "params": dict(params or {}),
        "peak": float(peak) if peak else None, "peak_source": peak_source if peak else None,
        "repeats": int(max(1, repeats)), "statistic": statistic,
        "spread": float(spread) if spread is not None else None,
        "spread_kind": spread_kind if spread is not None else None,
        "flags": flags, "conditions": conditions,
    }


def attempt(task: str, n: int, state: str, duration_s: float, *, error_kind: str | None = None,
            message: str | None = None, started_at: str | None = None) -> dict[str, Any]:
    return {"task": task, "attempt": n, "state": state, "error_kind": error_kind,
            "message": (message or None) and message[:4000], "duration_s": max(0.0, duration_s),
            "started_at": started_at}


class NotApplicable(Exception):
    """Raised by a benchmark that does not apply here (e.g. host<->device on a CPU host)."""


def classify(exc: BaseException) -> str:
    """Bundle error_kind for an exception."""
    text = f"{type(exc).__name__}: {exc}".lower()
    if "out of memory" in text or type(exc).__name__ == "OutOfMemoryError":
        return "oom"
    if isinstance(exc, TimeoutError) or "timed out" in text:
        return "timeout"
    if "cuda" in text or "cublas" in text or "nccl" in text:
        return "cuda_error"
    return "other"


def run_task(task: str, fn: Callable[[], list], attempts: list[dict], *, retries: int = 0) -> list:
    """Run `fn` (returning a list of records), appending one attempt per try. [] if all fail."""
    for n in range(1, retries + 2):
        started, t = iso_now(), time.perf_counter()
        try:
            out = fn()
        except NotApplicable as e:
            attempts.append(attempt(task, n, "not_applicable", time.perf_counter() - t,
                                    message=str(e), started_at=started))
            return []
        except Exception as e:  # a benchmark failure is data, not a crash of the probe
            msg = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
            attempts.append(attempt(task, n, "failed", time.perf_counter() - t,
                                    error_kind=classify(e), message=msg, started_at=started))
            _free_cuda()
            continue
        attempts.append(attempt(task, n, "completed", time.perf_counter() - t, started_at=started))
        return out
    return []


def _free_cuda() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:
        pass
