"""Timing helpers (CUDA events on GPU, perf_counter on CPU) and the statistics the probe reports.

    python -c "from tasks.probe.hardware.timing import median, iqr; print(median([3, 1, 2]), iqr([1, 2, 3, 4]))"

Discipline (STYLE.md rule 7, after mamf-finder and nvbandwidth): warm up and exclude the warm-up,
time GPU work with CUDA events recorded on the stream (never a host clock around unsynchronised
calls), optionally flush L2 between timed iterations, report the median and the spread.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Sequence


def percentile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100] (numpy's default method)."""
    if not xs:
        raise ValueError("percentile of an empty sequence")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q!r}")
    s = sorted(float(x) for x in xs)
    pos = (len(s) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs: Sequence[float]) -> float:
    return percentile(xs, 50)


def iqr(xs: Sequence[float]) -> float:
    """Inter-quartile range (p75 - p25)."""
    return percentile(xs, 75) - percentile(xs, 25)


def trimmed_median(xs: Sequence[float], trim: float = 0.1) -> float:
    """Median after dropping the `trim` fraction at each end (robust to a ramp-up window)."""
    if not 0 <= trim < 0.5:
        raise ValueError(f"trim must be in [0, 0.5), got {trim!r}")
    s = sorted(float(x) for x in xs)
    k = int(len(s) * trim)
    return median(s[k : len(s) - k] if len(s) - 2 * k > 0 else s)


def median_top(xs: Sequence[float], k: int = 5) -> float:
    """Median of the k largest values (all of them when there are fewer): mamf-finder v4's MAMF
    statistic, a burst peak that a few calls slowed by the power controller cannot drag down."""
    if not xs:
        raise ValueError("median_top of an empty sequence")
    if k < 1:
        raise ValueError(f"median_top k must be >= 1, got {k!r}")
    return median(sorted(float(x) for x in xs)[-k:])


def mean(xs: Sequence[float]) -> float:
    if not xs:
        raise ValueError("mean of an empty sequence")
    return sum(xs) / len(xs)


def is_cuda(device: str) -> bool:
    return str(device).startswith("cuda")


def sync(device: str) -> None:
    if is_cuda(device):
        import torch

        torch.cuda.synchronize(device)


def time_iters(
    fn: Callable[[], object],
    *,
    device: str,
    iters: int,
    warmup: int = 0,
    before_each: Callable[[], object] | None = None,
    idle_ratio: float = 0.0,
) -> list[float]:
    """Seconds per call of `fn`, one figure per timed iteration.

    On CUDA each iteration is bracketed by its own pair of events so that `before_each` (an L2
    flush, say) runs between iterations without being timed; one synchronise at the end. With
    `idle_ratio` > 0 the host waits for each call and then idles `idle_ratio` x its time, so the
    card's power controller never sees continuous load: a burst figure, not a power-capped one.
    On CPU perf_counter brackets each call.
    """
    if iters < 1:
        raise ValueError(f"iters must be >= 1, got {iters!r}")
    for _ in range(warmup):
        if before_each is not None:
            before_each()
        fn()
    sync(device)
    if is_cuda(device):
        import torch

        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for s, e in zip(starts, ends):
            if before_each is not None:
                before_each()
            s.record()
            fn()
            e.record()
            if idle_ratio > 0:
                e.synchronize()
                time.sleep(s.elapsed_time(e) / 1000.0 * idle_ratio)
        torch.cuda.synchronize(device)
        return [s.elapsed_time(e) / 1000.0 for s, e in zip(starts, ends)]
    out = []
    for _ in range(iters):
        if before_each is not None:
            before_each()
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def time_block(fn: Callable[[], object], *, device: str, reps: int) -> float:
    """Seconds for `reps` back-to-back calls of `fn` (one event pair around all of them)."""
    sync(device)
    if is_cuda(device):
        import torch

        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 1000.0
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return time.perf_counter() - t
