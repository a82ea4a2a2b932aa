"""Timing one GEMM shape (mamf-finder's method, our code): random operands, warm-up, per-call events.

    python -c "from tasks.probe.hardware.gemm_time import time_shape; print(time_shape(256, 256, 256, 'fp32', 'cpu', warmup=1, iters=3, flush=None))"

Method per shape: random operands (never zeros: they run faster), `warmup` untimed calls, then
`iters` timed calls, each bracketed by its own CUDA events with an L2-sized buffer zeroed between
calls so every call reads operands from HBM; TFLOP/s = 2*m*n*k / time. On a GPU a shape's figure
is the median of its 5 fastest calls (mamf-finder v4's MAMF): on an H200 the plain median of 100
calls at one shape moved between 729 and 828 TFLOP/s from one measurement to the next at an
unchanged 1980 MHz reading, while the fastest calls held 822-832 (2026-12-02,
docs/measurements/h200-fidelity-2026-12-02.json). The plain median and the max are kept too.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import torch

from tasks.probe.hardware.timing import iqr, is_cuda, median, median_top, time_iters

BURST_TOP = 5  # mamf-finder v4: the median of a shape's 5 fastest calls
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
                "fp32": torch.float32}


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


def flush_buffer(cfg, device: str) -> torch.Tensor | None:
    if not is_cuda(device) or cfg.l2_flush_mib == 0:
        return None
    return torch.empty(cfg.l2_flush_mib * 2**20, dtype=torch.uint8, device=device)
