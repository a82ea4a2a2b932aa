"""Burst vs sustained GEMM (issue 10): the best bf16 shape run continuously for `duration_s`.

    python -m tasks.probe --profile standard --target local --out /tmp/b   # runs after the search

mamf-finder's MAMF is the burst peak; its MSMF is the rate sustained at full power draw. Here the
search's best shape runs back to back (no L2 flush: a training loop's steady load) in windows of
`window_s`, each timed with one CUDA event pair; sustained = trimmed median of the window
TFLOP/s, ratio = sustained / burst. Each window's NVML conditions (SM clock, power, temperature,
clock-event reasons) are kept; a power-capped H200 shows "sw_power_cap" and a ~1575 MHz clock.

Which shape: the search leaves its refined candidates (burst-best first) in the bf16 measurement's
params; ranked by burst they differ by ~1%, but at the power cap the clock a shape holds depends
on its power per FLOP, so the burst order need not hold. `rank_capped` therefore loads the GPU
back to back for `pick_ramp_s` (to the cap), then times each candidate for `pick_window_s` in
`pick_rounds` alternating rounds, and the shape held for `duration_s` is the one with the best
power-capped rate (params: pick_shapes, pick_capped_tflops); its own burst figure gives the ratio.

The same loop then holds SustainedConfig.fixed_shape (variant "fixed", metric
`<dtype>_sustained_fixed_tflops`): one shape on every instance type, so the figure compares like
for like across types and over time whatever shape the search picked.
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import torch

from tasks.probe.hardware.timing import median, time_block, time_iters, trimmed_median
from tasks.probe.host.specs import GpuSpec
from tasks.probe.profiles import SustainedConfig
from tasks.probe.record import NotApplicable, measurement

BENCHMARK = "gemm_sustained"
VERSION = "2"  # 2: the held shape is the search candidate with the best power-capped rate; 1: the
# burst-best shape
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _operands(shape, device: str, dtype: str):
    """(fn, flops, seconds per call) for back-to-back products of one shape (no L2 flush)."""
    m, n, k = shape
    dt = TORCH_DTYPES[dtype]
    a = torch.randn(m, k, device=device, dtype=dt)
    b = torch.randn(k, n, device=device, dtype=dt)
    out = torch.empty(m, n, device=device, dtype=dt)
    fn = lambda: torch.mm(a, b, out=out)  # noqa: E731  (the closure keeps a, b, out alive)
    per_call = sorted(time_iters(fn, device=device, iters=5, warmup=2))[2]
    return fn, 2.0 * m * n * k, per_call


def rank_capped(shapes: list[list[int]], cfg: SustainedConfig, *, device: str,
                dtype: str = "bf16") -> list[float]:
    """Power-capped TFLOP/s of each shape: ramp on the first, then alternate short blocks."""
    ops = [_operands(s, device, dtype) for s in shapes]
    fn0, _, call0 = ops[0]
    t_end = time.perf_counter() + cfg.pick_ramp_s
    while time.perf_counter() < t_end:
        time_block(fn0, device=device, reps=max(1, int(0.25 / call0)))
    rates: list[list[float]] = [[] for _ in shapes]
    for _ in range(cfg.pick_rounds):
        for i, (fn, flops, per_call) in enumerate(ops):
            reps = max(1, int(cfg.pick_window_s / per_call))
            rates[i].append(flops * reps / time_block(fn, device=device, reps=reps) / 1e12)
    del ops
    return [median(r) for r in rates]


def measure_sustained(cfg: SustainedConfig, *, device: str, shape: list[int] | None,
                      burst_tflops: float | None, spec: GpuSpec, sampler=None,
                      dtype: str = "bf16", variant: str = "best",
                      candidates: list[list[int]] | None = None,
                      candidate_burst: list[float] | None = None) -> list[dict]:
    """variant "best": the search candidate with the best power-capped rate (or `shape` when
    there is nothing to rank), plus the sustained / burst ratio at that shape; "fixed": the
    profile's fixed shape (no ratio: the burst was measured at another shape)."""
    if variant not in ("best", "fixed"):
        raise ValueError(f"variant = {variant!r}: expected 'best' or 'fixed'")
    if not str(device).startswith("cuda"):
        raise NotApplicable("sustained GEMM needs a CUDA device (power caps and clocks are GPU facts)")
    if not cfg.enabled:
        raise NotApplicable("sustained GEMM disabled in this profile")
    if variant == "fixed":
        if cfg.fixed_shape is None:
            raise NotApplicable("no fixed sustained shape in this profile")
        shape, burst_tflops = list(cfg.fixed_shape), None
    source = "fixed" if variant == "fixed" else ("search_best" if shape else "default")
    pick: dict = {}
    if variant == "best" and candidates and len(candidates) > 1 and cfg.pick_ramp_s > 0:
        t_pick = time.perf_counter()
        capped = rank_capped(candidates, cfg, device=device, dtype=dtype)
        i = max(range(len(candidates)), key=lambda j: capped[j])
        shape, source = list(candidates[i]), "capped_pick"
        burst_tflops = candidate_burst[i] if candidate_burst and len(candidate_burst) > i else None
        pick = {"pick_shapes": ["x".join(map(str, c)) for c in candidates],
                "pick_capped_tflops": [round(x, 2) for x in capped],
                "pick_s": round(time.perf_counter() - t_pick, 2)}
    m, n, k = shape or (4096, 8192, 4096)
    fn, flops, per_call = _operands((m, n, k), device, dtype)
    reps = max(1, int(cfg.window_s / per_call))
    gpu = [torch.device(device).index or 0]
    windows, conds, total_s = [], [], 0.0
    t_end = time.perf_counter() + cfg.duration_s
    with (sampler.window(gpus=gpu) if sampler else nullcontext()) as whole:
        while time.perf_counter() < t_end or not windows:
            with (sampler.window(gpus=gpu) if sampler else nullcontext()) as w:
                seconds = time_block(fn, device=device, reps=reps)
            windows.append(flops * reps / seconds / 1e12)
            total_s += seconds
            conds.append(w.conditions() if sampler else None)
    sustained = trimmed_median(windows, cfg.trim)
    cond = whole.conditions() if sampler else None
    ratio = sustained / burst_tflops if burst_tflops else None
    peak = spec.peak_tflops(dtype)
    per_window = {
        "window_tflops": [round(x, 2) for x in windows],
        "window_sm_clock_mhz": [c["sm_clock_mhz_median"] if c else None for c in conds],
        "window_power_w": [c["power_w_median"] if c else None for c in conds],
    }
    last = next((c for c in reversed(conds) if c), None)
    params = {"dtype": dtype, "m": m, "n": n, "k": k, "duration_s": round(total_s, 2),
              "shape_source": source, **pick, "window_s": cfg.window_s,
        "calls_per_window": reps, "trim": cfg.trim, "burst_tflops": burst_tflops,
        "sustained_over_burst": round(ratio, 4) if ratio else None,
        "last_window_sm_clock_mhz": last["sm_clock_mhz_median"] if last else None,
        "last_window_power_w": last["power_w_median"] if last else None,
        "temp_c_max": cond["temp_c_max"] if cond else None, **per_window}
    metric = f"{dtype}_sustained_fixed_tflops" if variant == "fixed" else f"{dtype}_sustained_tflops"
    result = [measurement(BENCHMARK, VERSION, metric, sustained, "TFLOP/s",
                          params=params, repeats=len(windows), statistic="trimmed_median",
                          spread=max(windows) - min(windows), spread_kind="max_minus_min",
                          peak=peak, peak_source=spec.peak_source if peak else None,
                          window=whole)]
    if ratio is not None:
        result.append(measurement(BENCHMARK, VERSION, f"{dtype}_sustained_over_burst", ratio,
                                  "ratio", params={"m": m, "n": n, "k": k,
                                                   "burst_tflops": burst_tflops,
                                                   "sustained_tflops": sustained},
                                  repeats=len(windows), statistic="trimmed_median",
                                  window=whole))
    del fn
    return result
