"""The estimator's physics and its calibration on measured runs (issue 25). Numbers in, numbers out.

    .venv/bin/python -m tests.bench estimate        # leave-one-out and held-out scores, printed

A step's time per token on a GPU is a compute-bound part and a bandwidth-bound part:
    t = F' / (peak[d] * eta_c[d])  +  B / (bandwidth * eta_b)
F' is the preset's training FLOPs per token (plus the recomputed forward under activation
checkpointing), peak[d] the datasheet dense peak at precision d, eta_c the GEMM burst's achieved over
peak, B the bytes per token a step moves (activations written, read back and their gradients; the
optimizer's state per step and the weights read per micro-batch, both spread over the step's tokens),
eta_b the memory copy's achieved over datasheet. What a step loses beyond both (kernel launches,
unfused element-wise work, the framework) is one factor kappa = X_measured * t, per preset, calibrated
on the measured runs: X = kappa / t. Every input of a preset comes from its measured runs
(estimate_workloads.sql): MFU and tokens/s give FLOPs per token, the peak memory the allocator held
and the parameter counts give the state and the activations per token.

The GPU's datasheet figures are tasks/probe/host/gpu_specs.json, read through `gpu_catalog()` only.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import duckdb
import numpy as np

from tasks.probe.finetune import memory
from warehouse import sql

GIB = 1024 ** 3
_SPECS = Path(__file__).resolve().parents[1] / "probe" / "host" / "gpu_specs.json"  # the probe's datasheet table


@lru_cache(maxsize=1)
def gpu_catalog() -> tuple[dict, ...]:
    """The datasheet rows of tasks/probe/gpu_specs.json (source and date on each); the one place that reads it."""
    return tuple(json.loads(_SPECS.read_text(encoding="utf-8"))["gpus"])


# Bytes of resident training state: the one memory model (tasks/probe/finetune/memory.py), shared with the
# probe's plan and the tiers. ADAPTER_BYTES: what a LoRA adapter parameter holds (an upper bound).
ADAPTER_BYTES = memory.ADAPTER_BYTES_PER_PARAM
ACT_PASSES = 3.0  # ASSUMED: each saved activation byte is written (forward), read (backward), and its gradient moved once
WEIGHT_READS = 3.0  # ASSUMED: weights read per micro-batch: forward, input gradients, weight gradients
CKPT_KEEP = 0.4  # ASSUMED: checkpointing keeps <= 40% of a step's activations (the probe's memory model
#                  says 0.24-0.37 for the presets; tests/test_estimate.py checks this bound against it)
RECOMPUTE = {"full": 1 / 3, "lora": 1 / 2, "qlora": 1 / 2}  # checkpointing re-runs the forward: 2N of 6N, of 4N


@dataclass(frozen=True)
class Sheet:
    """One GPU's datasheet row."""

    key: str
    peaks: dict  # {"bf16": TFLOP/s or None, "fp16": ..., "tf32": ..., "fp32": ...}
    memory_gib: float
    bandwidth_gbps: float
    source: str
    date: str


def match_gpu(name: str | None) -> Sheet | None:
    """The first gpu_specs.json row whose pattern matches `name` (case-insensitive), else None."""
    for row in gpu_catalog() if name else ():
        if any(re.search(p, name, flags=re.IGNORECASE) for p in row["match"]):
            return Sheet(row["key"], {d: row.get(f"{d}_tflops") for d in ("bf16", "fp16", "tf32", "fp32")},
                         float(row["memory_gib"]), float(row["bandwidth_gbps"]), row["source"], row["date"])
    return None


@dataclass(frozen=True)
class Workload:
    """One preset as measured on one GPU (estimate_workloads.sql)."""

    preset: str
    gpu_name: str
    target: str
    mode: str
    precision: str
    seq_len: int
    micro_batch: int
    flops_per_token: float
    params_total: float
    params_trainable: float
    params_non_embedding: float
    peak_mem_gib: float
    tokens_per_s: float
    samples: tuple = ()
    runs: int = 1
    compile: bool = False
    last_run_at: object = None
    checkpointing: bool = False  # the measured run's activation checkpointing (its search's choice)

    def state_bytes(self, precision: str) -> float:
        """Resident weights, gradients and optimizer state (the one memory model; QLoRA quantizes the
        non-embedding frozen weights)."""
        return memory.state_bytes(self.mode, precision, params_total=self.params_total,
                                  params_trainable=0.0 if self.mode == "full" else self.params_trainable,
                                  params_quantized=self.params_non_embedding)

    @property
    def act_bytes_per_token(self) -> float:
        """Activations per token at the measured micro-batch: the measured peak less the state."""
        left = self.peak_mem_gib * GIB - self.state_bytes(self.precision)
        keep = CKPT_KEEP if self.checkpointing else 1.0  # a checkpointed run held only this share
        return max(left, 0.0) / (self.micro_batch * self.seq_len) / keep

    def weight_bytes(self, precision: str) -> float:
        """The weights a micro-batch reads: bf16 (fp32 masters under fp16 autocast), or the frozen base."""
        if self.mode == "full":
            return self.params_total * (2.0 if precision == "bf16" else 4.0)
        return self.state_bytes(precision) - self.params_trainable * ADAPTER_BYTES


def workloads(con: duckdb.DuckDBPyConnection) -> list[Workload]:
    """Every (preset, GPU, target) with measured runs whose GPU has a datasheet peak at the run's precision."""
    out = []
    for r in sql.rows(con, "estimate_workloads"):
        sheet = match_gpu(r["gpu_name"])
        peak = sheet.peaks.get(r["precision"]) if sheet else None
        if not peak or not r["peak_mem_gib"] or not r["micro_batch"]:
            continue
        out.append(Workload(
            r["preset"], r["gpu_name"], r["target"], r["mode"], r["precision"], int(r["seq_len"]), int(r["micro_batch"]),
            r["mfu_last"] * peak * 1e12 / r["tokens_per_s_last"], float(r["params_total"]),
            float(r["params_trainable"]), float(r["params_non_embedding"]), float(r["peak_mem_gib"]),
            float(r["tokens_per_s"]), tuple(r["samples"]), int(r["runs"]), bool(r["compile"]), r["last_run_at"],
            bool(r.get("activation_checkpointing"))))
    return out


def efficiencies(con: duckdb.DuckDBPyConnection, leave_out: str | frozenset | set | None = None) -> dict[str, float]:
    """Achieved over peak on the measured targets (median over them, but the target or targets `leave_out`):
    gemm bf16/fp16, copy."""
    skip = {leave_out} if isinstance(leave_out, str) else set(leave_out or ())
    got: dict[str, list[float]] = {}
    for r in sql.rows(con, "estimate_efficiency"):
        if r["target"] in skip:
            continue
        got.setdefault({"bf16_tflops": "bf16", "fp16_tflops": "fp16", "copy_gbps": "copy"}[r["metric"]], []).append(
            r["efficiency"])
    return {k: float(np.median(v)) for k, v in got.items()}


@dataclass(frozen=True)
class Step:
    """Time per token on one GPU and how the step was shaped."""

    compute_s: float
    bandwidth_s: float
    flops: float
    bytes: float

    @property
    def seconds(self) -> float:
        return self.compute_s + self.bandwidth_s


def step_time(w: Workload, sheet: Sheet, precision: str, micro_batch: int, ckpt: bool, eff: dict) -> Step:
    """The compute-bound and bandwidth-bound seconds per token of `w` on `sheet`."""
    flops = w.flops_per_token * (1 + RECOMPUTE[w.mode] if ckpt else 1.0)
    tokens = micro_batch * w.seq_len
    act = w.act_bytes_per_token * ACT_PASSES * (1 + RECOMPUTE[w.mode] if ckpt else 1.0)
    optimizer = 2 * w.state_bytes(precision) if w.mode == "full" else 2 * w.params_trainable * ADAPTER_BYTES
    moved = act + (optimizer + WEIGHT_READS * w.weight_bytes(precision)) / tokens
    eta_c = eff.get(precision) or eff.get("bf16") or eff.get("fp16")
    return Step(flops / (sheet.peaks[precision] * 1e12 * eta_c), moved / (sheet.bandwidth_gbps * 1e9 * eff["copy"]),
                flops, moved)


@dataclass
class Calibration:
    """kappa per preset (measured), the leave-one-out error across presets and the 90% half-width in log."""

    eff: dict
    kappa: dict  # preset -> kappa on its measured GPU
    reference: dict  # preset -> Workload it was calibrated on
    loo: list = field(default_factory=list)  # one row per preset: predicted from the others
    log_halfwidth: float = math.inf  # 90% interval = estimate * exp(+-log_halfwidth)
    n: int = 0

    def kappa_for(self, preset: str) -> tuple[float, bool]:
        """(kappa, own): the preset's own when measured, else the median over the measured presets."""
        if preset in self.kappa:
            return self.kappa[preset], True
        return float(np.median(list(self.kappa.values()))), False


def _kappa(w: Workload, eff: dict) -> float:
    sheet = match_gpu(w.gpu_name)
    return w.tokens_per_s * step_time(w, sheet, w.precision, w.micro_batch, w.checkpointing, eff).seconds


def calibrate(ws: list[Workload], eff: dict) -> Calibration | None:
    """kappa per preset from its measured (GPU, target) with the most runs, and the leave-one-preset-out score."""
    from scipy.stats import t as student_t

    if "copy" not in eff or not ({"bf16", "fp16"} & set(eff)):
        return None
    ref: dict[str, Workload] = {}
    for w in ws:
        if w.preset not in ref or w.runs > ref[w.preset].runs:
            ref[w.preset] = w
    if not ref:
        return None
    kappa = {p: _kappa(w, eff) for p, w in ref.items()}
    cal = Calibration(eff, kappa, ref, n=len(kappa))
    errs = []
    for p, w in sorted(ref.items()):
        others = [k for q, k in kappa.items() if q != p]
        if not others:
            continue
        pred = float(np.median(others)) / step_time(w, match_gpu(w.gpu_name), w.precision, w.micro_batch, False,
                                                     eff).seconds
        errs.append(math.log(w.tokens_per_s / pred))
        cal.loo.append({"preset": p, "gpu": w.gpu_name, "predicted_tokens_per_s": pred,
                        "measured_tokens_per_s": w.tokens_per_s, "samples": list(w.samples),
                        "error": pred / w.tokens_per_s - 1.0})
    if len(errs) >= 2:
        rms = math.sqrt(sum(e * e for e in errs) / len(errs))
        cal.log_halfwidth = float(student_t.ppf(0.95, len(errs) - 1)) * rms * math.sqrt(1 + 1 / len(errs))
    for row in cal.loo:
        lo, hi = row["predicted_tokens_per_s"] * math.exp(-cal.log_halfwidth), \
            row["predicted_tokens_per_s"] * math.exp(cal.log_halfwidth)
        row.update(lo=lo, hi=hi, inside=sum(lo <= s <= hi for s in row["samples"]), runs=len(row["samples"]))
    return cal
