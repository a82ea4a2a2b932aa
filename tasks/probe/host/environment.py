"""Environment fingerprint: host, software stack and GPU state (NVML, falling back to nvidia-smi).

    python -m tasks.probe.host.environment

Every field of the bundle's `environment` (DESIGN.md) is filled where the host can answer it and is
None where it cannot; GPU fields are None on a CPU-only host, never guessed. `source` records
where the GPU fields came from: "nvml", "nvidia-smi" or "none".
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
from typing import Any

from tasks.probe.host import container, nvml
from tasks.probe.host.numa import cpu_list  # noqa: F401 (the compact CPU list, e.g. '0-3,8')

SMI_FIELDS = ("name", "uuid", "memory.total", "driver_version", "pcie.link.gen.current",
              "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
              "ecc.mode.current", "power.limit", "clocks.max.sm", "clocks.max.mem",
              "persistence_mode", "mig.mode.current", "pci.bus_id")


def _try(fn, *args, default=None):
    try:
        return fn(*args)
    except Exception:
        return default


def _text(x) -> str | None:
    if x is None:
        return None
    return x.decode() if isinstance(x, bytes) else str(x)


def host_info() -> dict[str, Any]:
    """Host fields that need no GPU."""
    cpu_model = None
    meminfo_kib = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    meminfo_kib = int(line.split()[1])
    except (OSError, ValueError):
        pass
    affinity = _try(os.sched_getaffinity, 0)
    box = _try(container.detect, default={}) or {}
    return {
        "hostname": socket.gethostname(), "os": platform.system(), "kernel": platform.release(),
        "python": platform.python_version(), "cpu_model": cpu_model or platform.processor() or None,
        "cpu_cores": os.cpu_count(), "ram_gib": round(meminfo_kib / 2**20, 2) if meminfo_kib else None,
        "cpu_affinity": cpu_list(affinity) if affinity else None,
        "container_image": box.get("container_image"),
        "_extra": {k: v for k, v in box.items() if k != "container_image" and v is not None},
    }


def torch_info() -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {"torch": torch.__version__, "cuda_runtime": torch.version.cuda,
                           "cudnn": None, "nccl": None, "compute_capability": None}
    if torch.cuda.is_available():
        v = _try(torch.backends.cudnn.version)
        out["cudnn"] = str(v) if v else None
        nccl = _try(torch.cuda.nccl.version)
        out["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else _text(nccl)
        major, minor = torch.cuda.get_device_capability(0)
        out["compute_capability"] = f"{major}.{minor}"
        props = torch.cuda.get_device_properties(0)
        out["extra"] = {"sm_count": props.multi_processor_count,
                        "l2_cache_mib": round(getattr(props, "L2_cache_size", 0) / 2**20, 1) or None,
                        "torch_gpu_count": torch.cuda.device_count()}
    return out


def _nvlink(nv, h) -> str:
    active, total = 0, 0
    for link in range(18):  # NVML_NVLINK_MAX_LINKS is 18 on Hopper
        state = _try(nv.nvmlDeviceGetNvLinkState, h, link)
        if state is None:
            break
        total += 1
        active += int(state == 1)
    return f"{active} of {total} links active" if total else "no NVLink"


def _sysfs_numa(bus_id: str | None) -> int | None:
    if not bus_id:
        return None
    bdf = bus_id.lower()[-12:] if len(bus_id) > 12 else bus_id.lower()
    try:
        with open(f"/sys/bus/pci/devices/{bdf}/numa_node", encoding="utf-8") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def nvml_info() -> dict[str, Any] | None:
    """GPU fields from NVML, or None without NVML."""
    nv = nvml._nvml()
    hs = nvml.handles()
    if nv is None or not hs:
        return None
    h = hs[0]
    mem = _try(nv.nvmlDeviceGetMemoryInfo, h)
    cuda_drv = _try(nv.nvmlSystemGetCudaDriverVersion_v2) or _try(nv.nvmlSystemGetCudaDriverVersion)
    mig = _try(nv.nvmlDeviceGetMigMode, h)
    ecc = _try(nv.nvmlDeviceGetCurrentEccMode, h)
    pl = _try(nv.nvmlDeviceGetEnforcedPowerLimit, h)
    pci = _try(nv.nvmlDeviceGetPciInfo, h)
    bus_id = _text(getattr(pci, "busId", None)) if pci is not None else None
    numa = _try(nv.nvmlDeviceGetNumaNodeId, h) if hasattr(nv, "nvmlDeviceGetNumaNodeId") else None
    if numa is None:
        numa = _sysfs_numa(bus_id)
    aff = _try(nv.nvmlDeviceGetCpuAffinity, h, max(1, ((os.cpu_count() or 64) + 63) // 64))
    aff_cpus = [w * 64 + b for w, word in enumerate(aff or []) for b in range(64) if word >> b & 1]
    names = [_text(_try(nv.nvmlDeviceGetName, x)) for x in hs]
    return {
        "gpu_name": names[0], "gpu_uuid": _text(_try(nv.nvmlDeviceGetUUID, h)), "gpu_count": len(hs),
        "gpu_memory_gib": round(mem.total / 2**30, 2) if mem else None,
        "driver": _text(_try(nv.nvmlSystemGetDriverVersion)),
        "cuda_driver": f"{cuda_drv // 1000}.{cuda_drv % 1000 // 10}" if cuda_drv else None,
        "pcie_gen_current": _try(nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
        "pcie_gen_max": _try(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
        "pcie_width_current": _try(nv.nvmlDeviceGetCurrPcieLinkWidth, h),
        "pcie_width_max": _try(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
        "numa_node": numa, "nvlink": _nvlink(nv, h), "topology": topology(),
        "ecc": bool(ecc[0]) if isinstance(ecc, (tuple, list)) else None,
        "power_limit_w": pl / 1000.0 if pl else None,
        "sm_clock_max_mhz": _try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
        "mem_clock_max_mhz": _try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
        "persistence_mode": (lambda p: None if p is None else bool(p))(
            _try(nv.nvmlDeviceGetPersistenceMode, h)),
        "mig_mode": ("enabled" if mig[0] else "disabled") if mig else "not_supported",
        "source": "nvml",
        "_extra": {"gpu_names": names, "pci_bus_id": bus_id,
                   "gpu_affinity_cpus": cpu_list(aff_cpus) if aff_cpus else None},
    }


def _smi(args: list[str], timeout_s: float = 15.0) -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def topology() -> str | None:
    """`nvidia-smi topo -m` matrix rows, joined compactly (None without nvidia-smi)."""
    out = _smi(["topo", "-m"])
    if not out:
        return None
    rows = [" ".join(line.split()) for line in out.splitlines() if line.strip().startswith("GPU")]
    return "; ".join(rows)[:1000] or None


def smi_info() -> dict[str, Any] | None:
    """GPU fields parsed from nvidia-smi's CSV query (the fallback when NVML is absent)."""
    out = _smi([f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"])
    if not out or not out.strip():
        return None
    rows = [[c.strip() for c in line.split(",")] for line in out.strip().splitlines()]
    r = dict(zip(SMI_FIELDS, rows[0]))

    def num(key, kind=float):
        return _try(lambda: kind(float(r[key])))

    return {
        "gpu_name": r.get("name"), "gpu_uuid": r.get("uuid"), "gpu_count": len(rows),
        "gpu_memory_gib": (lambda m: round(m / 1024, 2) if m else None)(num("memory.total")),
        "driver": r.get("driver_version"), "pcie_gen_current": num("pcie.link.gen.current", int),
        "pcie_gen_max": num("pcie.link.gen.max", int),
        "pcie_width_current": num("pcie.link.width.current", int),
        "pcie_width_max": num("pcie.link.width.max", int),
        "ecc": {"Enabled": True, "Disabled": False}.get(r.get("ecc.mode.current", "")),
        "power_limit_w": num("power.limit"), "sm_clock_max_mhz": num("clocks.max.sm"),
        "mem_clock_max_mhz": num("clocks.max.mem"),
        "persistence_mode": {"Enabled": True, "Disabled": False}.get(r.get("persistence_mode", "")),
        "mig_mode": (r.get("mig.mode.current") or "").lower() or None,
        "numa_node": _sysfs_numa(r.get("pci.bus_id")), "topology": topology(),
        "source": "nvidia-smi", "_extra": {"gpu_names": [row[0] for row in rows]},
    }


def fingerprint() -> dict[str, Any]:
    """The bundle's `environment` dict."""
    env: dict[str, Any] = {"gpu_count": 0, "source": "none", "extra": {}}
    host = host_info()
    env["extra"].update(host.pop("_extra", {}))
    env.update(host)
    tinfo = torch_info()
    env["extra"].update(tinfo.pop("extra", {}))
    env.update(tinfo)
    gpu = nvml_info()
    if gpu and any(v is None for k, v in gpu.items() if not k.startswith("_")):
        smi = smi_info() or {}  # NVML refused a field (a VM, an old driver): ask nvidia-smi
        filled = [k for k, v in gpu.items() if v is None and smi.get(k) is not None]
        gpu.update({k: smi[k] for k in filled})
        if filled:
            gpu["_extra"]["fields_from_nvidia_smi"] = filled
    gpu = gpu or smi_info()
    if gpu:
        extra = gpu.pop("_extra", {})
        env.update({k: v for k, v in gpu.items()})
        env["extra"].update({k: v for k, v in extra.items() if v is not None})
    else:  # CPU host: torch may still report a CUDA build; no device means no GPU runtime facts
        for k in ("cudnn", "nccl", "compute_capability"):
            env[k] = None
    if env.get("nvlink") is None and gpu:
        env["nvlink"] = "unknown"
    return env


if __name__ == "__main__":
    print(json.dumps(fingerprint(), indent=1, sort_keys=True))
