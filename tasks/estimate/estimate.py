"""Estimated tokens/s and cost per 1M tokens for instance types not yet measured (issue 25).

    costgap estimate --preset 1b --json
    costgap estimate --preset 8b-lora --gpu A10 --top 5

`predict` is pure: a measured preset (tasks.estimate.calibrate.Workload), a GPU's datasheet row and a
count give tokens/s with a 90% interval and one line per assumption, or "does not fit" / "no
estimate" with the reason, never a made-up number. It knows precision (no bf16: fp16 at its own
peak, fp32 master weights), memory fit (every configuration the memory model says fits the card, as
the probe searches them: without checkpointing at the largest micro-batch, with it at the largest it
allows, its recomputed forward charged; the fastest is reported, else "does not fit"), and the compute- and
bandwidth-bound parts of a step. `candidates` prices every catalog instance type whose GPU is known:
C and R through tasks.cost.model (never re-written here), R from the type's own fine-tune history when
it has one, else the fleet-wide failure rate of the preset. A type with measured runs of the preset
shows its measurement (tasks.cost.table), never the estimate. Estimates are only ever read by their
own surfaces: nothing here writes a measured table, a gap, an alert or gap_history.csv.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tasks.estimate import calibrate as cal_
from tasks.estimate import scaling as scaling_
from tasks.cost.derived import TierConfig
from tasks.cost.model import effective_cost, failure_rate, rerun_factor
from tasks.probe.finetune import memory

MODEL_VERSION = "3"  # 3: multi-GPU scaling predicted from the interconnect (issue 42); 2: the fastest configuration that fits, as the probe's search (issue 35); bump when the estimator's method changes: older track-record rows say which one made them
TIER = TierConfig()  # memory headroom: the cost domain's, once


@dataclass
class Prediction:
    """One (GPU, count, preset) estimate. tokens_per_s is None when there is no estimate (see `reason`)."""

    preset: str
    gpu: str | None
    gpu_count: int
    tokens_per_s: float | None = None
    lo: float | None = None
    hi: float | None = None
    precision: str | None = None
    micro_batch: int | None = None
    checkpointing: bool = False
    fit: str = "no estimate"  # as measured | smaller micro-batch | checkpointing | does not fit | no estimate
    compute_share: float | None = None  # of a step's modelled time: the rest is bandwidth-bound
    reason: str = ""
    assumptions: list[str] = field(default_factory=list)
    # past one GPU: the scaling efficiency (measured on this type, else predicted from its interconnect)
    scaling: float | None = None
    scaling_lo: float | None = None
    scaling_hi: float | None = None
    scaling_label: str | None = None  # "predicted from nvswitch, busbw 230 GB/s" | "measured on this type"
    fabric: str | None = None
    network: str | None = None
    busbw_gbps: float | None = None
    comm_share: float | None = None  # exposed communication's share of a step
    strategy: str | None = None  # ddp | fsdp


def _precision(w: cal_.Workload, sheet: cal_.Sheet) -> tuple[str | None, str | None]:
    if sheet.peaks.get(w.precision):
        return w.precision, None
    if w.precision == "bf16" and sheet.peaks.get("fp16"):
        return "fp16", (f"no bf16 on {sheet.key}: fp16 with loss scaling at its own peak ({sheet.peaks['fp16']:g} "
                        "TFLOP/s)" + (", fp32 master weights, grads and moments (16 B/param)" if w.mode == "full"
                                      else ", the frozen base in fp16"))
    return None, None


def _largest(w: cal_.Workload, precision: str, usable: float, ckpt: bool, shards: int = 1) -> int:
    """The measured micro-batch halved until the step fits `usable` bytes (0: not even 1); the state split
    over `shards` GPUs (FSDP/ZeRO-3)."""
    state, keep, mb = w.state_bytes(precision) / shards, (cal_.CKPT_KEEP if ckpt else 1.0), w.micro_batch
    while mb >= 1 and state + mb * w.seq_len * w.act_bytes_per_token * keep > usable:
        mb //= 2
    return mb


def configs(w: cal_.Workload, precision: str, usable: float, shards: int = 1) -> list[tuple[int, bool]]:
    """The configurations the memory model says fit, as the probe tries them (tasks/probe/finetune/plan.py
    `candidates`): without checkpointing at the largest micro-batch, and with it at the largest it
    allows where that is bigger (at the same micro-batch it is only the same step plus a recomputed
    forward). No rule of thumb picks between them: `predict` estimates each and keeps the fastest."""
    plain, ckpt = _largest(w, precision, usable, False, shards), _largest(w, precision, usable, True, shards)
    out = [(plain, False)] if plain >= 1 else []
    if ckpt >= 1 and ckpt > plain:
        out.append((ckpt, True))
    return out


def _scaling(w: cal_.Workload, sheet: cal_.Sheet, precision: str, count: int, nodes: int, tokens: float,
             tokens_per_s_1: float, shards: int, fabric: str | None, network: str | None,
             measured: float | None) -> scaling_.Scaling:
    """The scaling efficiency of this configuration: measured on the type where it was, else predicted."""
    if count * nodes == 1:
        return scaling_.Scaling(efficiency=1.0, lo=1.0, hi=1.0)
    if measured is not None:
        return scaling_.Scaling(efficiency=measured, lo=measured, hi=measured, strategy="measured",
                                reason="measured on this type by the distributed probe (wins over the prediction)")
    trainable = w.params_total if w.mode == "full" else w.params_trainable
    return scaling_.predict_scaling(
        sheet.key, count, fabric, params=w.params_total, trainable_params=trainable, tokens_per_gpu_step=tokens,
        tokens_per_s_1=tokens_per_s_1, strategy="fsdp" if shards > 1 else "ddp", nodes=nodes, network=network,
        grad_bytes_per_param=memory.gradient_bytes_per_param(w.mode, precision),
        param_bytes=float(memory.param_bytes(w.mode, precision)[1 if w.mode == "full" else 0]))


def predict(w: cal_.Workload, sheet: cal_.Sheet | None, count: int, cal: cal_.Calibration,
            gpu_name: str | None = None, *, fabric: str | None = None, network: str | None = None, nodes: int = 1,
            measured_scaling: float | None = None) -> Prediction:
    """Tokens/s of preset `w` on `count` x `sheet` (x `nodes`), with its 90% interval and assumptions. Past one
    GPU: x count x the scaling efficiency measured on this type (`measured_scaling`), else predicted from its
    `fabric` and `network` (tasks/estimate/scaling.py); the state sharded (FSDP) where it does not fit one card."""
    out = Prediction(w.preset, sheet.key if sheet else gpu_name, count)
    gpus = count * nodes
    if sheet is None:
        out.reason = f"GPU {gpu_name!r} has no datasheet entry in gpu_specs.json: no estimate"
        return out
    precision, note = _precision(w, sheet)
    if precision is None:
        out.reason = f"{sheet.key}: no {w.precision} or fp16 peak in gpu_specs.json: no estimate"
        return out
    usable = sheet.memory_gib * cal_.GIB * TIER.memory_headroom
    fits, shards = configs(w, precision, usable), 1
    if not fits and gpus > 1:  # FSDP/ZeRO-3: every GPU holds 1/n of the state
        fits, shards = configs(w, precision, usable, gpus), gpus
    out.precision = precision
    if not fits:
        out.fit = "does not fit"
        state = w.state_bytes(precision) / gpus
        need = state + w.seq_len * w.act_bytes_per_token * cal_.CKPT_KEEP
        out.reason = (f"does not fit: {w.preset} in {precision} needs ~{need / cal_.GIB:.1f} GiB at micro-batch 1 with "
                      f"activation checkpointing ({state / cal_.GIB:.1f} GiB of it weights, gradients and optimizer "
                      f"state{f' sharded over {gpus} GPUs' if gpus > 1 else ''}); {sheet.memory_gib:g} GiB x {TIER.memory_headroom:g} = {usable / cal_.GIB:.1f} GiB usable")
        return out
    kappa, own = cal.kappa_for(w.preset)
    steps = {c: cal_.step_time(w, sheet, precision, c[0], c[1], cal.eff) for c in fits}
    one = {c: kappa / st.seconds for c, st in steps.items()}  # one GPU; step_time is seconds per token
    sc = {c: _scaling(w, sheet, precision, count, nodes, c[0] * w.seq_len, one[c], shards, fabric, network,
                      measured_scaling) for c in fits}
    if any(v.efficiency is None for v in sc.values()):
        out.reason = next(v.reason for v in sc.values() if v.efficiency is None)
        return out
    rate = {c: one[c] * gpus * sc[c].efficiency for c in fits}
    (mb, ckpt) = max(fits, key=lambda c: rate[c])
    step, s = steps[(mb, ckpt)], sc[(mb, ckpt)]
    x, x1 = rate[(mb, ckpt)], one[(mb, ckpt)]
    width = math.exp(cal.log_halfwidth)
    out.tokens_per_s, out.lo, out.hi = x, x1 / width * gpus * s.lo, x1 * width * gpus * s.hi
    if gpus > 1:
        out.scaling, out.scaling_lo, out.scaling_hi, out.scaling_label = s.efficiency, s.lo, s.hi, s.label
        out.fabric, out.network, out.busbw_gbps, out.comm_share, out.strategy = (
            fabric, network, s.busbw_gbps, s.comm_share, s.strategy)
    out.micro_batch, out.checkpointing = mb, ckpt
    out.fit = "checkpointing" if ckpt else ("as measured" if mb == w.micro_batch else "smaller micro-batch")
    out.compute_share = step.compute_s / step.seconds
    a = out.assumptions
    a.append(f"GPU {gpu_name or sheet.key} read as gpu_specs.json:{sheet.key} ({sheet.source}, {sheet.date})")
    a.append(f"{w.preset}: {w.flops_per_token / 1e9:.3g} GFLOP/token from its measured MFU on {w.gpu_name} "
             f"({w.runs} runs)")
    if note:
        a.append(note)
    a.append(f"compute at {cal.eff.get(precision, cal.eff.get('bf16')):.0%} of the {precision} peak "
             f"({sheet.peaks[precision]:g} TFLOP/s), memory traffic {step.bytes / 1e6:.3g} MB/token at "
             f"{cal.eff['copy']:.0%} of {sheet.bandwidth_gbps:g} GB/s: the measured GEMM and copy efficiencies")
    a.append(f"step {out.compute_share:.0%} compute-bound, {1 - out.compute_share:.0%} bandwidth-bound")
    need = (w.state_bytes(precision) / shards + mb * w.seq_len * w.act_bytes_per_token * (cal_.CKPT_KEEP if ckpt else 1)) / cal_.GIB
    if out.fit == "as measured":
        a.append(f"memory: micro-batch {mb} as measured, ~{need:.1f} of {usable / cal_.GIB:.1f} GiB usable")
    else:
        a.append(f"memory: the measured {w.peak_mem_gib:.1f} GiB at micro-batch {w.micro_batch} does not fit "
                 f"{usable / cal_.GIB:.1f} GiB usable: micro-batch {mb}"
                 + (f" with activation checkpointing (keeps <= {cal_.CKPT_KEEP:.0%} of activations; recomputing "
                    f"the forward adds {cal_.RECOMPUTE[w.mode]:.0%} FLOPs)" if ckpt else "") + f", ~{need:.1f} GiB")
    a.append(f"configuration: micro-batch {mb}, checkpointing {'on' if ckpt else 'off'}, "
             + (f"the fastest of the {len(fits)} that fit (as the probe searches them)" if len(fits) > 1
                else "the only one that fits")
             + "".join(f"; micro-batch {c[0]} with checkpointing {'on' if c[1] else 'off'}: ~{rate[c]:,.0f} tokens/s"
                       for c in fits if c != (mb, ckpt)))
    if need * cal_.GIB > 0.95 * usable:
        a.append(f"tight fit ({need * cal_.GIB / usable:.0%} of usable)"
                 + (": the probe's trial drops it if it runs out of memory, and measures the next one" if len(fits) > 1
                    or mb > 1 else ": if it runs out of memory there is no smaller step (it would not fit)"))
    a.append(f"efficiency beyond both (kappa {kappa:.2f}) "
             + (f"calibrated on {w.preset}'s own runs" if own else "the median over the measured presets"))
    if gpus > 1:
        a.append(f"{gpus} GPUs at scaling efficiency {s.efficiency:.2f} (90% {s.lo:.2f}..{s.hi:.2f}), "
                 + (s.reason if measured_scaling is not None else f"{s.strategy.upper()}: {s.reason}"))
    a.append(f"90% interval x/÷ {width:.3f} per GPU: the leave-one-out error over {cal.n} measured presets, standing in "
             "for the transfer to another GPU (the held-out published figures check it)"
             + (", times the scaling efficiency's interval" if gpus > 1 else ""))
    return out


def per_gpu_rate(w: cal_.Workload, sheet: cal_.Sheet, cal: cal_.Calibration) -> tuple[float, float, float, str] | None:
    """Tokens/s of preset `w` on one GPU of `sheet` with its 90% interval and how: `predict`'s, or where the
    preset does not fit one card, its rate at micro-batch 1 with checkpointing (the step a sharded run takes).
    None where there is no estimate at all (no datasheet peak)."""
    p = predict(w, sheet, 1, cal)
    if p.tokens_per_s is not None:
        return p.tokens_per_s, p.lo, p.hi, f"{w.preset} estimated on one {sheet.key} ({p.fit}, {p.precision})"
    if p.fit != "does not fit":
        return None
    kappa, _ = cal.kappa_for(w.preset)
    x = kappa / cal_.step_time(w, sheet, p.precision, 1, True, cal.eff).seconds
    width = math.exp(cal.log_halfwidth)
    return x, x / width, x * width, (f"{w.preset} estimated on one {sheet.key} at micro-batch 1 with checkpointing "
                                     f"({p.precision}; the preset itself does not fit one card)")


def rerun(history: dict | None, fleet: tuple[int, int], f: float) -> tuple[float, float, str]:
    """(p, R, why): the type's own fine-tune history when it has attempts, else the preset's fleet-wide rate."""
    if history and history.get("attempts"):
        k, n = history["failed_attempts"], history["attempts"]
        why = f"R from its own history: {k}/{n} failed"
    else:
        k, n = fleet
        why = f"R from the fleet-wide failure rate of the preset: {k}/{n} failed"
    p = failure_rate(k, n)
    return p, (rerun_factor(p, f) if p < 1 else math.inf), why


def price_row(pred: Prediction, price_per_hour: float | None, r: float) -> dict:
    """The estimate's cost per 1M tokens (and its interval) at one price: C from tasks.cost.model."""
    if pred.tokens_per_s is None or price_per_hour is None or not math.isfinite(r):
        return {"cost_per_mtok": None, "cost_lo": None, "cost_hi": None}
    return {"cost_per_mtok": effective_cost(price_per_hour, pred.tokens_per_s, r),
            "cost_lo": effective_cost(price_per_hour, pred.hi, r),
            "cost_hi": effective_cost(price_per_hour, pred.lo, r)}
