"""Interconnect fingerprint of a multi-GPU host: NVLink links and state, P2P access, topology.

    .venv/bin/python -c "from tasks.probe.host.interconnect import fingerprint; print(fingerprint())"

Returns environment extras (a flat dict of scalars and lists of scalars, as bundle
Environment.extra allows) for the runner to merge into environment.extra. Sources: NVML
(nvmlDeviceGetNvLinkState/Version per link), torch.cuda.can_device_access_peer, and
`nvidia-smi topo -m` / `nvidia-smi nvlink -s` where nvidia-smi exists. On a host without GPUs it
returns {"interconnect": "none", "interconnect_gpu_count": 0} and runs no subprocess.
The link codes are nvidia-smi's topology legend: X self, NV# # bonded NVLinks, PIX/PXB one/several
PCIe bridges, PHB a host bridge, NODE within a NUMA node, SYS across the SMP interconnect. `fabric` maps
them to the catalog's vocabulary (nvswitch | nvlink | pcie | pcie-host, tasks/estimate/links.py), so a
measured host says which fabric it has.
"""

from __future__ import annotations

import re
from typing import Any

from tasks.fabric import FABRICS  # noqa: F401  (the catalog's vocabulary: fabric_of answers in it)
from tasks.probe.host.environment import _smi  # one nvidia-smi runner for the whole probe

NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS (nvml.h, 18 since Hopper; read 2026-12-02)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CTRL = re.compile(r"[\x00-\x1f\x7f]")


def _clean(line: str) -> str:
    return " ".join(_CTRL.sub(" ", _ANSI.sub("", line)).split())


def parse_topo(text: str) -> tuple[list[str], dict[tuple[int, int], str]]:
    """`nvidia-smi topo -m` -> (cleaned GPU rows, {(i, j): link code}) for GPU pairs i != j."""
    lines = [ln for ln in (_ANSI.sub("", raw) for raw in text.splitlines()) if ln.strip()]
    header = next((ln.split() for ln in lines if ln.split()[0] == "GPU0" and
                   (ln[:1].isspace() or ln.split()[1:2] == ["GPU1"])), None)
    if header is None:
        return [], {}
    gpu_cols = [c for c in header if re.fullmatch(r"GPU\d+", c)]
    rows, links = [], {}
    for ln in lines:
        cells = ln.split()
        if not re.fullmatch(r"GPU\d+", cells[0]) or ln[:1].isspace() or cells == header:
            continue
        i = int(cells[0][3:])
        rows.append(_clean(ln)[:300])
        for j, code in enumerate(cells[1:1 + len(gpu_cols)]):
            if i != j:
                links[(i, j)] = code
    return rows, links


def kind_of(links: dict[tuple[int, int], str]) -> str:
    """'nvlink' when every GPU pair is NVLink-connected, 'mixed' when some are, else 'pcie'."""
    if not links:
        return "unknown"
    nv = [code.startswith("NV") for code in links.values()]
    return "nvlink" if all(nv) else ("mixed" if any(nv) else "pcie")


PCIE_SWITCH_CODES = ("PIX", "PXB")  # through PCIe switches only: peer-to-peer works there unless the card forbids it


def _nv_count(code: str) -> int | None:
    m = re.fullmatch(r"NV(\d+)", code)
    return int(m.group(1)) if m else None


def fabric_of(links: dict[tuple[int, int], str], p2p: bool | None = None,
              active_links: list[int] | None = None) -> str | None:
    """The catalog's fabric for a host's `nvidia-smi topo -m` codes (parse_topo), its peer-to-peer answer
    (torch.cuda.can_device_access_peer for every pair; None: not known) and NVML's active NVLinks per GPU:
    - every pair NV# with all of each GPU's active links to every peer, more than 2 GPUs: `nvswitch` (on a
      switch every pair reaches all the links; a point-to-point mesh splits them among its peers);
    - any pair over NVLink otherwise (a bridged pair, a hybrid cube mesh): `nvlink`;
    - no NVLink, peer-to-peer refused: `pcie-host` (staged through host memory);
    - no NVLink, peer-to-peer granted: `pcie`; not known: `pcie` behind PCIe switches (PIX, PXB), else
      `pcie-host` (PHB, NODE, SYS: through a host bridge or across sockets).
    None when there are no GPU pairs."""
    if not links:
        return None
    counts = [_nv_count(c) for c in links.values()]
    if all(c is not None for c in counts):
        n = len({i for pair in links for i in pair})
        full = bool(active_links) and all(c == min(active_links) for c in counts) and min(active_links) > 0
        return "nvswitch" if n > 2 and full else "nvlink"
    if any(c is not None for c in counts):
        return "nvlink"
    if p2p is not None:
        return "pcie" if p2p else "pcie-host"
    return "pcie" if all(c in PCIE_SWITCH_CODES for c in links.values()) else "pcie-host"


def _nvlink_per_gpu() -> dict[str, Any]:
    from tasks.probe.host import nvml

    nv, hs = nvml._nvml(), nvml.handles()
    if nv is None or not hs:
        return {}
    active, total, version = [], [], None
    for h in hs:
        a = t = 0
        for link in range(NVLINK_MAX_LINKS):
            try:
                state = nv.nvmlDeviceGetNvLinkState(h, link)
            except Exception:  # NotSupported past the last link (or no NVLink at all)
                break
            t += 1
            a += int(state == 1)
            if version is None and state == 1:
                try:
                    version = int(nv.nvmlDeviceGetNvLinkVersion(h, link))
                except Exception:
                    pass
        active.append(a)
        total.append(t)
    return {"nvlink_active_links": active, "nvlink_links": total, "nvlink_version": version}


def _link_gbps(text: str | None) -> float | None:
    """Per-link speed of GPU 0 from `nvidia-smi nvlink -s` ("Link 0: 26.562 GB/s")."""
    speeds = [float(x) for x in re.findall(r"Link \d+:\s*([0-9.]+)\s*GB/s", text or "")]
    return speeds[0] if speeds else None


def _p2p(n: int) -> list[str]:
    import torch

    rows = []
    for i in range(n):
        cells = ["X" if i == j else ("Y" if torch.cuda.can_device_access_peer(i, j) else "N")
                 for j in range(n)]
        rows.append(f"GPU{i} " + " ".join(cells))
    return rows


def fingerprint() -> dict[str, Any]:
    """Environment extras describing how the visible GPUs talk to each other."""
    import torch

    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    out: dict[str, Any] = {"interconnect": "none", "interconnect_gpu_count": n}
    if n == 0:
        return out
    out["p2p_matrix"] = _p2p(n)
    out["p2p_all"] = all("N" not in row.split()[1:] for row in out["p2p_matrix"])
    out.update(_nvlink_per_gpu())
    topo = _smi(["topo", "-m"])
    rows, links = parse_topo(topo or "")
    out["topology_matrix"] = rows
    out["gpu_links"] = [f"{i}-{j}:{code}" for (i, j), code in sorted(links.items()) if i < j]
    out["interconnect"] = kind_of(links) if n > 1 else "single_gpu"
    out["fabric"] = fabric_of(links, out["p2p_all"], out.get("nvlink_active_links")) if n > 1 else None
    if out.get("nvlink_active_links") and max(out["nvlink_active_links"]) > 0:
        out["nvlink_link_gbps"] = _link_gbps(_smi(["nvlink", "-s", "-i", "0"]))
    return {k: v for k, v in out.items() if v is not None and v != []}
