"""The interconnect's vocabulary and each GPU's link bandwidth from its datasheet row (issue 42).

    .venv/bin/pytest -q tests/test_scaling.py -k links

The vocabulary (fabrics nvswitch | nvlink | pcie | pcie-host, networks kind:gbps) is tasks/fabric.py.

`fabric_gbps` gives a GPU's raw one-direction bandwidth on a fabric, from tasks/probe/host/gpu_specs.json
(read through tasks.estimate.calibrate.gpu_catalog, the one reader): the NVLink GB/s per direction,
else the PCIe generation x lanes. What share of it a collective achieves is fitted on public nccl-tests
rows (tasks/estimate/collective_fit.py), never set here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tasks.estimate import calibrate as cal_
from tasks.fabric import FABRICS, NETWORKS, Network, parse_network  # noqa: F401  (the vocabulary, re-exported)

# PCIe one-direction GB/s per lane after line encoding: 8b/10b at gen 1-2, 128b/130b from gen 3; 2.5, 5, 8, 16,
# 32 GT/s (PCI-SIG PCI Express Base Specification revisions 1.0a-5.0; read 2026-12-02).
PCIE_GBPS_PER_LANE = {1: 0.25, 2: 0.5, 3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8, 5: 32 * 128 / 130 / 8}


@dataclass(frozen=True)
class Links:
    """One GPU's link facts from its datasheet row (None: the row does not say)."""

    key: str
    nvlink_gbps: float | None  # NVLink GB/s per direction, all links together
    nvlink_links: int | None
    nvlink_gen: int | None
    pcie_gen: int | None
    pcie_lanes: int
    p2p: bool | None  # can the card do peer-to-peer at all (None: not stated)
    source: str

    @property
    def pcie_gbps(self) -> float | None:
        """PCIe GB/s per direction: generation x lanes."""
        return PCIE_GBPS_PER_LANE[self.pcie_gen] * self.pcie_lanes if self.pcie_gen in PCIE_GBPS_PER_LANE else None


def _num(row: dict, *names: str) -> float | None:
    for n in names:
        v = row.get(n)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def links_of(name: str | None) -> Links | None:
    """The link facts of the first datasheet row matching `name`, else None."""
    for row in cal_.gpu_catalog() if name else ():
        if not any(re.search(p, name, flags=re.IGNORECASE) for p in row["match"]):
            continue
        per_dir = _num(row, "nvlink_gbps_per_direction", "nvlink_gbps_per_dir", "nvlink_gbps_one_way")
        if per_dir is None and _num(row, "nvlink_gbps") is not None:
            per_dir = _num(row, "nvlink_gbps") / 2  # the catalog's nvlink_gbps is bidirectional (its units note)
        gen, links = _num(row, "nvlink_gen", "nvlink_generation"), _num(row, "nvlink_links")
        pcie_gen, lanes = _num(row, "pcie_gen", "pcie_generation"), _num(row, "pcie_lanes")
        p2p = row.get("p2p", row.get("peer_to_peer"))
        return Links(row["key"], per_dir or None, int(links) if links else None, int(gen) if gen else None,
                     int(pcie_gen) if pcie_gen else None, int(lanes or 16),
                     p2p if isinstance(p2p, bool) else None,
                     f"gpu_specs.json:{row['key']} ({row.get('link_source') or row['source']}, {row['date']})")
    return None


def fabric_gbps(links: Links, fabric: str) -> tuple[float | None, str]:
    """(raw GB/s per direction per GPU on `fabric`, the datasheet fact it rests on), or (None, why not)."""
    if fabric in ("nvswitch", "nvlink"):
        if not links.nvlink_gbps:
            return None, f"{links.key} has no NVLink in its datasheet row, yet the fabric is {fabric}"
        return links.nvlink_gbps, f"NVLink {links.nvlink_gbps:g} GB/s per direction ({links.source})"
    if fabric in ("pcie", "pcie-host"):
        if links.pcie_gbps is None:
            return None, f"{links.key}: no PCIe generation in its datasheet row"
        if fabric == "pcie" and links.p2p is False:
            return None, f"{links.key} cannot do peer-to-peer (datasheet row), yet the fabric is pcie: use pcie-host"
        return links.pcie_gbps, (f"PCIe gen {links.pcie_gen} x{links.pcie_lanes} = {links.pcie_gbps:.1f} GB/s per "
                                 f"direction ({links.source})")
    return None, f"fabric {fabric!r} unknown: expected one of {', '.join(FABRICS)}"
