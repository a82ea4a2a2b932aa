"""Device memory bandwidth: copy and triad, BabelStream's byte counting (bytes read + bytes written).

    python -c "from tasks.probe.hardware.memory import measure_memory; from tasks.probe.profiles import QUICK; \
from tasks.probe.host.specs import UNKNOWN; print(measure_memory(QUICK.memory, device='cpu', spec=UNKNOWN))"

copy:  b = a          counts 2 x bytes(a)  (one read, one write)
triad: a = b + s * c  counts 3 x bytes(a)  (two reads, one write)
Buffers are fp32 and far larger than any cache (H200 L2 is 60 MiB), so HBM/DRAM is measured.
On CUDA each pass is timed with its own event pair; the median pass is reported.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from tasks.probe.hardware.timing import iqr, is_cuda, median, time_iters
from tasks.probe.host.specs import GpuSpec
from tasks.probe.profiles import MemoryConfig
from tasks.probe.record import measurement

BENCHMARK = "memory"
VERSION = "2"  # 2: per-pass events, read+write byte counting stated in params
TRIAD_SCALAR = 0.4  # BabelStream's startScalar


def measure_memory(cfg: MemoryConfig, *, device: str, spec: GpuSpec, sampler=None) -> list[dict]:
    """Copy and triad GB/s (1e9 bytes/s) on `device`."""
    cuda = is_cuda(device)
    mib = cfg.gpu_mib if cuda else cfg.cpu_mib
    n = mib * 2**20 // 4
    a = torch.rand(n, device=device)
    b = torch.rand(n, device=device)
    c = torch.rand(n, device=device)
    peak = spec.bandwidth_gbps if cuda else None
    kernels = {
        "copy": (lambda: b.copy_(a), 2, "b = a: 1 read + 1 write"),
        "triad": (lambda: torch.add(b, c, alpha=TRIAD_SCALAR, out=a), 3,
                  "a = b + s*c: 2 reads + 1 write"),
    }
    out = []
    for name, (fn, touches, rule) in kernels.items():
        window = sampler.window(gpus=[torch.device(device).index or 0]) if sampler and cuda \
            else nullcontext()
        with window as w:
            times = time_iters(fn, device=device, iters=cfg.iters, warmup=cfg.warmup)
        nbytes = touches * n * 4
        gbps = [nbytes / t / 1e9 for t in times if t > 0]
        value = median(gbps)
        out.append(measurement(
            BENCHMARK, VERSION, f"{name}_gbps", value, "GB/s",
            params={"bytes_per_buffer": n * 4, "bytes_counted": nbytes, "counting": rule,
                    "convention": "read+write (BabelStream)", "dtype": "fp32",
                    "max_gbps": round(max(gbps), 2), "warmup": cfg.warmup,
                    "efficiency": round(value / peak, 4) if peak else None},
            repeats=len(gbps), statistic="median", spread=iqr(gbps), spread_kind="iqr",
            peak=peak, peak_source=spec.peak_source if peak else None,
            window=w))
    del a, b, c
    return out
