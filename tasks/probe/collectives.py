"""Collectives entry: NCCL all-reduce algbw/busbw over a size sweep when >= 2 GPUs are visible.

    python -c "from tasks.probe.collectives import busbw_gbps; print(busbw_gbps(100.0, 8))"

busbw = algbw * 2(n-1)/n (nccl-tests' PERFORMANCE.md: the bus bandwidth of a ring all-reduce,
comparable across GPU counts). The process launch lives in G's tasks.probe.distributed; with one
GPU (or none) the task is recorded as not applicable, never as failed.
"""

from __future__ import annotations

import time

from tasks.probe.record import attempt, classify, iso_now


def busbw_gbps(algbw_gbps: float, n: int) -> float:
    """Bus bandwidth of an all-reduce over `n` ranks from its algorithm bandwidth."""
    if n < 1:
        raise ValueError(f"n = {n!r}: expected >= 1 ranks")
    return algbw_gbps * 2 * (n - 1) / n


def algbw_gbps(nbytes: int, seconds: float) -> float:
    """Algorithm bandwidth: bytes of the buffer over the time of one all-reduce."""
    if seconds <= 0:
        raise ValueError(f"seconds = {seconds!r}: expected > 0")
    return nbytes / seconds / 1e9


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
        from tasks.probe.distributed import run_multi_gpu
    except ImportError as e:
        return [], [], [attempt("allreduce", 1, "skipped", time.perf_counter() - t,
                                started_at=started,
                                message=f"multi-GPU module tasks.probe.distributed unavailable: {e}")]
    try:
        return run_multi_gpu(profile, timeout_s=profile.collectives.timeout_s)
    except Exception as e:  # G's launcher should record its own failures; this is the backstop
        return [], [], [attempt("allreduce", 1, "failed", time.perf_counter() - t,
                                error_kind=classify(e), message=f"{type(e).__name__}: {e}",
                                started_at=started)]
