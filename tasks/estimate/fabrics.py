"""The interconnect of each catalog instance type: fabric inside the node, network between nodes (issue 42).

    costgap estimate --preset 1b --catalog tests/fixtures/skypilot/lambda-vms.csv --json   # rows carry fabric, network

For a catalog row (warehouse target, targets-file entry, SkyPilot vms.csv row), in this order:
1. the fabric the probe's fingerprint measured on that target (environment.extra.fabric, newest run);
2. `fabric` / `network` set in the targets file (deploy/targets.toml);
3. the published facts, tasks/estimate/data/instance_fabrics.csv by provider and instance type (each row with
   its source and date).
The published row also names the GPU as the provider ships it (`published_gpu`: a V100-SXM2-16GB where a
SkyPilot catalog says V100), which the callers prefer when the datasheet knows it. One GPU needs no fabric. A multi-GPU type nobody published stays unknown: its estimate says "no estimate"
with the reason (tasks/estimate/scaling.py), never a guessed fabric.
"""

from __future__ import annotations

from tasks.estimate import public_rows as pr


def interconnect(entry: dict, published: dict | None = None) -> dict:
    """{fabric, network, fabric_source} for one catalog row (see the module docstring)."""
    published = pr.instance_fabrics() if published is None else published
    key = ((entry.get("provider") or "").lower(), (entry.get("instance_type") or "").lower())
    pub = published.get(key)
    fabric, network, src = entry.get("fabric"), entry.get("network"), []
    if entry.get("measured_fabric"):
        fabric = entry["measured_fabric"]
        src.append("fabric measured by the probe's fingerprint on this target")
    elif fabric:
        src.append("fabric from the targets file")
    elif pub and pub.get("fabric"):
        fabric = pub["fabric"]
        src.append(f"fabric {fabric} published: {pub.get('source_url')} ({pub.get('source_date')})")
    if network:
        src.append("network from the targets file")
    elif pub and pub.get("network"):
        network = pub["network"]
        src.append(f"network {network} published: {pub.get('source_url')} ({pub.get('source_date')})")
    if not fabric and int(entry.get("gpu_count") or 1) > 1:
        src.append(f"no published fabric for {entry.get('provider')}/{entry.get('instance_type')} "
                   "(instance_fabrics.csv, the targets file)")
    # the published row names the GPU as the provider ships it (V100-SXM2-16GB where a catalog says V100)
    gpu = pub.get("gpu") if pub and pub.get("gpu") else None
    return {"fabric": fabric, "network": network, "fabric_source": "; ".join(src) or None, "published_gpu": gpu}
