"""GPU spec catalog lookup: datasheet peaks for a GPU name as NVML or torch reports it.

    python -c "from tasks.probe.host.specs import lookup; print(lookup('NVIDIA H200'))"

The catalog is tasks/probe/host/gpu_specs.json (a source and a date on every row). An unknown GPU gets
null peaks and a warning, never a made-up number; a precision a GPU lacks (V100 bf16) is null.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CATALOG_PATH = Path(__file__).with_name("gpu_specs.json")
PEAK_FIELDS = ("bf16_tflops", "fp16_tflops", "tf32_tflops", "fp32_tflops")


@dataclass(frozen=True)
class GpuSpec:
    key: str | None  # catalog row, None when the GPU is unknown
    bf16_tflops: float | None = None
    fp16_tflops: float | None = None
    tf32_tflops: float | None = None
    fp32_tflops: float | None = None
    memory_gib: float | None = None
    bandwidth_gbps: float | None = None
    pcie_gen: int | None = None
    nvlink_gbps: float | None = None  # total bidirectional NVLink GB/s per GPU
    source: str | None = None
    date: str | None = None
    # Link data (issue 42): NVLink generation, links, GB/s per direction per GPU; the host link's lanes;
    # PCIe peer-to-peer without a bridge (True, False or "unknown"); their own source and read date.
    nvlink_gen: int | None = None
    nvlink_links: int | None = None
    nvlink_gbps_per_dir: float | None = None
    pcie_lanes: int | None = None
    p2p: bool | str | None = None
    link_source: str | None = None
    link_date: str | None = None

    def peak_tflops(self, dtype: str) -> float | None:
        if dtype not in ("bf16", "fp16", "tf32", "fp32"):
            raise ValueError(f"dtype = {dtype!r}: expected bf16, fp16, tf32 or fp32")
        return getattr(self, f"{dtype}_tflops")

    @property
    def peak_source(self) -> str | None:
        return f"{self.source} ({self.date}), gpu_specs.json:{self.key}" if self.key else None


@lru_cache(maxsize=1)
def catalog() -> list[dict]:
    doc = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    rows = doc["gpus"]
    for i, row in enumerate(rows):
        for need in ("key", "match", "source", "date", *PEAK_FIELDS, "memory_gib", "bandwidth_gbps"):
            if need not in row:
                raise ValueError(f"{CATALOG_PATH}: gpus[{i}] ({row.get('key')}) lacks field '{need}'")
    return rows


UNKNOWN = GpuSpec(key=None)


def lookup(name: str | None, *, warn: bool = True) -> GpuSpec:
    """The first catalog row whose pattern matches `name` (case-insensitive), else UNKNOWN."""
    if not name:
        return UNKNOWN
    for row in catalog():
        if any(re.search(p, name, flags=re.IGNORECASE) for p in row["match"]):
            return GpuSpec(**{k: v for k, v in row.items() if k != "match"})
    if warn:
        warnings.warn(f"GPU {name!r} is not in {CATALOG_PATH.name}: peaks are null", stacklevel=2)
    return UNKNOWN
