"""Multi-GPU probe: NCCL all-reduce sweep and data-parallel fine-tune scaling, one process per GPU.

    .venv/bin/python -c "from tasks.probe.distributed.multi_gpu import *; print(run_multi_gpu(CPU_CI, backend='gloo', timeout_s=120))"

The probe launches its ranks itself (the user never calls torchrun): this process hosts a TCPStore on
a free 127.0.0.1 port and starts `python -m tasks.probe.distributed.worker` once per rank with
NCCL_NVLS_ENABLE=0 forced into its environment. Each launch is one bundle attempt: a rank that
crashes, raises or hangs becomes state "failed" with error_kind crash/timeout/oom/cuda_error; after
the first failure the other ranks get `grace_s` to exit, then are killed, and the whole launch has a
wall deadline. Results come back as plain dicts that validate against tasks/bundle.py:
measurements (benchmark "allreduce": algbw_gbps and busbw_gbps per size) and Finetune records with
n_gpus and scaling_efficiency = tokens/s(n) / (n * tokens/s(1)). The n=1 baseline uses the same
worker with world size 1 (no gradient collectives). Imports: stdlib + torch only.

Entry point (collectives.py calls it on >= 2 GPUs):
    run_multi_gpu(profile_cfg, *, backend=None, nprocs=None, timeout_s) -> (measurements, finetunes, attempts)
Attempt tasks: "allreduce", "finetune_ddp:<preset>:n<N>" (kept apart from the fine-tune's "finetune:<preset>"
so a multi-GPU failure does not move the single-GPU rerun rate). Interconnect extras for
environment.extra: tasks.probe.host.interconnect.fingerprint().
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any

from tasks.probe.distributed.bandwidth import algbw_gbps, busbw_gbps  # algbw, algbw*2(n-1)/n (nccl-tests)
from tasks.probe.distributed.launch import FORCED_ENV, launch  # noqa: F401  (FORCED_ENV re-exported)
from tasks.probe.finetune.plan import missing_library
from tasks.probe.finetune.presets import get_preset
from tasks.probe.hardware.timing import iqr, median, percentile
from tasks.probe.record import attempt, iso_now, measurement

BENCHMARK_VERSION = "1"  # bump when the sweep's method changes (sizes do not: they are params)
STRATEGIES = ("ddp", "fsdp2", "auto")
MIN_LAUNCH_S = 5.0  # below this much budget a launch cannot even import torch: record it as skipped


@dataclass(frozen=True)
class MultiGpuConfig:
    allreduce: bool = True  # run the all-reduce sweep (off: the fine-tune scaling series only)
    allreduce_sizes_bytes: tuple[int, ...] = tuple(1 << s for s in range(20, 31, 2))  # 1 MiB..1 GiB
    allreduce_dtype: str = "float32"  # nccl-tests all_reduce_perf's default data type
    allreduce_warmup: int = 5  # untimed collectives per size: NCCL sets up channels, clocks ramp
    allreduce_repeats: int = 7  # timed batches per size: median and IQR over these
    allreduce_iters: int = 10  # collectives per batch, averaged: hides launch latency at 1 MiB
    presets: tuple[str, ...] = ("1b",)  # fine-tune presets run data-parallel (finetune/presets.py)
    finetune_warmup_steps: int = 3  # untimed steps: allocator, cuBLAS and DDP bucket setup
    finetune_timed_steps: int = 10  # timed steps; the median step time gives tokens/s
    micro_batch: int | None = None  # per GPU, same for n=1 and n; None: the preset's micro_batch_max
    seq_len: int | None = None  # None: the preset's (2048 for 1b); CI shortens it to stay fast
    strategy: str = "auto"  # ddp | fsdp2 | auto (fsdp2 when grads + Adam states would not fit)
    baseline: bool = True  # also run world size 1, for scaling efficiency; off saves one launch
    init_timeout_s: float = 120.0  # rendezvous + process-group init; a missing rank fails here
    collective_timeout_s: float = 300.0  # every collective (gloo timeout, NCCL watchdog)
    grace_s: float = 10.0  # after the first rank fails, how long the others get before SIGKILL
    inject_failure: str | None = None  # tests: "RANK:crash|raise|hang|oom[:init|allreduce|finetune]"

    def __post_init__(self):
        def bad(name: str, expected: str) -> ValueError:
            return ValueError(f"MultiGpuConfig.{name} = {getattr(self, name)!r}: expected {expected}")

        if not self.allreduce_sizes_bytes or min(self.allreduce_sizes_bytes) < 4:
            raise bad("allreduce_sizes_bytes", "a non-empty tuple of sizes >= 4 bytes")
        if self.allreduce_dtype not in ("float32", "bfloat16", "float16"):
            raise bad("allreduce_dtype", "float32, bfloat16 or float16")
        for name in ("allreduce_repeats", "allreduce_iters", "finetune_timed_steps"):
            if getattr(self, name) < 1:
                raise bad(name, "an integer >= 1")
        for name in ("micro_batch", "seq_len"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise bad(name, "None or an integer >= 1")
        for name in ("allreduce_warmup", "finetune_warmup_steps"):
            if getattr(self, name) < 0:
                raise bad(name, "an integer >= 0")
        for name in ("init_timeout_s", "collective_timeout_s", "grace_s"):
            if getattr(self, name) <= 0:
                raise bad(name, "a number of seconds > 0")
        if self.strategy not in STRATEGIES:
            raise bad("strategy", f"one of {STRATEGIES}")
        spec = (self.inject_failure or "").split(":")
        if self.inject_failure is not None and (not spec[0].isdigit() or spec[1:2] not in (
                ["crash"], ["raise"], ["hang"], ["oom"])):
            raise bad("inject_failure", "'RANK:crash|raise|hang|oom[:init|allreduce|finetune]'")


# CI on CPU: gloo, two ranks, tiny tensors, a few steps of the tiny preset.
CPU_CI = MultiGpuConfig(
    allreduce_sizes_bytes=(4096, 1 << 16), allreduce_warmup=1, allreduce_repeats=3, allreduce_iters=2,
    presets=("tiny",), finetune_warmup_steps=1, finetune_timed_steps=3, micro_batch=1, seq_len=64,
    init_timeout_s=30.0, collective_timeout_s=30.0, grace_s=3.0)


def config_from(profile_cfg: Any) -> MultiGpuConfig:
    """MultiGpuConfig from a Profile (collectives sizes/iters, finetune presets), a name or itself."""
    if isinstance(profile_cfg, MultiGpuConfig):
        return profile_cfg
    if isinstance(profile_cfg, str):
        from tasks.probe.profiles import get_profile

        profile_cfg = get_profile(profile_cfg)
    own = getattr(profile_cfg, "multi_gpu", None)
    if isinstance(own, MultiGpuConfig):
        return own
    cfg = MultiGpuConfig()
    coll = getattr(profile_cfg, "collectives", None)
    if coll is not None:
        cfg = replace(cfg, allreduce_sizes_bytes=tuple(int(m) << 20 for m in coll.sizes_mib),
                      allreduce_iters=int(coll.iters))  # per timed batch; repeats stay ours
    presets = getattr(profile_cfg, "finetune_presets", None)
    return replace(cfg, presets=tuple(presets)) if presets is not None else cfg


def _plan(backend: str | None, nprocs: int | None) -> tuple[str, int] | str:
    """(backend, world size), or the reason the multi-GPU probe does not apply here."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if backend is None:
        if gpus == 0 or (gpus < 2 and nprocs != 1):
            return f"the multi-GPU probe needs >= 2 visible GPUs; this host has {gpus}"
        backend = "nccl"
    if backend not in ("nccl", "gloo"):
        raise ValueError(f"backend = {backend!r}: expected 'nccl', 'gloo' or None (auto)")
    n = nprocs if nprocs is not None else (gpus if backend == "nccl" else 2)
    if n < 1 or (backend == "nccl" and n > gpus):
        raise ValueError(f"nprocs = {n!r}: expected 1..{gpus} for nccl (visible GPUs), >= 1 for gloo")
    return backend, n


def busbw_peak(gpu_name: str | None, interconnect: str) -> tuple[float | None, str | None]:
    """Ceiling of all-reduce busbw: one direction of the GPU's NVLink (the catalog's nvlink_gbps is
    both directions, e.g. H200 900 -> 450 GB/s). nccl-tests' busbw is per direction and comparable to
    it for any rank count. Only when every GPU pair is on NVLink; None otherwise (no PCIe guess)."""
    from tasks.probe.host.specs import lookup

    spec = lookup(gpu_name, warn=False)
    if interconnect != "nvlink" or not spec.nvlink_gbps:
        return None, None
    return spec.nvlink_gbps / 2, f"{spec.peak_source}: nvlink_gbps / 2 (one direction)"


def _allreduce_records(result: dict, backend: str, world: int, cfg: MultiGpuConfig,
                       link: tuple[str, float | None, str | None] = ("none", None, None)) -> list[dict]:
    """algbw and busbw per size; `link` = (interconnect kind, busbw peak, its source)."""
    out = []
    for row in result["sizes"]:
        size = row["bytes"]
        algbw = [algbw_gbps(size, s) for s in row["seconds"]]
        busbw = [busbw_gbps(a, world) for a in algbw]
        params = {"bytes": size, "size_mib": size / 2**20, "dtype": result["dtype"], "op": "sum",
                  "n_gpus": world, "backend": backend, "iters": cfg.allreduce_iters,
                  "nccl_nvls_enable": result["nccl_nvls_enable"], "interconnect": link[0]}
        flags = ["cpu_gloo"] if backend == "gloo" else []
        for metric, xs in (("algbw_gbps", algbw), ("busbw_gbps", busbw)):
            peak, source = link[1:] if metric == "busbw_gbps" else (None, None)
            out.append(measurement("allreduce", BENCHMARK_VERSION, metric, median(xs), "GB/s",
                                   params=params, repeats=len(xs), spread=iqr(xs),
                                   spread_kind="iqr", flags=flags, peak=peak, peak_source=source))
    return out


def _finetune_record(res: dict, cfg: MultiGpuConfig, backend: str, baseline_tps: float | None) -> dict:
    times, n = res["step_time_s"], res["n_gpus"]
    eff = None if baseline_tps is None else res["tokens_per_s"] / (n * baseline_tps)
    return {
        "preset": res["preset"], "model_source": res.get("model_source", "preset"), "status": "ok",
        "mode": res.get("mode", "full"), "precision": res.get("precision", "fp32"),
        "device": res["device"], "n_gpus": n, "params_total": res.get("params_total"),
        "params_trainable": res.get("params_trainable"), "seq_len": res["seq_len"],
        "micro_batch": res["micro_batch"], "steps_warmup": cfg.finetune_warmup_steps,
        "steps_timed": len(times), "tokens_per_s": res["tokens_per_s"], "step_time_s": times,
        "step_time_median_s": median(times), "step_time_p10_s": percentile(times, 10),
        "step_time_p90_s": percentile(times, 90), "build_s": res["build_s"],
        "peak_mem_allocated_gib": res.get("peak_mem_allocated_gib"),
        "peak_mem_reserved_gib": res.get("peak_mem_reserved_gib"),
        "loss_first": res["loss_first"], "loss_last": res["loss_last"],
        "flops_per_token": res.get("flops_per_token"), "peak_tflops": res.get("peak_tflops"),
        "mfu": res.get("mfu"), "params_non_embedding": res.get("params_non_embedding"),
        "scaling_efficiency": 1.0 if n == 1 else (eff if eff and eff > 0 else None),
        "message": (f"n=1 baseline of the scaling series ({backend}, no gradient collectives)" if n == 1
                    else f"data-parallel {res['strategy']} over {n} {backend} ranks"),
    }


def _failed_finetune(preset: str, n: int, backend: str, out: dict, cfg: MultiGpuConfig,
                     micro_batch: int) -> dict:
    """The record of a run that produced no figures: what was attempted (as the worker would have
    chosen it), the outcome and why; every measured field stays null."""
    p = get_preset(preset)
    status = "skipped" if out.get("skipped") else "not_applicable" if out["error_kind"] == "oom" else "failed"
    return {"preset": preset, "status": status, "mode": p.mode, "precision": _precision(backend),
            "micro_batch": micro_batch, "seq_len": min(cfg.seq_len or p.seq_len, p.seq_len),
            "device": "cuda" if backend == "nccl" else "cpu", "n_gpus": n, "message": out["message"][:4000]}


def _precision(backend: str) -> str:
    """The fine-tune's precision rule for this host's GPU 0 (the workers apply the same rule)."""
    import torch

    from tasks.probe.finetune.train import choose_precision

    if backend != "nccl":
        return choose_precision("cpu", None)[0]
    try:
        cap = torch.cuda.get_device_capability(0)
    except (RuntimeError, AssertionError):  # the GPU is gone (the failure may be why)
        cap = None
    return choose_precision("cuda", cap)[0]


def run_multi_gpu(profile_cfg: Any, *, backend: str | None = None, nprocs: int | None = None,
                  timeout_s: float) -> tuple[list[dict], list[dict], list[dict]]:
    """(measurements, finetunes, attempts) for the all-reduce sweep and data-parallel fine-tunes.

    backend None: NCCL over every visible GPU; with fewer than 2 GPUs (and nprocs not 1) the probe
    does not apply: ([], [], [one not_applicable "allreduce" attempt]), nothing is launched.
    backend "gloo": CPU ranks (2 unless nprocs says otherwise), for CI. nprocs=1: the n=1 baseline
    alone, collectives skipped. `timeout_s` bounds the whole call; each launch gets what is left.
    """
    cfg = config_from(profile_cfg)
    for preset in cfg.presets:
        get_preset(preset)  # an unknown name fails here, naming it, before anything is launched
    plan = _plan(backend, nprocs)
    if isinstance(plan, str):
        return [], [], [attempt("allreduce", 1, "not_applicable", 0.0, message=plan,
                                started_at=iso_now())]
    backend, world = plan
    if backend == "nccl":
        _release_parent_cuda()
    end = time.monotonic() + timeout_s
    threads = max(1, (os.cpu_count() or 1) // world)  # per rank; no oversubscription of the cores
    measurements, finetunes, attempts = [], [], []

    def run(task: str, kind: str, n: int, try_no: int = 1, **kw) -> dict:
        started, t = iso_now(), time.monotonic()
        left = end - t
        if left <= MIN_LAUNCH_S:  # the budget is spent: not tried, so not a failure of the host
            msg = f"not started: {max(0.0, left):.0f} s left of the {timeout_s:g} s multi-GPU budget"
            attempts.append(attempt(task, try_no, "skipped", 0.0, started_at=started, message=msg))
            return {"ok": False, "error_kind": None, "skipped": True, "message": msg}
        out = launch(kind, cfg, backend=backend, world=n, deadline_s=left, threads=threads, **kw)
        attempts.append(attempt(task, try_no, "completed" if out["ok"] else "failed",
                                time.monotonic() - t, started_at=started,
                                error_kind=None if out["ok"] else out["error_kind"],
                                message=None if out["ok"] else out["message"]))
        return out

    if world >= 2 and cfg.allreduce:
        out = run("allreduce", "allreduce", world)
        if out["ok"]:
            measurements += _allreduce_records(out["result"], backend, world, cfg, _link(backend))
    elif world == 1:
        attempts.append(attempt("allreduce", 1, "not_applicable", 0.0, started_at=iso_now(),
                                message="world size 1: no collective to measure (n=1 baseline only)"))
    for preset in cfg.presets:
        baseline_tps = None
        micro_batch = cfg.micro_batch or get_preset(preset).micro_batch_max
        why = missing_library(get_preset(preset)) or ("QLoRA presets are not run data-parallel by this "
              "probe (4-bit fine-tunes fit one GPU; that is what they are for)"
              if get_preset(preset).mode == "qlora" else None)  # QLoRA is rented on one GPU
        if why:
            attempts.append(attempt(f"finetune_ddp:{preset}", 1, "not_applicable", 0.0,
                                    started_at=iso_now(), message=why))
            continue
        for n in ([1] if cfg.baseline or world == 1 else []) + ([world] if world >= 2 else []):
            task, first = f"finetune_ddp:{preset}:n{n}", len(attempts)
            for try_no in range(1, 64):
                out = run(task, "finetune", n, try_no, preset=preset, strategy=cfg.strategy,
                          micro_batch=micro_batch)
                if out["ok"] or out.get("skipped") or out["error_kind"] != "oom" or micro_batch == 1:
                    break
                micro_batch //= 2  # OOM ladder (as the fine-tune's): halve, retry; n>1 starts here too
            if not out["ok"]:
                if out["error_kind"] == "oom":  # not even micro-batch 1 fits: too small, not unreliable
                    for a in attempts[first:]:
                        a["state"] = "not_applicable"
                finetunes.append(_failed_finetune(preset, n, backend, out, cfg, micro_batch))
                continue
            rec = _finetune_record(out["result"], cfg, backend, baseline_tps)
            baseline_tps = rec["tokens_per_s"] if n == 1 else baseline_tps
            finetunes.append(rec)
    return measurements, finetunes, attempts


def _link(backend: str) -> tuple[str, float | None, str | None]:
    """(interconnect kind, busbw peak, source) of this host; gloo on CPU has neither."""
    if backend != "nccl":
        return "none", None, None
    import torch

    from tasks.probe.host.interconnect import fingerprint

    try:
        kind = str(fingerprint().get("interconnect", "unknown"))
        return (kind, *busbw_peak(torch.cuda.get_device_name(0), kind))
    except Exception:  # a fingerprint problem must not cost the measured sweep; no peak then
        return "unknown", None, None

def _release_parent_cuda() -> None:
    """Hand this process's cached GPU memory back before the ranks start: rank 0 shares GPU 0 with
    whatever the probe ran here before (the single-GPU fine-tune leaves its cache allocated)."""
    import gc

    import torch

    if torch.cuda.is_initialized():
        gc.collect()
        torch.cuda.empty_cache()
