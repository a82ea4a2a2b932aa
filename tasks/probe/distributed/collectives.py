"""Collectives entry: NCCL all-reduce algbw/busbw over a size sweep when >= 2 GPUs are visible.

    python -c "from tasks.probe.distributed.collectives import measure_collectives; print(measure_collectives(None, device='cpu'))"

The formulas (algbw, busbw = algbw * 2(n-1)/n) are bandwidth.py's, the launch multi_gpu.py's; with
one GPU (or none) the task is recorded as not applicable, never as failed.
"""

from __future__ import annotations

import time

from tasks.probe.distributed.multi_gpu import run_multi_gpu
from tasks.probe.record import attempt, classify, iso_now


def visible_gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def measure_collectives(profile, *, device: str) -> tuple[list, list, list]:
    """(measurements, finetunes, attempts). One device -> one not_applicable attempt."""
    n = visible_gpus() if str(device).startswith("cuda") else 0
    started = iso_now()
    if n < 2:
        return [], [], [attempt("allreduce", 1, "not_applicable", 0.0, started_at=started,
                                message=f"all-reduce needs >= 2 GPUs; {n} visible")]
    t = time.perf_counter()
    try:
        return run_multi_gpu(profile, timeout_s=profile.collectives.timeout_s)
    except Exception as e:  # run_multi_gpu should record its own failures; this is the backstop
        return [], [], [attempt("allreduce", 1, "failed", time.perf_counter() - t,
                                error_kind=classify(e), message=f"{type(e).__name__}: {e}",
                                started_at=started)]
