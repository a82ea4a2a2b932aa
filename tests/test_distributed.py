"""Multi-GPU probe on CPU: real gloo ranks launched by run_multi_gpu, results validated as bundles.

    .venv/bin/pytest -q tests/test_distributed.py
"""

from __future__ import annotations

import dataclasses
import os
import time

import pytest
import torch

from tasks.bundle import Environment, parse_bundle
from tasks.canonical import canonical_json
from tasks.probe.distributed import multi_gpu
from tasks.probe.distributed.bandwidth import busbw_gbps
from tasks.probe.distributed.multi_gpu import CPU_CI, MultiGpuConfig, run_multi_gpu
from tasks.probe.host import interconnect
from tasks.probe.profiles import get_profile
from tests.factories import bundle_doc

ALLREDUCE_ONLY = dataclasses.replace(CPU_CI, presets=())  # failure tests: no model, fast ranks


def as_bundle(measurements, finetunes, attempts, extra=None):
    """Seal the probe's records into a bundle and validate it exactly as the warehouse will."""
    env = {"hostname": "ci", "gpu_count": 0, "source": "none", "extra": extra or {}}
    doc = bundle_doc(measurements=measurements, finetune=finetunes, attempts=attempts, environment=env)
    return parse_bundle(canonical_json(doc))


def assert_reaped(pids):
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize("n, factor", [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75)])
def test_busbw_is_nccl_tests_ring_factor(n, factor):  # A's formula, which the sweep uses
    assert busbw_gbps(100.0, n) == pytest.approx(100.0 * factor)


@pytest.mark.parametrize("field, value", [
    ("allreduce_sizes_bytes", ()), ("allreduce_dtype", "int8"), ("allreduce_repeats", 0),
    ("finetune_warmup_steps", -1), ("collective_timeout_s", 0), ("strategy", "zero3"),
    ("micro_batch", 0), ("inject_failure", "1:explode"), ("inject_failure", "one:crash"),
])
def test_config_names_the_bad_field(field, value):
    with pytest.raises(ValueError, match=f"MultiGpuConfig.{field} = "):
        MultiGpuConfig(**{field: value})


def test_config_follows_the_probe_profile():
    cfg = multi_gpu.config_from("standard")
    prof = get_profile("standard")
    assert cfg.allreduce_sizes_bytes == tuple(m << 20 for m in prof.collectives.sizes_mib)
    assert cfg.presets == prof.finetune_presets and "1b" in cfg.presets  # standard: 1b + 8b-lora
    assert multi_gpu.config_from(CPU_CI) is CPU_CI


@pytest.mark.parametrize("gpu, link, peak", [
    ("NVIDIA H200", "nvlink", 450.0), ("NVIDIA A100-SXM4-80GB", "nvlink", 300.0),
    ("NVIDIA H200", "pcie", None), ("NVIDIA A10", "nvlink", None), ("Mystery GPU", "nvlink", None),
])
def test_busbw_peak_is_one_direction_of_nvlink(gpu, link, peak):
    value, source = multi_gpu.busbw_peak(gpu, link)
    assert value == peak and (source is None) == (peak is None)
    if peak:
        assert "gpu_specs.json" in source and "one direction" in source


def test_fewer_than_two_gpus_is_not_applicable_and_launches_nothing(monkeypatch):
    def no_launch(*a, **k):
        raise AssertionError("nothing may be launched without 2 GPUs")

    monkeypatch.setattr(multi_gpu, "launch", no_launch)
    for gpus in (0, 1):
        monkeypatch.setattr(torch.cuda, "is_available", lambda g=gpus: g > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda g=gpus: g)
        t = time.monotonic()
        m, f, a = run_multi_gpu("standard", timeout_s=60)
        assert time.monotonic() - t < 1.0
        assert (m, f) == ([], [])
        assert [(x["task"], x["state"]) for x in a] == [("allreduce", "not_applicable")]
        assert f"this host has {gpus}" in a[0]["message"]
        as_bundle(m, f, a)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert run_multi_gpu("quick", nprocs=1, timeout_s=60)[2][0]["state"] == "not_applicable"  # no GPU


@pytest.mark.slow  # launches gloo rank processes
def test_one_gpu_with_nprocs_1_runs_the_baseline_alone(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(multi_gpu, "launch", lambda kind, cfg, **kw: calls.append((kind, kw["world"],
                        kw["backend"])) or {"ok": False, "error_kind": "crash", "message": "x", "pids": []})
    _, f, a = run_multi_gpu(dataclasses.replace(CPU_CI, presets=("tiny",)), nprocs=1, timeout_s=60)
    assert calls == [("finetune", 1, "nccl")]  # no all-reduce launch, one n=1 fine-tune
    assert [(x["task"], x["state"]) for x in a] == [("allreduce", "not_applicable"),
                                                    ("finetune_ddp:tiny:n1", "failed")]
    (rec,) = f
    assert (rec["status"], rec["n_gpus"], rec["device"], rec["message"]) == ("failed", 1, "cuda", "x")
    as_bundle([], f, a)


def test_nccl_beyond_visible_gpus_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ValueError, match="nprocs = 4"):
        run_multi_gpu(CPU_CI, backend="nccl", nprocs=4, timeout_s=10)


@pytest.fixture(scope="module")
def gloo_run():
    """One real run: all-reduce sweep on 2 ranks, the tiny preset at n=1 and n=2 (DDP)."""
    old = os.environ.get("NCCL_NVLS_ENABLE")
    os.environ["NCCL_NVLS_ENABLE"] = "1"  # the launcher must override an inherited value
    try:
        return run_multi_gpu(CPU_CI, backend="gloo", nprocs=2, timeout_s=180)
    finally:
        os.environ.pop("NCCL_NVLS_ENABLE") if old is None else os.environ.update(NCCL_NVLS_ENABLE=old)


@pytest.mark.slow  # launches gloo rank processes
def test_gloo_sweep_gives_algbw_and_busbw_per_size(gloo_run):
    measurements, _, attempts = gloo_run
    assert attempts[0]["task"] == "allreduce" and attempts[0]["state"] == "completed"
    by = {(m["params"]["bytes"], m["metric"]): m for m in measurements}
    assert sorted({b for b, _ in by}) == list(CPU_CI.allreduce_sizes_bytes)
    for size in CPU_CI.allreduce_sizes_bytes:
        alg, bus = by[(size, "algbw_gbps")], by[(size, "busbw_gbps")]
        assert alg["value"] > 0 and alg["unit"] == "GB/s" and alg["repeats"] == CPU_CI.allreduce_repeats
        assert bus["value"] == pytest.approx(alg["value"] * 2 * (2 - 1) / 2)
        assert bus["params"]["n_gpus"] == 2 and bus["params"]["backend"] == "gloo"
        assert bus["params"]["nccl_nvls_enable"] == "0"  # what each rank saw, despite the parent's "1"
        assert "cpu_gloo" in bus["flags"]


@pytest.mark.slow  # launches gloo rank processes
def test_gloo_ddp_scaling_efficiency(gloo_run):
    _, finetunes, attempts = gloo_run
    one, two = sorted(finetunes, key=lambda f: f["n_gpus"])
    assert (one["n_gpus"], two["n_gpus"]) == (1, 2) and one["preset"] == two["preset"] == "tiny"
    assert one["status"] == two["status"] == "ok"
    assert two["scaling_efficiency"] == pytest.approx(two["tokens_per_s"] / (2 * one["tokens_per_s"]))
    assert one["scaling_efficiency"] == 1.0
    for f in (one, two):
        assert f["steps_timed"] == len(f["step_time_s"]) == CPU_CI.finetune_timed_steps
        assert f["tokens_per_s"] == pytest.approx(
            f["n_gpus"] * f["micro_batch"] * f["seq_len"] / f["step_time_median_s"])
        assert f["loss_last"] < f["loss_first"]  # the model really trains
        assert f["flops_per_token"] > 6 * f["params_non_embedding"] and f["mfu"] is None  # no CPU peak
    assert [a["state"] for a in attempts[1:]] == ["completed", "completed"]


@pytest.mark.slow  # launches gloo rank processes
def test_gloo_run_is_a_valid_bundle(gloo_run):
    bundle = as_bundle(*gloo_run, extra=interconnect.fingerprint())
    assert {f.n_gpus for f in bundle.finetune} == {1, 2}
    assert any(m.metric == "busbw_gbps" for m in bundle.measurements)


@pytest.mark.slow  # launches gloo rank processes
def test_crashing_rank_is_a_failed_attempt_not_a_hang():
    cfg = dataclasses.replace(ALLREDUCE_ONLY, inject_failure="1:crash")
    t = time.monotonic()
    m, f, a = run_multi_gpu(cfg, backend="gloo", nprocs=2, timeout_s=60)
    assert time.monotonic() - t < 30
    assert m == [] and f == []
    (att,) = a
    assert (att["state"], att["error_kind"]) == ("failed", "crash")
    assert "rank 1 failed first" in att["message"] and "exited with code 13" in att["message"]
    as_bundle(m, f, a)


@pytest.mark.slow  # launches gloo rank processes
def test_hung_rank_hits_the_collective_timeout_and_is_killed(monkeypatch):
    cfg = dataclasses.replace(ALLREDUCE_ONLY, inject_failure="1:hang", collective_timeout_s=2.0,
                              grace_s=1.0)
    pids = []
    real = multi_gpu.launch
    monkeypatch.setattr(multi_gpu, "launch", lambda *a, **k: pids.extend((r := real(*a, **k))["pids"]) or r)
    m, _, a = run_multi_gpu(cfg, backend="gloo", nprocs=2, timeout_s=60)
    assert m == [] and (a[0]["state"], a[0]["error_kind"]) == ("failed", "timeout")
    assert "rank 0 failed first; rank 0: timeout" in a[0]["message"]
    assert "rank 1: killed by the launcher (1 s grace)" in a[0]["message"]
    assert_reaped(pids)


@pytest.mark.slow  # launches gloo rank processes
def test_launch_deadline_kills_every_rank():
    cfg = dataclasses.replace(ALLREDUCE_ONLY, inject_failure="1:hang", collective_timeout_s=120.0)
    t = time.monotonic()
    out = multi_gpu.launch("allreduce", cfg, backend="gloo", world=2, deadline_s=4.0)
    assert time.monotonic() - t < 15
    assert out["ok"] is False and out["error_kind"] == "timeout"
    assert "exceeded its 4 s deadline" in out["message"] and out["message"].count("killed") == 2
    assert_reaped(out["pids"])


@pytest.mark.slow  # launches gloo rank processes
def test_an_interrupted_launch_leaves_no_rank_behind(monkeypatch):
    from tasks.probe.distributed import launch as dl

    killed, real_kill = [], dl._kill

    def interrupt(_s):
        raise KeyboardInterrupt  # e.g. Ctrl-C or a Prefect cancellation while ranks run

    monkeypatch.setattr(dl, "_kill", lambda p: (killed.append(p.pid), real_kill(p)))
    monkeypatch.setattr(dl, "_pause", interrupt)
    with pytest.raises(KeyboardInterrupt):
        dl.launch("allreduce", ALLREDUCE_ONLY, backend="gloo", world=2, deadline_s=30)
    assert len(killed) == 2
    assert_reaped(killed)


def test_oom_ladder_halves_the_micro_batch(monkeypatch):
    """The parent's ladder (the worker's OOM classification is tested below): fake launches."""
    seen = []

    def fake_launch(kind, cfg, *, world, micro_batch, **kw):
        seen.append((world, micro_batch))
        if micro_batch > 2:
            return {"ok": False, "error_kind": "oom", "message": f"OOM at micro-batch {micro_batch}"}
        res = {"preset": "tiny", "strategy": "ddp", "n_gpus": world, "device": "cpu",
               "step_time_s": [0.5] * 3, "build_s": 0.1, "seq_len": 64, "micro_batch": micro_batch,
               "tokens_per_s": world * micro_batch * 64 / 0.5 * (0.9 if world > 1 else 1),
               "loss_first": 6.0, "loss_last": 5.0}
        return {"ok": True, "result": res, "pids": []}

    monkeypatch.setattr(multi_gpu, "launch", fake_launch)
    cfg = dataclasses.replace(CPU_CI, micro_batch=8, allreduce=False)
    m, f, a = run_multi_gpu(cfg, backend="gloo", nprocs=2, timeout_s=60)
    assert seen == [(1, 8), (1, 4), (1, 2), (2, 2)]  # n=2 starts at the size that fit at n=1
    assert [(x["task"], x["attempt"], x["state"]) for x in a] == [
        ("finetune_ddp:tiny:n1", 1, "failed"), ("finetune_ddp:tiny:n1", 2, "failed"),
        ("finetune_ddp:tiny:n1", 3, "completed"), ("finetune_ddp:tiny:n2", 1, "completed")]
    assert [x["error_kind"] for x in a[:2]] == ["oom", "oom"]
    assert f[1]["scaling_efficiency"] == pytest.approx(0.9)
    as_bundle(m, f, a)


def test_nothing_fits_is_not_applicable(monkeypatch):
    monkeypatch.setattr(multi_gpu, "launch", lambda *a, **k: {"ok": False, "error_kind": "oom",
                                                                 "message": "OOM", "pids": []})
    cfg = dataclasses.replace(CPU_CI, micro_batch=2, allreduce=False, baseline=False)
    m, f, a = run_multi_gpu(cfg, backend="gloo", nprocs=2, timeout_s=60)
    assert [(x["attempt"], x["state"], x["error_kind"]) for x in a] == [
        (1, "not_applicable", "oom"), (2, "not_applicable", "oom")]
    assert f[0]["status"] == "not_applicable"
    as_bundle(m, f, a)


def test_spent_budget_and_qlora_are_not_failures(monkeypatch):
    calls = []

    def slow_launch(kind, cfg, **kw):  # the first launch eats the whole budget
        calls.append(kind)
        time.sleep(1.5)
        return {"ok": False, "error_kind": "crash", "message": "x", "pids": []}

    monkeypatch.setattr(multi_gpu, "launch", slow_launch)
    monkeypatch.setattr(multi_gpu, "MIN_LAUNCH_S", 1.0)
    cfg = dataclasses.replace(CPU_CI, presets=("8b-qlora", "tiny"))
    m, f, a = run_multi_gpu(cfg, backend="gloo", nprocs=2, timeout_s=2.0)
    assert calls == ["allreduce"]
    assert [(x["task"], x["state"]) for x in a] == [
        ("allreduce", "failed"), ("finetune_ddp:8b-qlora", "not_applicable"),
        ("finetune_ddp:tiny:n1", "skipped"), ("finetune_ddp:tiny:n2", "skipped")]
    assert [x["status"] for x in f] == ["skipped", "skipped"]
    as_bundle(m, f, a)


@pytest.mark.parametrize("exc, kind", [
    (torch.OutOfMemoryError("CUDA out of memory"), "oom"),
    (RuntimeError("Timed out waiting 2000ms for recv operation"), "timeout"),
    (RuntimeError("NCCL error in: ProcessGroupNCCL.cpp, unhandled cuda error"), "cuda_error"),
    (RuntimeError("Connection closed by peer"), "crash"),
])
def test_worker_classifies_rank_failures(exc, kind):
    from tasks.probe.distributed.worker import classify

    assert classify(exc) == kind


@pytest.mark.slow  # launches gloo rank processes
def test_a_rank_killed_without_report_is_classified_from_its_log():
    """NCCL's watchdog aborts a rank on a collective timeout: no report, only its log says why."""
    from tasks.probe.distributed.launch import classify_text

    log = "[rank1]:[E ProcessGroupNCCL.cpp:632] Watchdog caught collective operation timeout: ..."
    assert classify_text(log) == "timeout"
    assert classify_text("Fatal Python error: Segmentation fault") == "crash"


@pytest.mark.slow  # launches gloo rank processes
def test_fsdp2_shards_the_tiny_preset_on_gloo():
    cfg = dataclasses.replace(CPU_CI, strategy="fsdp2", baseline=False, allreduce=False,
                              finetune_timed_steps=2)
    _, f, a = run_multi_gpu(cfg, backend="gloo", nprocs=2, timeout_s=90)
    assert [x["state"] for x in a] == ["completed"], a
    (rec,) = f
    assert rec["n_gpus"] == 2 and "fsdp2" in rec["message"] and rec["loss_last"] < rec["loss_first"]
    assert rec["scaling_efficiency"] is None  # no n=1 baseline was run: nothing to divide by


def test_unknown_preset_fails_before_any_launch():
    with pytest.raises(ValueError, match="unknown fine-tune preset 'nope'"):
        run_multi_gpu(dataclasses.replace(CPU_CI, presets=("nope",)), backend="gloo", timeout_s=10)


def test_interconnect_fingerprint_without_gpus_is_valid_extra():
    fp = interconnect.fingerprint()
    assert fp == {"interconnect": "none", "interconnect_gpu_count": 0}
    Environment(extra=fp)


TOPO = ("\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \tNV18\tSYS\t0-47\t0\t\tN/A\nGPU1\tNV18\t X \tSYS\t0-47\t0\t\tN/A\n"
        "NIC0\tSYS\tSYS\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n")


@pytest.mark.parametrize("text, kind", [
    (TOPO, "nvlink"), (TOPO.replace("NV18", "PHB"), "pcie"),
    (TOPO.replace("\t X \tNV18", "\t X \tSYS", 1), "mixed"), ("", "unknown"),
])
def test_topology_parse(text, kind):
    rows, links = interconnect.parse_topo(text)
    assert interconnect.kind_of(links) == kind
    if text:
        assert rows[0].startswith("GPU0 X") and len(rows) == 2
        Environment(extra={"topology_matrix": rows})


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs >= 2 CUDA GPUs")
def test_nccl_two_gpus_end_to_end():
    cfg = dataclasses.replace(CPU_CI, allreduce_sizes_bytes=(1 << 20, 1 << 26))
    m, f, a = run_multi_gpu(cfg, timeout_s=300)
    assert all(x["state"] == "completed" for x in a), a
    assert {x["params"]["backend"] for x in m} == {"nccl"}
    as_bundle(m, f, a, extra=interconnect.fingerprint())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_nccl_single_gpu_baseline():
    """On one GPU: the n=1 baseline through the NCCL launcher, collectives skipped."""
    m, f, a = run_multi_gpu(CPU_CI, nprocs=1, timeout_s=300)
    assert m == [] and a[0]["state"] == "not_applicable" and a[1]["state"] == "completed", a
    assert f[0]["n_gpus"] == 1 and f[0]["device"] == "cuda" and f[0]["peak_mem_allocated_gib"] > 0
    as_bundle(m, f, a, extra=interconnect.fingerprint())
