"""NUMA, measured: the host's layout and verdict, and pinned copies from the GPU's own node and a remote one.

    python -c "from tasks.probe.hardware.numa_copy import measure_numa; from tasks.probe.profiles import QUICK; \
print(measure_numa(QUICK.numa, device='cpu', bus_id=None))"

The layout and its verdict (bound / unbound / single node / unknown) come from tasks.probe.host.numa
and run on every host. On a CUDA host, pinned host-to-device and device-to-host copies then run from
a thread bound (os.sched_setaffinity on the thread itself) to the GPU's local node and, where the
host has more than one node, to a remote node. The thread allocates and touches its own pinned
buffer, so the kernel's first-touch policy places the pages on that thread's node: the copies read
and write memory on the node under test. For a small (KV-cache-sized) and a large copy: bandwidth
(median, GB/s = 1e9 B/s) and the per-transfer latency distribution (p50, p99, max) both as the GPU
timed it (one CUDA event pair per transfer) and as the launching thread saw it (host clock from the
call to its completion: where scheduling jitter on an unbound host shows). A CPU host records the
layout; its copies are "not measured" (params.copies says so), never a number.
"""

from __future__ import annotations

import os
import threading
import time

from tasks.probe.hardware.timing import median, percentile
from tasks.probe.host.numa import Layout, layout
from tasks.probe.profiles import NumaConfig
from tasks.probe.record import measurement

BENCHMARK = "numa"
VERSION = "1"


def _bus_id(device: str) -> str | None:
    """The PCI bus id of `device` from torch (domain:bus:device.function), or None."""
    import torch

    try:
        props = torch.cuda.get_device_properties(torch.device(device))
        return f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    except Exception:
        return None


def _copies(device: str, cpus: list[int], sizes: list[tuple[str, int, int]], warmup: int) -> dict:
    """In a thread bound to `cpus`: {(direction, label): (bytes, [event s], [host s])} per copy size."""
    import torch

    out: dict = {}
    error: list[BaseException] = []

    def work() -> None:
        try:
            os.sched_setaffinity(0, cpus)  # 0: the calling thread on Linux
            torch.cuda.set_device(torch.device(device))
            stream = torch.cuda.current_stream()
            for label, nbytes, iters in sizes:
                host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).fill_(1)  # touched here
                dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
                for direction, fn in (("h2d", lambda: dev.copy_(host, non_blocking=True)),
                                      ("d2h", lambda: host.copy_(dev, non_blocking=True))):
                    for _ in range(warmup):
                        fn()
                    torch.cuda.synchronize(device)
                    ev, wall = [], []
                    for _ in range(iters):
                        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        t = time.perf_counter()
                        s.record(stream)
                        fn()
                        e.record(stream)
                        e.synchronize()
                        wall.append(time.perf_counter() - t)
                        ev.append(s.elapsed_time(e) / 1000.0)
                    out[(direction, label)] = (nbytes, ev, wall)
                del host, dev
        except BaseException as e:  # re-raised in the caller's thread
            error.append(e)

    th = threading.Thread(target=work, name="numa-copies", daemon=True)
    th.start()
    th.join()
    if error:
        raise error[0]
    return out


def _us(xs: list[float], q: float) -> float:
    return round(percentile(xs, q) * 1e6, 2)


def _copy_measurements(lay: Layout, device: str, cfg: NumaConfig) -> tuple[list[dict], list[str]]:
    sizes = [(f"{cfg.small_mib}mib", cfg.small_mib * 2**20, cfg.small_iters),
             (f"{cfg.large_mib}mib", cfg.large_mib * 2**20, cfg.large_iters)]
    roles = [("local", lay.gpu_node if lay.gpu_node is not None else None)]
    if lay.remote_node() is not None:
        roles.append(("remote", lay.remote_node()))
    out, notes = [], []
    for role, node in roles:
        cpus = lay.node_cpus.get(node, []) if node is not None else []
        if role == "local" and lay.gpu_local_cpus:
            cpus = lay.gpu_local_cpus
        if not cpus:  # one node, or the GPU's node unknown: the process's own CPUs are the "local" ones
            cpus = lay.affinity
        try:
            res = _copies(device, cpus, sizes, cfg.warmup)
        except OSError as e:  # the cpuset forbids that node's CPUs: said, not guessed
            notes.append(f"{role} (node {node}): not measured: cannot run on CPUs {cpus[:4]}...: {e}")
            continue
        for (direction, label), (nbytes, ev, wall) in res.items():
            gbps = [nbytes / t / 1e9 for t in ev if t > 0]
            out.append(measurement(
                BENCHMARK, VERSION, f"{direction}_{label}_{role}_gbps", median(gbps), "GB/s",
                params={"bytes": nbytes, "role": role, "node": node, "cpus": len(cpus),
                        "p50_us": _us(ev, 50), "p99_us": _us(ev, 99), "max_us": round(max(ev) * 1e6, 2),
                        "host_p50_us": _us(wall, 50), "host_p99_us": _us(wall, 99),
                        "host_max_us": round(max(wall) * 1e6, 2), "pinned": True, "timing": "events"},
                repeats=len(gbps), statistic="median", spread=max(gbps) - min(gbps),
                spread_kind="max_minus_min"))
    return out, notes


def measure_numa(cfg: NumaConfig, *, device: str, bus_id: str | None = None) -> list[dict]:
    """The layout measurement (value: NUMA nodes with CPUs; params: the verdict and its facts), then the
    copies where CUDA is present."""
    cuda = str(device).startswith("cuda")
    if cuda and bus_id is None:
        bus_id = _bus_id(device)
    lay = layout(bus_id, has_gpu=cuda)
    copies, notes = ([], ["not measured: no CUDA device"]) if not cuda else _copy_measurements(lay, device, cfg)
    if cuda and lay.remote_node() is None:
        notes.append("remote: not measured: one NUMA node" if len(lay.node_cpus) <= 1
                     else "remote: not measured: the GPU's node is not reported")
    head = measurement(BENCHMARK, VERSION, "numa_nodes", float(len(lay.node_cpus)), "nodes",
                       params={**lay.params(), "copies": "; ".join(notes) or "measured"},
                       repeats=1, statistic="single")
    return [head, *copies]
