"""GEMM throughput: bf16/fp16/tf32/fp32 best-shape search + the classic 2048^3 fp32 mm -> Measurements.

    python -m tasks.probe.hardware.gemm --dtype bf16 --compare --out /tmp/gemm.json   # sweep vs search

How one shape is timed (random operands, L2 flushed, per-call CUDA events, MAMF statistic) is
tasks/probe/hardware/gemm_time.py; where the best shape is looked for (the exhaustive sweep of `full`, the
guided search of `standard`) is tasks/probe/hardware/gemm_search.py. This module turns a search into the
bundle's measurement: the best refined shape's figure, its plain median and max, and the refined
candidates (`top_shapes`, `top_tflops`) that the sustained benchmark ranks at the power cap. On
CPU only fp32 runs, at one square size.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from dataclasses import replace

import torch

from tasks.probe.hardware.gemm_search import KNOWN_GOOD, grid, search  # noqa: F401  (re-exported)
from tasks.probe.hardware.gemm_time import TORCH_DTYPES, flush_buffer, time_shape
from tasks.probe.hardware.timing import is_cuda
from tasks.probe.host.specs import GpuSpec
from tasks.probe.profiles import GemmConfig
from tasks.probe.record import NotApplicable, measurement

BENCHMARK = "gemm"
VERSION = "5"  # 5: search inside the sweep's grid, model-ranked seeds, two-shape hill-climb, refined
# candidates kept for the sustained pick; 4: MAMF statistic (median of the 5 fastest calls) on
# GPUs; 3: idle gaps between timed calls (burst, not power-capped); 2: L2 flush, per-call events
LOW_EFFICIENCY = 0.65  # issue 3: < 65% of datasheet peak hints at a bandwidth/PCIe bottleneck


def shape_text(shape) -> str:
    """'m x n x k' as the bundle stores a shape in a list of scalars: '3072x11264x8192'."""
    return "x".join(str(int(d)) for d in shape)


def parse_shape(text: str) -> list[int]:
    m, n, k = (int(d) for d in text.split("x"))
    return [m, n, k]


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
                "search_s": round(res.get("search_s", 0.0), 3),
                "search_total_s": round(res.get("total_s", 0.0), 3),  # with the refine
                "warmup": cfg.warmup,
                "l2_flush_mib": cfg.l2_flush_mib if res.get("flushed", True) else 0,
                "idle_ratio": cfg.idle_ratio if is_cuda_result(res) else 0.0,
                "top_shapes": [shape_text(t["shape"]) for t in res.get("top", [])],
                "top_tflops": [round(t["tflops"], 2) for t in res.get("top", [])]},
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
    flush = flush_buffer(cfg, device)
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


def _brief(res: dict) -> dict:
    """A search result without its per-shape list (that goes to --out only)."""
    return {k: v for k, v in res.items() if k != "all"}


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
        print(json.dumps({"sweep": _brief(out["sweep"])}), flush=True)
    if not a.exhaustive:
        out["search"] = search(a.dtype, std, device)
        print(json.dumps({"search": _brief(out["search"])}), flush=True)
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
