"""Pure logic of the probe: statistics, formulas, spec catalog, profiles, NVML decoding/conditions.

    .venv/bin/pytest -q tests/test_probe_units.py
"""

from __future__ import annotations

import time
import warnings

import pytest

from tasks.probe.distributed.bandwidth import algbw_gbps, busbw_gbps
from tasks.probe.hardware.hostdev import link_ceiling_gbps
from tasks.probe.hardware.timing import iqr, median, median_top, percentile, trimmed_median
from tasks.probe.host import nvml
from tasks.probe.host.specs import catalog, lookup
from tasks.probe.profiles import PROFILES, GemmConfig, SustainedConfig, get_profile
from tasks.probe.record import classify, measurement, run_task


@pytest.mark.parametrize("xs,q,expected", [
    ([1, 2, 3, 4, 5], 50, 3.0), ([1, 2, 3, 4], 50, 2.5), ([10], 95, 10.0),
    ([1, 2, 3, 4, 5], 0, 1.0), ([1, 2, 3, 4, 5], 100, 5.0), ([0, 10], 95, 9.5),
])
def test_percentile(xs, q, expected):
    assert percentile(xs, q) == pytest.approx(expected)


def test_median_iqr_trimmed():
    assert median([3, 1, 2]) == 2
    assert iqr([1, 2, 3, 4, 5]) == pytest.approx(2.0)
    # a ramp-up window (first) and a glitch (last) do not move the trimmed median
    windows = [400.0] + [620.0] * 8 + [900.0]
    assert trimmed_median(windows, 0.1) == 620.0
    with pytest.raises(ValueError, match="trim"):
        trimmed_median([1.0], 0.6)
    with pytest.raises(ValueError):
        percentile([], 50)


def test_median_top_is_the_burst_peak_a_slow_minority_cannot_drag_down():
    # 100 calls, 60 of them slowed (as an H200 showed at an unchanged 1980 MHz reading): the plain
    # median falls to the slow mode, the median of the 5 fastest stays at the fast calls.
    calls = [729.0] * 60 + [820.0, 822.0, 824.0, 826.0, 828.0] + [800.0] * 35
    assert median(calls) == 729.0
    assert median_top(calls, 5) == 824.0
    assert median_top([3.0, 1.0], 5) == 2.0  # fewer than k: all of them
    with pytest.raises(ValueError):
        median_top([], 5)


@pytest.mark.parametrize("algbw,n,expected", [(100.0, 1, 0.0), (100.0, 2, 100.0),
                                              (100.0, 4, 150.0), (100.0, 8, 175.0)])
def test_busbw_formula(algbw, n, expected):
    assert busbw_gbps(algbw, n) == pytest.approx(expected)


def test_busbw_rejects_bad_inputs():
    with pytest.raises(ValueError, match="n = 0"):
        busbw_gbps(1.0, 0)
    assert algbw_gbps(2 * 10**9, 0.5) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="seconds"):
        algbw_gbps(1, 0)


@pytest.mark.parametrize("gen,width,expected", [(3, 16, 15.75), (4, 16, 31.5), (5, 16, 63.0),
                                                (4, 8, 15.75), (None, 16, None), (5, None, None)])
def test_pcie_ceiling(gen, width, expected):
    assert link_ceiling_gbps(gen, width) == (pytest.approx(expected) if expected else None)


@pytest.mark.parametrize("name,key,bf16", [
    ("NVIDIA H200", "H200", 989.4), ("NVIDIA H100 80GB HBM3", "H100-SXM", 989.4),
    ("NVIDIA H100 PCIe", "H100-PCIe", 756.0), ("NVIDIA H20", "H20", 148.0),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB", 312.0), ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB", 312.0),
    ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB", 312.0), ("NVIDIA A10G", "A10G", 70.0),
    ("NVIDIA A10", "A10", 125.0), ("NVIDIA L4", "L4", 121.0), ("NVIDIA L40S", "L40S", 362.05),
    ("NVIDIA B200", "B200", 2250.0), ("Tesla T4", "T4", None),
    ("Tesla V100-SXM2-32GB", "V100-SXM2", None), ("Tesla V100-PCIE-16GB", "V100-PCIe", None),
])
def test_spec_lookup_known(name, key, bf16):
    spec = lookup(name)
    assert spec.key == key
    assert spec.peak_tflops("bf16") == bf16
    assert spec.peak_tflops("fp32") > 0 and spec.bandwidth_gbps > 0
    assert key in spec.peak_source and spec.date


def test_spec_v100_has_no_bf16_but_fp16():
    spec = lookup("Tesla V100-SXM2-16GB")
    assert spec.bf16_tflops is None and spec.fp16_tflops == 125.0


def test_spec_unknown_gpu_null_peaks_and_warning():
    with pytest.warns(UserWarning, match="not in gpu_specs.json"):
        spec = lookup("NVIDIA Imaginary X1")
    assert spec.key is None and spec.peak_source is None
    assert all(spec.peak_tflops(d) is None for d in ("bf16", "fp16", "tf32", "fp32"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lookup(None).key is None  # no GPU: no warning


def test_catalog_rows_have_source_date_and_required_gpus():
    rows = catalog()
    keys = {r["key"] for r in rows}
    assert {"V100-PCIe", "V100-SXM2", "T4", "A10", "A10G", "L4", "L40S", "A100-PCIe-40GB",
            "A100-PCIe-80GB", "A100-SXM-40GB", "A100-SXM-80GB", "H100-PCIe", "H100-SXM", "H200",
            "H20", "B200"} <= keys
    for r in rows:
        assert r["source"] and r["date"] and r["fp32_tflops"] > 0
        assert r["bf16_tflops"] is None or r["bf16_tflops"] >= r["fp32_tflops"]


def test_profiles_named_and_validated():
    assert set(PROFILES) == {"quick", "standard", "full"}
    assert get_profile("standard").sustained.duration_s >= 60
    assert get_profile("full").gemm.exhaustive and not get_profile("standard").gemm.exhaustive
    with pytest.raises(ValueError, match="profile = 'weekly'"):
        get_profile("weekly")
    with pytest.raises(ValueError, match=r"GemmConfig.dtypes"):
        GemmConfig(dtypes=("int8",))
    with pytest.raises(ValueError, match=r"SustainedConfig.window_s"):
        SustainedConfig(duration_s=2, window_s=5)


def test_decode_reasons():
    assert nvml.decode_reasons(0) == []
    assert nvml.decode_reasons(0x4) == ["sw_power_cap"]
    assert nvml.decode_reasons(0x4 | 0x40 | 0x1) == ["gpu_idle", "hw_thermal_slowdown", "sw_power_cap"]
    assert nvml.decode_reasons(1 << 40) == ["bit_0x10000000000"]


def test_throttled_flag_from_conditions():
    capped = {"sm_clock_mhz_min": 1500.0, "sm_clock_mhz_median": 1575.0, "power_w_median": 690.0,
              "power_w_max": 700.0, "temp_c_max": 61.0, "throttle_reasons": ["sw_power_cap"]}
    m = measurement("gemm", "1", "bf16_tflops", 620.0, "TFLOP/s", conditions=capped)
    assert "throttled" in m["flags"]
    boost = dict(capped, throttle_reasons=["sync_boost", "applications_clocks_setting"])
    assert nvml.throttled(boost) is False and nvml.throttled(None) is False
    assert measurement("gemm", "1", "x", 1.0, "u", conditions=None)["flags"] == []


def test_sampler_without_nvml_has_null_conditions(monkeypatch):
    monkeypatch.setattr(nvml, "_state", {"tried": True, "ok": False, "mod": None})
    assert nvml.available() is False
    with nvml.Sampler(t0=time.time(), hz=50) as s:
        s.set_phase("gemm")
        with s.window() as w:
            time.sleep(0.05)
    assert w.conditions() is None and w.energy_j() is None and w.throttled() is None
    assert w.duration_s > 0
    assert all(v == [] for v in s.columns().values())


class FakeNvml:
    """Stands in for pynvml: two GPUs, power-capped, energy counter rising 700 J per call."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 2, 0

    def __init__(self):
        self.energy = 0

    class _Util:
        gpu, memory = 99, 40

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUtilizationRates(self, h):
        return self._Util()

    def nvmlDeviceGetPowerUsage(self, h):
        return 690_000 + h * 1000

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 1575 if h == 0 else 1980

    def nvmlDeviceGetTemperature(self, h, kind):
        return 61

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return 1980

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4 if h == 0 else 0x1

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        self.energy += 700_000
        return self.energy


def test_sampler_with_fake_nvml_conditions_energy_columns(monkeypatch):
    monkeypatch.setattr(nvml, "_state", {"tried": True, "ok": True, "mod": FakeNvml()})
    with nvml.Sampler(t0=time.time() - 1.0, hz=100) as s:
        s.set_phase("gemm:bf16")
        with s.window(gpus=[0]) as w0:
            time.sleep(0.05)
        with s.window() as wall:
            time.sleep(0.02)
    c0 = w0.conditions()
    assert c0["sm_clock_mhz_median"] == 1575 and c0["power_w_max"] == 690.0
    assert c0["throttle_reasons"] == ["sw_power_cap"] and nvml.throttled(c0)
    assert wall.conditions()["sm_clock_mhz_min"] == 1575 and "gpu_idle" not in wall.conditions()["throttle_reasons"]
    assert w0.throttled() is True  # sw_power_cap in every gpu0 sample, 1575 of 1980 MHz
    with nvml.Sampler(t0=time.time(), hz=100) as s1:
        with s1.window(gpus=[1]) as w1:
            time.sleep(0.03)
    assert w1.throttled() is False and w1.conditions()["throttle_reasons"] == []
    fake = nvml._state["mod"]
    monkeypatch.setattr(type(fake), "nvmlDeviceGetCurrentClocksEventReasons", lambda self, h: 0x4)
    with nvml.Sampler(t0=time.time(), hz=100) as s2:
        with s2.window(gpus=[1]) as w2:  # power-cap reason, yet the clock holds 1980 MHz
            time.sleep(0.03)
    assert w2.conditions()["throttle_reasons"] == ["sw_power_cap"] and w2.throttled() is False
    m = measurement("gemm", "2", "bf16_tflops", 800.0, "TFLOP/s", window=w0)
    assert m["flags"] == ["throttled"] and m["conditions"]["sm_clock_mhz_min"] == 1575
    assert w0.energy_j() == pytest.approx(1400.0)  # (3rd - 1st read) on gpu0: 2 x 700 J
    cols = s.columns()
    n = len(cols["t"])
    assert n >= 4 and all(len(v) == n for v in cols.values())
    assert set(cols["gpu"]) == {0, 1} and "gemm:bf16" in cols["phase"] and min(cols["t"]) >= 1.0


def test_run_task_records_every_try():
    attempts: list[dict] = []
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2 GiB")
        return [1]

    assert run_task("gemm:bf16", flaky, attempts, retries=1) == [1]
    assert [(a["state"], a["error_kind"]) for a in attempts] == [("failed", "oom"), ("completed", None)]
    assert classify(RuntimeError("CUDA error: an illegal memory access")) == "cuda_error"
    assert classify(TimeoutError("x")) == "timeout" and classify(ValueError("x")) == "other"
