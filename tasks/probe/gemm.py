"""GEMM throughput: bf16/fp16/tf32/fp32 shape search (mamf-finder's method, our code) + 2048^3 fp32 mm.

    python -m tasks.probe.gemm --dtype bf16 --compare --out /tmp/gemm.json   # sweep vs search

Method per shape: random operands (never zeros: they run faster), `warmup` untimed calls, then
`iters` timed calls, each bracketed by its own CUDA events with an L2-sized buffer zeroed between
calls so every call reads operands from HBM; TFLOP/s = 2*m*n*k / time. On a GPU a shape's figure
is the median of its 5 fastest calls (mamf-finder v4's MAMF): on an H200 the plain median of 100
calls at one shape moved between 729 and 828 TFLOP/s from one measurement to the next at an
unchanged 1980 MHz reading, while the fastest calls held 822-832 (2026-12-02,
docs/measurements/h200-fidelity-2026-12-02.json), and a search ranking by the plain median once
settled on a shape 9% below the best. The plain median and the max are kept in params. `search` (standard) tries a short list of shapes known to fill
Hopper/Ampere tiles, hill-climbs around the best one within `budget_s`, and re-measures the top
shapes with `refine_iters`; `exhaustive` (full) sweeps the whole grid. On CPU only fp32 runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import replace

import torch

from tasks.probe.profiles import GemmConfig
from tasks.probe.record import NotApplicable, measurement
from tasks.probe.specs import GpuSpec
from tasks.probe.timing import iqr, is_cuda, median, median_top, time_iters

BENCHMARK = "gemm"
VERSION = "4"  # 4: MAMF statistic (median of the 5 fastest calls) on GPUs; 3: idle gaps between
# timed calls (burst, not power-capped); 2: L2 flush, per-call events
BURST_TOP = 5  # mamf-finder v4: the median of a shape's 5 fastest calls
LOW_EFFICIENCY = 0.65  # issue 3: < 65% of datasheet peak hints at a bandwidth/PCIe bottleneck
MAX_SEARCH_SHAPES = 32  # hill-climb cap: the search must cost <= 1/10 of the exhaustive sweep
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
                "fp32": torch.float32}
# Candidate shapes (m, n, k), best first on H100/H200-class parts (reference sweep 2026-12-02).
SEARCH_SHAPES = {
    "tensor": [(2048, 7168, 4096), (4096, 16384, 4096), (4096, 8192, 4096), (8192, 8192, 8192),
               (4096, 4096, 4096), (2048, 8192, 4096), (6144, 12288, 4096), (8192, 4096, 8192),
               (3072, 8192, 4096), (4096, 7168, 4096), (2048, 16384, 8192), (6144, 6144, 6144)],
    "fp32": [(4096, 4096, 4096), (8192, 8192, 4096), (4096, 16384, 4096), (8192, 8192, 8192),
             (6144, 6144, 6144), (2048, 8192, 4096)],
}


def grid(dtype: str) -> list[tuple[int, int, int]]:
    """The exhaustive grid: m,k in 1..8k and n in 1..16k, step 1024 (2048 for fp32/tf32)."""
    step = 1024 if dtype in ("bf16", "fp16") else 2048
    ms = range(step, 8192 + 1, step)
    ns = range(step, 16384 + 1, step)
    return [(m, n, k) for m, n, k in itertools.product(ms, ns, ms)]


@contextmanager
def matmul_precision(dtype: str):
    """tf32 = 'high' (tensor cores), fp32 = 'highest' (IEEE); restored afterwards."""
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(old)


def time_shape(m: int, n: int, k: int, dtype: str, device: str, *, warmup: int, iters: int,
               flush: torch.Tensor | None, idle_ratio: float = 0.0, spinup_s: float = 0.0,
               max_timed_s: float | None = None) -> dict:
    """Median and max TFLOP/s of one (m, n, k) product."""
    g = torch.Generator(device=device).manual_seed(m * 7 + n * 13 + k)
    a = torch.randn(m, k, generator=g, device=device, dtype=TORCH_DTYPES[dtype])
    b = torch.randn(k, n, generator=g, device=device, dtype=TORCH_DTYPES[dtype])
    out = torch.empty(m, n, device=device, dtype=TORCH_DTYPES[dtype])
    before = flush.zero_ if flush is not None else None
    fn = lambda: torch.mm(a, b, out=out)  # noqa: E731
    with matmul_precision(dtype):
        t_spin = time.perf_counter() + spinup_s
        while time.perf_counter() < t_spin:
            time_iters(fn, device=device, iters=5, idle_ratio=idle_ratio)
        if max_timed_s:  # slow shapes get fewer (>= 10) timed calls
            est = median(time_iters(fn, device=device, iters=2, warmup=warmup))
            warmup = 0
            iters = min(iters, max(10, int(max_timed_s / max(est, 1e-9))))
        times = time_iters(fn, device=device, iters=iters, warmup=warmup, before_each=before,
                           idle_ratio=idle_ratio)
    flops = 2.0 * m * n * k
    tflops = [flops / t / 1e12 for t in times if t > 0]
    del a, b, out
    cuda = is_cuda(device)
    burst = median_top(tflops, BURST_TOP) if cuda else median(tflops)
    return {"shape": [m, n, k], "tflops": burst, "statistic": f"median_top{BURST_TOP}" if cuda else "median",
            "tflops_median": median(tflops), "tflops_max": max(tflops), "tflops_iqr": iqr(tflops),
            "iters": len(tflops)}


def _flush_buffer(cfg: GemmConfig, device: str) -> torch.Tensor | None:
    if not is_cuda(device) or cfg.l2_flush_mib == 0:
        return None
    return torch.empty(cfg.l2_flush_mib * 2**20, dtype=torch.uint8, device=device)


def _neighbours(shape: tuple[int, int, int], seen: set) -> list[tuple[int, int, int]]:
    m, n, k = shape
    out = []
    for dm, dn, dk in ((0, 1024, 0), (0, -1024, 0), (1024, 0, 0), (-1024, 0, 0), (0, 0, 1024),
                       (0, 0, -1024)):
        s = (m + dm, n + dn, k + dk)
        if min(s) >= 1024 and max(s) <= 16384 and s not in seen:
            out.append(s)
    return out


def search(dtype: str, cfg: GemmConfig, device: str) -> dict:
    """Budgeted search (or the full grid when cfg.exhaustive). Returns the best shape's result."""
    t0 = time.perf_counter()
    deadline = t0 + cfg.budget_s
    flush = _flush_buffer(cfg, device)
    pool = grid(dtype) if cfg.exhaustive else list(
        SEARCH_SHAPES["tensor" if dtype in ("bf16", "fp16") else "fp32"])
    results, seen = [], set()
    while pool and (time.perf_counter() < deadline or not results):
        shape = pool.pop(0)
        seen.add(shape)
        results.append(time_shape(*shape, dtype, device, warmup=cfg.warmup, iters=cfg.iters,
                                  flush=flush, idle_ratio=cfg.idle_ratio,
                                  spinup_s=0.0 if results else cfg.spinup_s,
                                  max_timed_s=cfg.shape_timed_s))
        if not pool and not cfg.exhaustive:  # hill-climb around the best shape so far
            best = max(results, key=lambda r: r["tflops"])
            pool = _neighbours(tuple(best["shape"]), seen)[:4] if len(results) < MAX_SEARCH_SHAPES else []
    complete = not pool
    search_s = time.perf_counter() - t0
    top = sorted(results, key=lambda r: -r["tflops"])[: cfg.refine_top]
    refined = [time_shape(*r["shape"], dtype, device, warmup=cfg.warmup, iters=cfg.refine_iters,
                          flush=flush, idle_ratio=cfg.idle_ratio,
                          max_timed_s=cfg.shape_timed_s * 3) for r in top]
    best = max(refined, key=lambda r: r["tflops"])
    del flush
    return {**best, "dtype": dtype, "shapes_tried": len(results), "complete": complete,
            "search_s": search_s, "total_s": time.perf_counter() - t0,
            "sweep_best": max(r["tflops"] for r in results)}


def _gemm_measurement(dtype: str, res: dict, spec: GpuSpec, cfg: GemmConfig, window,
                      metric: str | None = None) -> dict:
    peak = spec.peak_tflops(dtype)
    eff = res["tflops"] / peak if peak else None
    m, n, k = res["shape"]
    return measurement(
        BENCHMARK, VERSION, metric or f"{dtype}_tflops", res["tflops"], "TFLOP/s",
        params={"dtype": dtype, "m": m, "n": n, "k": k, "max_tflops": float(f"{res['tflops_max']:.5g}"),
                "median_all_calls_tflops": float(f"{res['tflops_median']:.5g}"),
                "efficiency": round(eff, 4) if eff else None,
                "mode": res.get("mode", "exhaustive" if cfg.exhaustive else "search"),
                "shapes_tried": res.get("shapes_tried", 1), "complete": res.get("complete", True),
                "search_s": round(res.get("search_s", 0.0), 3), "warmup": cfg.warmup,
                "l2_flush_mib": cfg.l2_flush_mib if res.get("flushed", True) else 0,
                "idle_ratio": cfg.idle_ratio if is_cuda_result(res) else 0.0},
        repeats=res["iters"], statistic=res["statistic"],
        spread=res["tflops_iqr"], spread_kind="iqr",
        peak=peak, peak_source=spec.peak_source if peak else None,
        flags=["low_efficiency"] if eff is not None and eff < LOW_EFFICIENCY else [],
        window=window)


def measure_gemm(cfg: GemmConfig, *, device: str, spec: GpuSpec, sampler=None,
                 dtype: str = "bf16") -> list[dict]:
    """One dtype's search -> one Measurement. CPU: fp32 at cpu_size only; others NotApplicable."""
    if not is_cuda(device):
        if dtype != "fp32":
            raise NotApplicable(f"{dtype} GEMM is measured on CUDA devices only (CPU: fp32)")
        n = cfg.cpu_size
        res = time_shape(n, n, n, "fp32", device, warmup=1, iters=cfg.cpu_iters, flush=None)
        res.update(mode="cpu", flushed=False)
        return [_gemm_measurement("fp32", res, spec, cfg, None)]
    window = sampler.window(gpus=[_index(device)]) if sampler else nullcontext()
    with window as w:
        res = search(dtype, cfg, device)
    return [_gemm_measurement(dtype, res, spec, cfg, w)]


def measure_classic(cfg: GemmConfig, *, device: str, spec: GpuSpec, sampler=None) -> list[dict]:
    """The classic 2048x2048 fp32 torch.mm check (IEEE fp32, no tf32)."""
    iters = cfg.refine_iters if is_cuda(device) else max(2, cfg.cpu_iters // 2)
    flush = _flush_buffer(cfg, device)
    window = sampler.window(gpus=[_index(device)]) if sampler and is_cuda(device) else nullcontext()
    with window as w:
        res = time_shape(2048, 2048, 2048, "fp32", device, warmup=max(1, cfg.warmup // 2),
                         iters=iters, flush=flush, idle_ratio=cfg.idle_ratio if flush is not None else 0.0)
    res.update(mode="classic", flushed=flush is not None)
    return [_gemm_measurement("fp32", res, spec, cfg, w, metric="mm2048_fp32_tflops")]


def is_cuda_result(res: dict) -> bool:
    return res.get("mode") not in ("cpu",)


def _index(device: str) -> int:
    return torch.device(device).index or 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="bf16", choices=sorted(TORCH_DTYPES))
    ap.add_argument("--exhaustive", action="store_true", help="sweep the whole grid")
    ap.add_argument("--compare", action="store_true", help="exhaustive sweep, then standard search")
    ap.add_argument("--budget-s", type=float, default=900.0, help="sweep budget")
    ap.add_argument("--idle-ratio", type=float, default=None, help="override the burst idle ratio")
    ap.add_argument("--out", help="write the JSON result here")
    a = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        print("no CUDA device: the sweep needs a GPU", file=sys.stderr)
        return 2
    from tasks.probe.profiles import STANDARD

    std = STANDARD.gemm if a.idle_ratio is None else replace(STANDARD.gemm, idle_ratio=a.idle_ratio)

    out = {"dtype": a.dtype, "device": torch.cuda.get_device_name(0)}
    if a.exhaustive or a.compare:
        sweep_cfg = replace(std, exhaustive=True, budget_s=a.budget_s)
        out["sweep"] = search(a.dtype, sweep_cfg, device)
        print(json.dumps({"sweep": out["sweep"]}), flush=True)
    if not a.exhaustive:
        out["search"] = search(a.dtype, std, device)
        print(json.dumps({"search": out["search"]}), flush=True)
    if "sweep" in out and "search" in out:
        out["search_vs_sweep"] = out["search"]["tflops"] / out["sweep"]["tflops"]
        out["time_ratio"] = out["search"]["total_s"] / out["sweep"]["total_s"]
        print(json.dumps({k: out[k] for k in ("search_vs_sweep", "time_ratio")}))
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
