"""All-reduce bandwidth formulas (nccl-tests' PERFORMANCE.md): algorithm and bus bandwidth. Pure.

    python -c "from tasks.probe.distributed.bandwidth import busbw_gbps; print(busbw_gbps(100.0, 8))"

busbw = algbw * 2(n-1)/n: the bus bandwidth of a ring all-reduce, comparable across GPU counts.
Kept apart from multi_gpu.py, which records them, so the formulas read and test on their own.
"""

from __future__ import annotations


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
