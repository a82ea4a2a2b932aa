"""How busy the GPU was: NVML samples of a phase -> utilization, SM clock against its maximum, throttle reasons.

    .venv/bin/pytest -q tests/test_probe_host_checks.py -k busy

The samples are the ones the run's Sampler already takes (tasks/probe/host/nvml.py, 10 Hz). For each
fine-tune preset the phase "finetune:<preset>" covers exactly its timed steady-state window
(finetune/run.py sets it on entering the window and resets it on leaving). No threshold is applied
here: the utilization is kept as a histogram of NVML's integer percentages (`util_counts[i]` samples
read i%), so the share at or above any threshold is exact and is judged in one place
(tasks/cost/well_used.py). A CPU host (no NVML) has no samples: the part is not applicable.
"""

from __future__ import annotations

import statistics

from tasks.probe.host.nvml import THROTTLE_REASONS, decode_reasons
from tasks.probe.record import NotApplicable, measurement

BENCHMARK = "gpu_busy"
VERSION = "1"


def summary(rows: list[dict], max_clock_mhz: float | None) -> dict | None:
    """Utilization histogram, mean and percentiles, SM clock median and share of max, throttle reasons and
    the share of samples that carried one. None without a utilization reading."""
    utils = [int(round(r["util"])) for r in rows if r.get("util") is not None]
    if not utils:
        return None
    counts = [0] * 101
    for u in utils:
        counts[min(100, max(0, u))] += 1
    clocks = [r["sm_clock_mhz"] for r in rows if r.get("sm_clock_mhz") is not None]
    masks = [r["reasons"] for r in rows if r.get("reasons") is not None]
    union = 0
    for m in masks:
        union |= m
    held = sum(1 for m in masks if THROTTLE_REASONS.intersection(decode_reasons(m)))
    clock = float(statistics.median(clocks)) if clocks else None
    ts = [r["t"] for r in rows if r.get("t") is not None]
    s = sorted(utils)
    return {
        "samples": len(utils), "util_mean_pct": sum(utils) / len(utils), "util_counts": counts,
        "util_p10_pct": s[int(0.1 * (len(s) - 1))], "util_p50_pct": s[(len(s) - 1) // 2],
        "sm_clock_median_mhz": clock, "sm_clock_max_mhz": max_clock_mhz,
        "sm_clock_share": round(clock / max_clock_mhz, 4) if clock and max_clock_mhz else None,
        "throttle_reasons": [n for n in decode_reasons(union) if n != "gpu_idle"] if masks else None,
        "throttled_share": round(held / len(masks), 4) if masks else None,
        "window_s": round(max(ts) - min(ts), 2) if len(ts) > 1 else None,
    }


def phase_rows(sampler, phase: str, gpus: list[int] | None = None) -> list[dict]:
    """The sampler's rows of one phase (only `gpus` where given)."""
    return [r for r in sampler.rows() if r.get("phase") == phase and (gpus is None or r["gpu"] in gpus)]


def _max_clock(sampler, gpus: list[int] | None) -> float | None:
    tops = [c for i, c in enumerate(getattr(sampler, "max_clock_mhz", []) or []) if c and (gpus is None or i in gpus)]
    return float(max(tops)) if tops else None


def measure_busy(sampler, finetunes: list[dict], gpus: list[int] | None = None) -> list[dict]:
    """One measurement per fine-tune that ran a timed window: its mean utilization (%), the histogram and
    the clock/throttle facts in params."""
    if sampler is None or getattr(sampler, "nv", None) is None:
        raise NotApplicable("no NVML on this host: GPU utilization was not sampled")
    out = []
    for f in finetunes:
        if f.get("status") not in ("ok", "unstable") or f.get("device") != "cuda":
            continue
        phase = f"finetune:{f['preset']}"
        s = summary(phase_rows(sampler, phase, gpus), _max_clock(sampler, gpus))
        if s is None:
            continue
        out.append(measurement(BENCHMARK, VERSION, "util_mean_pct", s.pop("util_mean_pct"), "%",
                               params={"preset": f["preset"], "phase": phase, **s}, repeats=s["samples"],
                               statistic="mean"))
    if not out:
        raise NotApplicable("no fine-tune ran a timed window on a GPU: nothing to judge")
    return out
