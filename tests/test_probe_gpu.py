"""GPU paths of the probe (CUDA + NVML): skipped cleanly without CUDA; run on the GPU host.

    python -m pytest -q -m gpu tests/test_probe_gpu.py
"""

from __future__ import annotations

import time

import pytest
import torch

from tasks.probe.hardware import gemm

from tasks.probe.hardware.gemm_sustained import measure_sustained
from tasks.probe.hardware.hostdev import measure_hostdev
from tasks.probe.hardware.memory import measure_memory
from tasks.probe.host import nvml
from tasks.probe.host.environment import fingerprint
from tasks.probe.host.specs import lookup
from tasks.probe.profiles import QUICK, SustainedConfig

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]
DEV = "cuda:0"


@pytest.fixture(scope="module")
def spec():
    return lookup(torch.cuda.get_device_name(0), warn=False)


@pytest.fixture()
def sampler():
    with nvml.Sampler(t0=time.time(), hz=20) as s:
        yield s


def test_gemm_bf16_search_reaches_tensor_core_rates(spec, sampler):
    (m,) = gemm.measure_gemm(QUICK.gemm, device=DEV, spec=spec, sampler=sampler, dtype="bf16")
    assert m["value"] > 50 and m["params"]["l2_flush_mib"] > 0
    if spec.key:
        assert m["peak"] == spec.bf16_tflops and m["value"] <= 1.05 * m["peak"]
    if nvml.available():
        assert m["conditions"]["sm_clock_mhz_median"] > 0
        assert isinstance(m["conditions"]["throttle_reasons"], list)


def test_memory_and_hostdev(spec, sampler):
    copy, triad = measure_memory(QUICK.memory, device=DEV, spec=spec, sampler=sampler)
    assert copy["value"] > 100 and triad["value"] > 100
    out = {m["metric"]: m for m in measure_hostdev(QUICK.hostdev, device=DEV, sampler=sampler)}
    assert set(out) == {"h2d_pinned_gbps", "d2h_pinned_gbps", "h2d_pageable_gbps", "d2h_pageable_gbps"}
    if nvml.available():
        assert out["h2d_pinned_gbps"]["peak"] and out["h2d_pinned_gbps"]["params"]["pcie_gen"]


def test_sustained_short_run(spec, sampler):
    res = measure_sustained(SustainedConfig(duration_s=3, window_s=1), device=DEV,
                            shape=[4096, 4096, 4096], burst_tflops=500.0, spec=spec,
                            sampler=sampler)
    assert res[0]["metric"] == "bf16_sustained_tflops" and res[0]["repeats"] >= 3
    assert res[1]["metric"] == "bf16_sustained_over_burst"


def test_fingerprint_gpu_fields(spec):
    env = fingerprint()
    assert env["gpu_count"] >= 1 and env["gpu_name"] and env["cuda_runtime"]
    if nvml.available():
        for k in ("gpu_uuid", "driver", "cuda_driver", "pcie_gen_max", "pcie_width_max",
                  "power_limit_w", "sm_clock_max_mhz", "mig_mode", "cudnn", "nccl",
                  "numa_node", "cpu_affinity", "nvlink", "persistence_mode"):
            assert env[k] is not None, k


def test_sustained_holds_the_candidate_with_the_best_capped_rate(spec, sampler):
    cfg = SustainedConfig(duration_s=2, window_s=1, pick_ramp_s=0.5, pick_window_s=0.2, pick_rounds=1)
    cands, burst = [[2048, 2048, 2048], [4096, 4096, 4096]], [500.0, 700.0]
    res = measure_sustained(cfg, device=DEV, shape=cands[0], burst_tflops=burst[0], spec=spec,
                            sampler=sampler, candidates=cands, candidate_burst=burst)
    p = res[0]["params"]
    assert p["shape_source"] == "capped_pick" and len(p["pick_capped_tflops"]) == 2
    i = p["pick_capped_tflops"].index(max(p["pick_capped_tflops"]))
    assert [p["m"], p["n"], p["k"]] == cands[i] and p["burst_tflops"] == burst[i]
