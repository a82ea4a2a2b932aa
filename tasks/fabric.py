"""The interconnect's vocabulary, shared by the probe's fingerprint, the targets file and the estimator (issue 42).

    .venv/bin/python -c "from tasks.fabric import parse_network; print(parse_network('efa:3200'))"

A node's GPUs talk over one of four fabrics:
- `nvswitch`: every GPU on an NVSwitch, all its NVLinks usable by any pair;
- `nvlink`: point-to-point NVLinks (a hybrid cube mesh, or a bridged pair);
- `pcie`: peer-to-peer over PCIe, through a switch or the root complex;
- `pcie-host`: no peer-to-peer: every transfer is staged through host memory.
Nodes talk over a network written `kind:gbps` (the node's NICs together, Gbit/s), kind one of rdma
(InfiniBand or RoCE), efa (AWS Elastic Fabric Adapter) or tcp (plain sockets). Stdlib only: the probe
(torch only) and the targets file (no estimator) read it too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FABRICS = ("nvswitch", "nvlink", "pcie", "pcie-host")
NETWORKS = ("rdma", "efa", "tcp")
NETWORK_ALIASES = {"ib": "rdma", "infiniband": "rdma", "roce": "rdma", "rdma": "rdma", "efa": "efa", "tcp": "tcp",
                   "ethernet": "tcp", "socket": "tcp", "sockets": "tcp"}


@dataclass(frozen=True)
class Network:
    kind: str  # rdma | efa | tcp
    gbps: float  # the node's NICs together, Gbit/s

    @property
    def gbytes_per_s(self) -> float:
        return self.gbps / 8.0

    def __str__(self) -> str:
        return f"{self.kind}:{self.gbps:g}"


def parse_network(text: str | None) -> Network | None:
    """'efa:3200' -> Network('efa', 3200.0); None or '' -> None. A malformed string raises ValueError."""
    if text is None or not str(text).strip():
        return None
    m = re.fullmatch(r"\s*([A-Za-z]+)\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*", str(text))
    if not m or m.group(1).lower() not in NETWORK_ALIASES or float(m.group(2)) <= 0:
        raise ValueError(f"network {text!r}: expected KIND:GBPS with KIND one of {', '.join(NETWORKS)} "
                         "and GBPS the node's NIC bandwidth in Gbit/s, e.g. efa:3200, rdma:400, tcp:100")
    return Network(NETWORK_ALIASES[m.group(1).lower()], float(m.group(2)))


def check_fabric(text: str | None) -> str | None:
    """A fabric name as the vocabulary spells it (None stays None); anything else raises ValueError."""
    if text is None or not str(text).strip():
        return None
    t = str(text).strip().lower()
    if t not in FABRICS:
        raise ValueError(f"fabric {text!r}: expected one of {', '.join(FABRICS)}")
    return t
