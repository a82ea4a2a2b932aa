"""The host's NUMA layout, the CPUs local to the GPU, the probe's own affinity, and the binding verdict.

    python -m tasks.probe.host.numa            # prints the layout and the verdict of this host

Read from sysfs (stdlib only): /sys/devices/system/node/node<N>/cpulist for each node's CPUs,
/sys/bus/pci/devices/<bdf>/numa_node and local_cpulist for the GPU's node and local CPUs, and
os.sched_getaffinity(0) for the CPUs this process may run on. The verdict is a fact of the host at
probe time, one of:
  "single node"  the host has one NUMA node: binding cannot matter here (no penalty is invented);
  "bound"        every CPU the probe may run on is local to the GPU (its host memory traffic stays
                 on the GPU's own node);
  "unbound"      the affinity crosses into another node: a thread (or a DataLoader worker) may run
                 and allocate on a remote socket, so copies to the GPU cross the socket link;
  "unknown"      more than one node, but the GPU's node cannot be read (no GPU, sysfs says -1, or
                 no sysfs): binding cannot be judged.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

SYS_NODES = Path("/sys/devices/system/node")
SYS_PCI = Path("/sys/bus/pci/devices")
VERDICTS = ("single node", "bound", "unbound", "unknown")


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format); '' -> []."""
    out: list[int] = []
    for part in (text or "").strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"cpulist {text!r}: expected ranges like 0-3,8")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(set(out))


def cpu_list(cpus) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8' (the inverse of parse_cpulist)."""
    cpus, out, i = sorted(set(cpus)), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def nodes(root: Path = SYS_NODES) -> dict[int, list[int]]:
    """{node: its CPUs} for every node that has CPUs ({} without sysfs)."""
    out = {}
    for d in sorted(root.glob("node[0-9]*")) if root.is_dir() else []:
        m = re.fullmatch(r"node(\d+)", d.name)
        text = _read(d / "cpulist")
        if m and text is not None:
            cpus = parse_cpulist(text)
            if cpus:
                out[int(m.group(1))] = cpus
    return out


def sysfs_bdf(bus_id: str | None) -> str | None:
    """NVML's '00000000:18:00.0' (or torch's) -> sysfs's '0000:18:00.0'; None stays None."""
    if not bus_id:
        return None
    m = re.search(r"([0-9a-fA-F]{1,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$", bus_id.strip())
    if not m:
        return None
    dom, bus, dev, fn = m.groups()
    return f"{int(dom, 16):04x}:{bus.lower()}:{dev.lower()}.{fn}"


def gpu_locality(bus_id: str | None, root: Path = SYS_PCI) -> tuple[int | None, list[int]]:
    """(the GPU's NUMA node or None, the CPUs local to it or []) from sysfs. The kernel writes -1 where
    the platform gives no affinity (a VM, a single-node host): that reads as None."""
    bdf = sysfs_bdf(bus_id)
    if bdf is None:
        return None, []
    node_text = _read(root / bdf / "numa_node")
    node = int(node_text) if node_text and node_text.lstrip("-").isdigit() else None
    local = _read(root / bdf / "local_cpulist")
    return (node if node is not None and node >= 0 else None), (parse_cpulist(local) if local else [])


@dataclass(frozen=True)
class Layout:
    """The facts the verdict is drawn from, and the verdict."""

    node_cpus: dict[int, list[int]] = field(default_factory=dict)  # node -> CPUs
    gpu_bus_id: str | None = None
    gpu_node: int | None = None
    gpu_local_cpus: list[int] = field(default_factory=list)  # sysfs local_cpulist, else the node's CPUs
    affinity: list[int] = field(default_factory=list)  # os.sched_getaffinity(0)
    verdict: str = "unknown"
    reason: str = ""

    @property
    def affinity_nodes(self) -> list[int]:
        return sorted(n for n, cpus in self.node_cpus.items() if set(cpus) & set(self.affinity))

    def remote_node(self) -> int | None:
        """A node with CPUs other than the GPU's (the first), or None on a single-node host."""
        others = [n for n in sorted(self.node_cpus) if n != self.gpu_node]
        return others[0] if others and self.gpu_node is not None else None

    def params(self) -> dict:
        """The layout as bundle measurement params (scalars and lists of scalars only)."""
        return {"verdict": self.verdict, "reason": self.reason, "nodes": len(self.node_cpus),
                "node_cpus": [f"{n}:{cpu_list(c)}" for n, c in sorted(self.node_cpus.items())],
                "gpu_bus_id": self.gpu_bus_id, "gpu_numa_node": self.gpu_node,
                "gpu_local_cpus": cpu_list(self.gpu_local_cpus) or None,
                "affinity_cpus": cpu_list(self.affinity) or None, "affinity_nodes": self.affinity_nodes}


def verdict(node_cpus: dict[int, list[int]], gpu_node: int | None, gpu_local_cpus: list[int],
            affinity: list[int], has_gpu: bool = True) -> tuple[str, str]:
    """(verdict, why in one sentence) from the layout's facts; see the module docstring."""
    if len(node_cpus) <= 1:
        return "single node", "the host has one NUMA node: binding cannot matter here"
    if not has_gpu:
        return "unknown", f"{len(node_cpus)} NUMA nodes but no GPU: binding to a GPU's node cannot be judged"
    local = set(gpu_local_cpus) or set(node_cpus.get(gpu_node, []) if gpu_node is not None else [])
    if not local:
        return "unknown", f"{len(node_cpus)} NUMA nodes but the GPU's node is not reported (sysfs numa_node -1)"
    aff = set(affinity)
    if aff and aff <= local:
        return "bound", f"all {len(aff)} CPUs the probe may use are local to the GPU (node {gpu_node})"
    outside = sorted(aff - local)
    return "unbound", (f"{len(outside)} of the {len(aff)} CPUs the probe may use are on another node than "
                       f"the GPU's (node {gpu_node}): {cpu_list(outside)}")


def layout(bus_id: str | None, *, has_gpu: bool, node_root: Path = SYS_NODES, pci_root: Path = SYS_PCI,
           affinity: list[int] | None = None) -> Layout:
    """Read this host's layout and judge it."""
    node_cpus = nodes(node_root)
    gpu_node, local = gpu_locality(bus_id, pci_root) if has_gpu else (None, [])
    if has_gpu and not local and gpu_node is not None:
        local = node_cpus.get(gpu_node, [])
    aff = sorted(affinity if affinity is not None else os.sched_getaffinity(0))
    v, why = verdict(node_cpus, gpu_node, local, aff, has_gpu=has_gpu)
    return Layout(node_cpus=node_cpus, gpu_bus_id=bus_id, gpu_node=gpu_node, gpu_local_cpus=local,
                  affinity=aff, verdict=v, reason=why)


if __name__ == "__main__":
    lay = layout(None, has_gpu=False)
    print(json.dumps({**asdict(lay), **lay.params()}, indent=1, default=str))
