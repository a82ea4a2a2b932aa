"""The collective model: an all-reduce's bus bandwidth predicted from the interconnect (issue 42).

    .venv/bin/python -c "from tasks.estimate.scaling import predict_busbw; print(predict_busbw('H100', 8, 'nvswitch'))"

Pure: no warehouse, no torch. The figures it rests on are data: each GPU's links (gpu_specs.json, through
tasks/estimate/links.py) and the fit on public nccl-tests rows (data/collective_fit.json, written by
`python -m tasks.estimate.collective_fit`). tasks/estimate/scaling.py builds the step model on it.

A ring all-reduce of S bytes on n GPUs takes
    t = alpha(n) + S * 2(n-1)/n / busbw,   alpha(n) = 2(n-1) * hop
with busbw = the fabric's raw GB/s per GPU and direction (NVLink; PCIe generation x lanes, also on
pcie-host, where staging through host memory is what its fitted fraction absorbs) x an achievable
fraction. Across nodes it is hierarchical: reduce-scatter inside the node, all-reduce of the node's S bytes
over its NICs at their bandwidth x a fraction fitted per network kind, all-gather inside the node; NCCL
pipelines these phases chunk by chunk, so the slowest one sets the time.

Which rows share a fraction, and why (each choice rests on physics or NCCL's own model, never on a residual):
- NVLink is one family: a bridged pair, a point-to-point mesh and an NVSwitch board move data over the same
  links with the same packet overhead, and NCCL's own topology model gives every NVLink generation about the
  same effective share of its line rate (src/graph/topo.h at 5067397c, read 2026-12-07: SM70/SM80 20 of 25 GB/s
  per link = 0.80, SM86 12 of 14.06 = 0.85, SM90 20.6 of 25 = 0.82, SM100 40.1 of 50 = 0.80). So nvswitch and
  nvlink rows fit one fraction ("nvlink"); NVLink SHARP ("nvls": the switch reduces) is fitted apart
  ("nvlink+nvls"), its fraction may pass 1.
- pcie (peer-to-peer through a PCIe switch, which is where NCCL uses it by default: p2pLevel = PATH_PXB in
  src/graph/paths.cc) has no public rows yet: it borrows the NVLink family's fraction, because NCCL's model
  gives PCIe peer-to-peer through a switch the same kind of share (PCI_BW 12 GB/s of Gen3 x16's 15.75 = 0.76),
  with the widest interval the fit has, and says so.
- pcie-host (through host memory) is one fraction. Rows record their host path (switch | socket | cross-socket),
  but the host path becomes a factor only once fit rows from two sources each cover two host paths; until then
  the spread of the pcie-host rows, host paths mixed, is its interval.
- Rows whose source reports the figure itself as a problem (data column `defect`) are left out of the fit.
The 90% interval of a group is the spread of its runs when their source is left out of the fit
(collective_fit.py), so it says how well a system nobody measured is predicted.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tasks.estimate import links as links_

FIT_PATH = Path(__file__).with_name("data") / "collective_fit.json"
BUSBW_AT_BYTES = 2**30  # predict_busbw's default message: nccl-tests' large-message plateau (1 GiB)
PLATEAU_BYTES = 2.0**40  # a peak quoted without its size: latency is nothing at this size
NVLS_SINCE = (2, 17)  # NVLink SHARP all-reduce from NCCL 2.17 (NCCL 2.17.1 release notes, read 2026-12-07)
P2P_FABRICS = ("nvswitch", "nvlink", "pcie")  # GPUs write into each other's memory (NCCL's P2P transport)
NVLINK_FABRICS = ("nvswitch", "nvlink")  # the same NVLink links, with a switch between them or not: one fraction


@lru_cache(maxsize=4)
def load_fit(path: str | None = None) -> dict | None:
    """The committed fit (None when it has not been written)."""
    p = Path(path) if path else FIT_PATH
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None


def fit_key(fabric: str, nvls: bool) -> str:
    """The fit entry a fabric reads: 'nvlink' for every NVLink fabric (bridge, mesh, switch), '+nvls' with SHARP."""
    base = "nvlink" if fabric in NVLINK_FABRICS else fabric
    return f"{base}+nvls" if nvls else base


def ring_seconds(size: float, n: int, busbw_gbps: float, hop_s: float, factor: float | None = None) -> float:
    """alpha(n) + S * factor / busbw; factor 2(n-1)/n for an all-reduce, (n-1)/n for a reduce-scatter or
    all-gather (whose alpha is half: n-1 hops)."""
    if n <= 1:
        return 0.0
    f = 2 * (n - 1) / n if factor is None else factor
    hops = (n - 1) * (2 if factor is None else 1)
    return hops * hop_s + size * f / (busbw_gbps * 1e9)


@dataclass
class Busbw:
    """A predicted all-reduce bus bandwidth (GB/s), its interval, and the all-reduce time behind it."""

    gbps: float | None = None
    lo: float | None = None
    hi: float | None = None
    reason: str = ""
    fabric: str | None = None
    nvls: bool = False
    size_bytes: float = BUSBW_AT_BYTES
    seconds: float | None = None
    parts: dict = field(default_factory=dict)  # the fitted fractions and raw bandwidths used

    @property
    def label(self) -> str:
        if not self.gbps:
            return "no estimate"
        sharp = " with NVLink SHARP" if self.nvls else ""
        return f"predicted from {self.fabric}{sharp}, busbw {gbps_text(self.gbps)} GB/s"


def gbps_text(x: float) -> str:
    """A bandwidth a reader reads at a glance: '230', '57', '4.1', '0.22' (never '0')."""
    return f"{x:,.0f}" if x >= 10 else (f"{x:.1f}" if x >= 1 else f"{x:.2f}")


def nvls_auto(lk: links_.Links, fabric: str, nccl_version: str | None = None) -> bool:
    """NVLink SHARP where the switch and NCCL do it: an NVSwitch of NVLink 4 or later (Hopper on) and NCCL
    2.17 or later, or an NCCL version not known (a new install has it: it is NCCL's default there)."""
    if fabric != "nvswitch" or (lk.nvlink_gen or 0) < 4:
        return False
    m = re.match(r"\s*(\d+)\.(\d+)", nccl_version or "")
    return m is None or (int(m.group(1)), int(m.group(2))) >= NVLS_SINCE


def _fraction(fit: dict, key: str, fabric: str) -> tuple[dict | None, str]:
    """The fitted entry for `key`; a peer-to-peer fabric without rows of its own (pcie) borrows the fraction fitted
    over the peer-to-peer fabrics that have some (NCCL's same P2P transport, over other wires), and says so."""
    f = fit["fabrics"].get(key)
    if f is not None:
        names = {"nvlink": "NVLink family: bridge, mesh and switch rows", "nvlink+nvls": "NVLink SHARP rows"}
        return f, names.get(key, key)
    pooled = fit.get("pooled_p2p")
    if fabric in P2P_FABRICS and pooled is not None:
        return pooled, f"no {key} rows: pooled over {', '.join(pooled['fabrics'])}"
    return None, key


def machine(gpu: str, count: int, fabric: str, nodes: int, network: str | None, nvls: bool | None,
            fit: dict, nccl_version: str | None = None) -> tuple[dict | None, str]:
    """The fitted pieces for this machine: intra (raw, fraction, hop, halfwidth) and inter, or (None, why not)."""
    if not fabric:
        return None, "fabric unknown (no published topology for this instance type): no estimate"
    if fabric not in links_.FABRICS:
        return None, f"fabric {fabric!r} unknown: expected one of {', '.join(links_.FABRICS)}"
    lk = links_.links_of(gpu)
    if lk is None:
        return None, f"GPU {gpu!r} has no datasheet entry in gpu_specs.json: no estimate"
    raw, fact = links_.fabric_gbps(lk, fabric)
    if raw is None:
        return None, fact + ": no estimate"
    auto = nvls is None
    nvls = nvls_auto(lk, fabric, nccl_version) if auto else bool(nvls)
    key = fit_key(fabric, nvls)
    if key not in fit["fabrics"] and auto and nvls:
        nvls, key = False, fit_key(fabric, False)
    f, how = _fraction(fit, key, fabric)
    if f is None:
        return None, f"no public nccl-tests rows for fabric {key} in the fit: no estimate"
    out = {"raw": raw, "fact": fact, "key": how, "nvls": nvls, "fraction": f["fraction"], "hop_s": f["hop_us"] * 1e-6,
           "halfwidth": f.get("log_halfwidth", 0.0), "rows": len(f["rows"]),
           "sources": len(f.get("sources", ())), "links": lk}
    if nodes > 1:
        try:
            net = links_.parse_network(network)
        except ValueError as e:
            return None, str(e)
        if net is None:
            return None, f"{nodes} nodes but the network between them is unknown: no estimate"
        g = fit["networks"].get(net.kind)
        if g is None:
            return None, f"no public multi-node rows over {net.kind} in the fit: no estimate"
        out.update(net=net, net_fraction=g["fraction"], net_hop_s=g["hop_us"] * 1e-6,
                   halfwidth=math.hypot(out["halfwidth"], g["log_halfwidth"]), net_rows=len(g["rows"]))
    return out, ""


def _scaled(fraction: float, scale: float, ceiling: float = 1.0) -> float:
    """A fitted fraction x an interval's scale, never past what the wire allows: its line rate (1) for a ring over
    links or NICs; with NVLink SHARP, where the switch reduces and each GPU sends and receives the message once,
    algbw <= line rate, so busbw <= 2(n-1)/n x line rate (nccl-tests' busbw = algbw x 2(n-1)/n)."""
    return min(fraction * scale, max(ceiling, fraction))


def allreduce_seconds(m: dict, size: float, count: int, nodes: int, scale: float = 1.0) -> float:
    """Seconds to all-reduce `size` bytes on count x nodes GPUs; `scale` multiplies every fitted fraction (an
    interval's bound), each capped at what its wire allows (_scaled)."""
    ceiling = 2 * (count - 1) / count if m.get("nvls") and count > 1 else 1.0
    intra = m["raw"] * _scaled(m["fraction"], scale, ceiling)
    if nodes <= 1:
        return ring_seconds(size, count, intra, m["hop_s"])
    half = ring_seconds(size, count, intra, m["hop_s"], factor=(count - 1) / count) if count > 1 else 0.0
    inter = ring_seconds(size, nodes, m["net"].gbytes_per_s * _scaled(m["net_fraction"], scale), m["net_hop_s"])
    return max(2 * half, inter)  # NCCL pipelines the phases chunk by chunk: the slower one sets the pace


def _as_busbw(size: float, n: int, seconds: float) -> float:
    return size * 2 * (n - 1) / n / seconds / 1e9


def predict_busbw(gpu: str, count: int, fabric: str, nodes: int = 1, network: str | None = None, *,
                  size_bytes: float | None = BUSBW_AT_BYTES, nvls: bool | None = None, nccl_version: str | None = None,
                  fit: dict | None = None) -> Busbw:
    """nccl-tests all_reduce_perf busbw (GB/s) of `count` GPUs per node x `nodes` at `size_bytes` (None: the
    large-message plateau), with its 90% interval. nvls None: NVLink SHARP where the switch and NCCL do it."""
    fit = fit or load_fit()
    size_bytes = PLATEAU_BYTES if size_bytes is None else size_bytes
    out = Busbw(fabric=fabric, size_bytes=size_bytes)
    n = count * nodes
    if fit is None:
        out.reason = f"no collective fit at {FIT_PATH} (python -m tasks.estimate.collective_fit): no estimate"
        return out
    if n < 2:
        out.reason = "one GPU: no collective"
        return out
    m, why = machine(gpu, count, fabric, nodes, network, nvls, fit, nccl_version)
    if m is None:
        out.reason = why
        return out
    t = allreduce_seconds(m, size_bytes, count, nodes)
    w = math.exp(m["halfwidth"])
    out.gbps, out.seconds, out.nvls = _as_busbw(size_bytes, n, t), t, m["nvls"]
    out.lo = _as_busbw(size_bytes, n, allreduce_seconds(m, size_bytes, count, nodes, 1 / w))
    out.hi = _as_busbw(size_bytes, n, allreduce_seconds(m, size_bytes, count, nodes, w))
    out.parts = {k: m[k] for k in ("raw", "fraction", "key") if k in m} | (
        {"network": str(m["net"]), "net_fraction": m["net_fraction"]} if nodes > 1 else {})
    out.reason = (f"{m['fact']} x fitted {m['fraction']:.2f} ({m['key']}, {m['rows']} public rows"
                  + (f" from {m['sources']} sources" if m["sources"] else "") + ")"
                  + (f"; {m['net']} between {nodes} nodes at fitted {m['net_fraction']:.2f} "
                     f"({m['net_rows']} rows), hierarchical" if nodes > 1 else ""))
    return out
