"""DataLoader next() latency: how fast the host feeds batches (workers + pin_memory).

    python -c "from tasks.probe.hardware.feed import measure_feed; from tasks.probe.profiles import QUICK; \
print(measure_feed(QUICK.feed, device='cpu'))"

A synthetic image dataset decodes and normalises uint8 images in DataLoader workers (the CPU work
of a vision pipeline). After `warmup_batches` untimed next() calls (workers started, queues full)
each next() is timed with a host clock: mean and p95 in ms. Issue 3's rule of thumb: more than
~15 ms between instance types means pick the faster-feeding one.

Then the same loader feeds a training loop: each batch is moved to the device and a step of
`step_ms` follows (the host waits that long, as it does for a GPU step; the workers prefetch
meanwhile). `wait_share` is the share of that loop's time spent in next(): 0 when the workers keep
ahead of the step, towards 1 when the step waits on the data.
"""

from __future__ import annotations

import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

from tasks.probe.hardware.timing import mean, percentile
from tasks.probe.profiles import FeedConfig
from tasks.probe.record import measurement

BENCHMARK = "feed"
VERSION = "1"


class SyntheticImages(Dataset):
    """Deterministic uint8 images -> normalised float tensors (decode + transform stand-in)."""

    def __init__(self, n: int, shape: tuple[int, ...]):
        self.n, self.shape = n, tuple(shape)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        g = torch.Generator().manual_seed(i)
        img = torch.randint(0, 256, self.shape, dtype=torch.uint8, generator=g)
        x = img.float().div_(255.0).sub_(0.5).div_(0.25)
        return x, i % 1000


def measure_feed(cfg: FeedConfig, *, device: str) -> list[dict]:
    workers = min(cfg.workers, os.cpu_count() or 1)
    pin = bool(cfg.pin_memory and str(device).startswith("cuda") and torch.cuda.is_available())
    n_batches = cfg.warmup_batches + cfg.timed_batches + cfg.step_warmup + cfg.timed_batches
    ds = SyntheticImages(n_batches * cfg.batch_size, cfg.item_shape)
    loader = DataLoader(ds, batch_size=cfg.batch_size, num_workers=workers, pin_memory=pin,
                        shuffle=False, drop_last=True)
    t_start = time.perf_counter()
    it = iter(loader)
    first_s = None
    for i in range(cfg.warmup_batches):
        next(it)
        if i == 0:
            first_s = time.perf_counter() - t_start
    lat_ms = []
    for _ in range(cfg.timed_batches):
        t = time.perf_counter()
        next(it)
        lat_ms.append((time.perf_counter() - t) * 1000.0)
    wait_s, step_s = _stepped(it, cfg, device)
    del it, loader
    params = {"workers": workers, "pin_memory": pin, "batch_size": cfg.batch_size,
              "item_shape": list(cfg.item_shape), "warmup_batches": cfg.warmup_batches,
              "first_batch_s": round(first_s or 0.0, 4)}
    m = mean(lat_ms)
    sd = (sum((x - m) ** 2 for x in lat_ms) / max(1, len(lat_ms) - 1)) ** 0.5
    return [
        measurement(BENCHMARK, VERSION, "next_latency_ms_mean", m, "ms", params=params,
                    repeats=len(lat_ms), statistic="mean", spread=sd, spread_kind="stdev"),
        measurement(BENCHMARK, VERSION, "next_latency_ms_p95", percentile(lat_ms, 95), "ms",
                    params=params, repeats=len(lat_ms), statistic="p95"),
        measurement(BENCHMARK, VERSION, "wait_share", sum(wait_s) / (sum(wait_s) + sum(step_s)), "share",
                    params={**params, "step_ms": cfg.step_ms, "wait_ms_mean": round(mean(wait_s) * 1e3, 3),
                            "step_ms_measured": round(mean(step_s) * 1e3, 3)},
                    repeats=len(wait_s), statistic="single"),
    ]


def _stepped(it, cfg: FeedConfig, device: str) -> tuple[list[float], list[float]]:
    """(seconds in each next(), seconds in each step) over `timed_batches` batches of a loop whose
    step moves the batch to `device` and then takes `step_ms`; `step_warmup` batches untimed first."""
    waits, steps = [], []
    for i in range(cfg.step_warmup + cfg.timed_batches):
        t = time.perf_counter()
        x, _ = next(it)
        t1 = time.perf_counter()
        x.to(device, non_blocking=True)
        if str(device).startswith("cuda"):
            torch.cuda.synchronize(device)
        time.sleep(max(0.0, cfg.step_ms / 1e3 - (time.perf_counter() - t1)))
        if i >= cfg.step_warmup:
            waits.append(t1 - t)
            steps.append(time.perf_counter() - t1)
    return waits, steps
