"""Host<->device copy bandwidth, pinned and pageable, against the measured PCIe link's ceiling.

    python -m tasks.probe --profile quick --target local --out /tmp/b   # hostdev runs on CUDA only

H2D = device.copy_(host), D2H = host.copy_(device), `mib` bytes each. Pinned transfers are async
and timed with CUDA events; pageable ones go through the driver's staging buffer and are timed
with a host clock around a synchronised copy. The ceiling per direction comes from the link NVML
reports while the transfers run: PCIe x16 is 15.75 / 31.5 / 63 GB/s at Gen3 / 4 / 5 (PCI-SIG
raw rates after 128b/130b encoding, as quoted in issue 3, 2026-12-02), scaled by width / 16.
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import torch

from tasks.probe.hardware.timing import iqr, median, time_iters
from tasks.probe.host import nvml
from tasks.probe.profiles import HostDevConfig
from tasks.probe.record import NotApplicable, measurement

BENCHMARK = "hostdev"
VERSION = "2"  # 2: link ceiling from the measured generation and width
PCIE_X16_GBPS = {1: 4.0, 2: 8.0, 3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}  # per direction


def link_ceiling_gbps(gen: int | None, width: int | None) -> float | None:
    """Per-direction PCIe ceiling for a link, or None when either is unknown."""
    if not gen or not width or gen not in PCIE_X16_GBPS:
        return None
    return PCIE_X16_GBPS[gen] * width / 16


def read_link(index: int) -> dict:
    """Current and max PCIe generation/width of GPU `index` (None fields without NVML)."""
    nv, hs = nvml._nvml(), nvml.handles()
    if nv is None or index >= len(hs):
        return {"gen": None, "width": None, "gen_max": None, "width_max": None}
    h = hs[index]
    f = nvml._call
    return {"gen": f(nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
            "width": f(nv.nvmlDeviceGetCurrPcieLinkWidth, h),
            "gen_max": f(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "width_max": f(nv.nvmlDeviceGetMaxPcieLinkWidth, h)}


def _host_timed(fn, device: str, iters: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize(device)
    out = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize(device)
        out.append(time.perf_counter() - t)
    return out


def measure_hostdev(cfg: HostDevConfig, *, device: str, sampler=None) -> list[dict]:
    if not str(device).startswith("cuda"):
        raise NotApplicable("host<->device copies need a CUDA device")
    idx = torch.device(device).index or 0
    nbytes = cfg.mib * 2**20
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).fill_(1)
    pageable = torch.empty(nbytes, dtype=torch.uint8).fill_(1)  # touched: pages are resident
    cases = [
        ("h2d_pinned", lambda: dev.copy_(pinned, non_blocking=True), "events", cfg.pinned_iters),
        ("d2h_pinned", lambda: pinned.copy_(dev, non_blocking=True), "events", cfg.pinned_iters),
        ("h2d_pageable", lambda: dev.copy_(pageable), "host", cfg.pageable_iters),
        ("d2h_pageable", lambda: pageable.copy_(dev), "host", cfg.pageable_iters),
    ]
    raw = {}
    link = None
    for name, fn, how, iters in cases:
        window = sampler.window(gpus=[idx]) if sampler else nullcontext()
        with window as w:
            if how == "events":
                times = time_iters(fn, device=device, iters=iters, warmup=cfg.warmup)
            else:
                times = _host_timed(fn, device, iters, cfg.warmup)
            if link is None:  # read under load: an idle link may have trained down
                link = read_link(idx)
        raw[name] = (times, w, how)
    link = link or read_link(idx)
    ceiling = link_ceiling_gbps(link["gen"], link["width"])
    source = (f"PCIe Gen{link['gen']} x{link['width']} per direction "
              f"({PCIE_X16_GBPS.get(link['gen'])} GB/s at x16), link read via NVML") if ceiling else None
    out = []
    for name, (times, win, how) in raw.items():
        gbps = [nbytes / t / 1e9 for t in times if t > 0]
        value = median(gbps)
        out.append(measurement(
            BENCHMARK, VERSION, f"{name}_gbps", value, "GB/s",
            params={"bytes": nbytes, "timing": how, "pcie_gen": link["gen"],
                    "pcie_width": link["width"], "pcie_gen_max": link["gen_max"],
                    "pcie_width_max": link["width_max"], "max_gbps": round(max(gbps), 3),
                    "efficiency": round(value / ceiling, 4) if ceiling else None},
            repeats=len(gbps), statistic="median", spread=iqr(gbps), spread_kind="iqr",
            peak=ceiling, peak_source=source, window=win))
    del dev, pinned, pageable
    return out
