"""Every probe benchmark's CPU path, with tiny configs (GPU-only ones are not_applicable here).

    .venv/bin/pytest -q tests/test_probe_cpu.py
"""

from __future__ import annotations

import os

import pytest

from tasks.probe.distributed.collectives import measure_collectives
from tasks.probe.hardware import gemm
from tasks.probe.hardware.feed import measure_feed
from tasks.probe.hardware.gemm_sustained import measure_sustained
from tasks.probe.hardware.hostdev import measure_hostdev
from tasks.probe.hardware.memory import measure_memory
from tasks.probe.hardware.storage import measure_storage
from tasks.probe.host.environment import cpu_list, fingerprint
from tasks.probe.host.specs import UNKNOWN
from tasks.probe.profiles import (QUICK, FeedConfig, GemmConfig, HostDevConfig, MemoryConfig,
                                  StorageConfig, SustainedConfig)
from tasks.probe.record import NotApplicable, run_task

TINY_GEMM = GemmConfig(cpu_size=128, cpu_iters=3, refine_iters=4, warmup=1)


def _valid(m: dict) -> None:
    assert m["value"] > 0 and m["repeats"] >= 1 and m["benchmark_version"]
    assert m["unit"] and m["statistic"] in ("median", "mean", "p95", "p99", "single", "trimmed_median")


def test_gemm_cpu_fp32_median_and_spread():
    (m,) = gemm.measure_gemm(TINY_GEMM, device="cpu", spec=UNKNOWN, dtype="fp32")
    _valid(m)
    assert m["metric"] == "fp32_tflops" and m["unit"] == "TFLOP/s" and m["spread_kind"] == "iqr"
    assert m["params"]["m"] == 128 and m["params"]["max_tflops"] >= m["value"]
    assert m["peak"] is None and m["conditions"] is None  # no catalog row for a CPU


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "tf32"])
def test_gemm_cpu_tensor_dtypes_not_applicable(dtype):
    attempts: list[dict] = []
    out = run_task(f"gemm:{dtype}", lambda: gemm.measure_gemm(TINY_GEMM, device="cpu",
                                                               spec=UNKNOWN, dtype=dtype), attempts)
    assert out == [] and attempts[0]["state"] == "not_applicable"


def test_gemm_classic_2048_cpu():
    (m,) = gemm.measure_classic(GemmConfig(cpu_iters=2, warmup=1), device="cpu", spec=UNKNOWN)
    _valid(m)
    assert m["metric"] == "mm2048_fp32_tflops" and m["params"]["k"] == 2048


def test_gemm_grid_is_exhaustive_and_search_list_inside_limits():
    assert len(gemm.grid("bf16")) == 8 * 16 * 8
    assert len(gemm.grid("fp32")) == 4 * 8 * 4
    for family, dtype in (("tensor", "bf16"), ("fp32", "fp32")):
        assert set(gemm.KNOWN_GOOD[family]) <= set(gemm.grid(dtype))  # the search stays in the grid


def test_gemm_search_on_cpu_honours_budget_and_refines(monkeypatch):
    from tasks.probe.hardware import gemm_search

    cfg = GemmConfig(budget_s=0.01, warmup=1, iters=2, refine_iters=3, refine_top=1)
    monkeypatch.setattr(gemm_search, "seed_shapes", lambda dtype, sms, n: [(64, 64, 64), (128, 128, 128)])
    monkeypatch.setattr(gemm_search, "neighbours", lambda shape, dtype, seen: [])
    res = gemm.search("fp32", cfg, "cpu")
    assert res["shapes_tried"] >= 1 and res["iters"] == 3 and res["tflops_median"] > 0


def test_memory_cpu_copy_and_triad():
    out = measure_memory(MemoryConfig(cpu_mib=4, iters=3, warmup=1), device="cpu", spec=UNKNOWN)
    assert [m["metric"] for m in out] == ["copy_gbps", "triad_gbps"]
    for m in out:
        _valid(m)
        assert m["params"]["convention"] == "read+write (BabelStream)"
    assert out[0]["params"]["bytes_counted"] == 2 * 4 * 2**20
    assert out[1]["params"]["bytes_counted"] == 3 * 4 * 2**20


def test_hostdev_and_sustained_not_applicable_on_cpu():
    with pytest.raises(NotApplicable):
        measure_hostdev(HostDevConfig(), device="cpu")
    with pytest.raises(NotApplicable):
        measure_sustained(SustainedConfig(), device="cpu", shape=None, burst_tflops=None, spec=UNKNOWN)
    with pytest.raises(NotApplicable):
        measure_sustained(SustainedConfig(), device="cpu", shape=None, burst_tflops=None, spec=UNKNOWN,
                          variant="fixed")
    with pytest.raises(ValueError, match="variant"):
        measure_sustained(SustainedConfig(), device="cpu", shape=None, burst_tflops=None, spec=UNKNOWN,
                          variant="longest")


@pytest.mark.parametrize("shape", [(2048, 7168), (0, 1, 1), (2048.0, 7168, 4096)])
def test_bad_fixed_sustained_shape_names_the_field(shape):
    with pytest.raises(ValueError, match="fixed_shape"):
        SustainedConfig(fixed_shape=shape)


def test_storage_seq_and_small_files_cleaned_up(tmp_path):
    cfg = StorageConfig(big_file_mib=4, chunk_mib=1, small_files=60, small_kib=4, repeats=2,
                        data_dir=str(tmp_path))
    by = {m["metric"]: m for m in measure_storage(cfg)}  # the storage path's figures: test_probe_host_checks.py
    seq, small = by["seq_read_gbps"], by["small_files_per_s"]
    _valid(seq)
    _valid(small)
    assert seq["metric"] == "seq_read_gbps" and seq["params"]["page_cache_evicted"] is True
    assert small["metric"] == "small_files_per_s" and small["params"]["files"] == 60
    assert os.listdir(tmp_path) == []  # the probe removes what it wrote


@pytest.mark.parametrize("workers", [0, 1])
def test_feed_latency_mean_p95(workers):
    cfg = FeedConfig(warmup_batches=10, timed_batches=8, batch_size=4, item_shape=(3, 16, 16),
                     workers=workers)
    mean_m, p95_m, _ = measure_feed(cfg, device="cpu")
    _valid(mean_m)
    assert mean_m["metric"] == "next_latency_ms_mean" and p95_m["statistic"] == "p95"
    assert mean_m["params"]["workers"] == workers and mean_m["params"]["pin_memory"] is False


def test_collectives_not_applicable_on_one_device():
    ms, fts, atts = measure_collectives(QUICK, device="cpu")
    assert ms == [] and fts == []
    assert [(a["task"], a["state"]) for a in atts] == [("allreduce", "not_applicable")]
    assert atts[0]["error_kind"] is None


def test_fingerprint_cpu_host_gpu_fields_null():
    env = fingerprint()
    assert env["cpu_cores"] >= 1 and env["ram_gib"] > 0 and env["torch"] and env["python"]
    if env["gpu_count"] == 0:  # this CPU box: every GPU field is null, never guessed
        assert env["source"] == "none"
        for k in ("gpu_name", "driver", "cuda_driver", "cudnn", "nccl", "pcie_gen_current",
                  "power_limit_w", "ecc", "mig_mode"):
            assert env.get(k) is None
    assert cpu_list([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
