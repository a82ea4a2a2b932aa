"""A fine-tune of any model size on an instance type: memory fit, tokens/s per GPU and scaling (issue 42).

    costgap tiers                 # <=7B, 7-13B and >13B, full against full and LoRA against LoRA
    costgap scaling               # the seed's pair, and the model size where its ranking flips

`plan(size, mode, ...)` answers for one (size, mode, instance type):
- the model's shape: Llama-2's own at 7B, 13B and 70B (SHAPES, from their config.json), else a Llama-2-like
  shape scaled to the size (layers = hidden / 128, FFN 2.6875 x hidden, as Llama-2-7B/13B);
- memory, from the one memory model (tasks/probe/finetune/memory.py): state (bf16 where the card has it, else
  fp16 with fp32 masters) plus one micro-batch's activations at `seq_len`, without checkpointing if that
  fits, else with it (its recomputed forward charged); on one card (DDP), else sharded over the instance's
  GPUs (FSDP), else "does not fit" with the figures;
- tokens/s per GPU: a measured or estimated rate of a reference workload scaled by FLOPs per token
  (6N full, 4N LoRA: tasks/cost/derived.FLOPS_PER_TOKEN), at the reference's MFU;
- the scaling efficiency: measured on the type where it was, else predicted from its fabric and network
  (tasks/estimate/scaling.py), with its interval and the label every surface prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tasks.cost.derived import FLOPS_PER_TOKEN, TierConfig
from tasks.estimate import calibrate as cal_
from tasks.estimate import scaling as scaling_
from tasks.probe.finetune import memory

RECOMPUTE = cal_.RECOMPUTE  # checkpointing re-runs the forward


@dataclass(frozen=True)
class Shape:
    """A Llama-style decoder's shape (the Preset fields the memory model reads)."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int = 32000
    lora_r: int = 16  # as the probe's LoRA presets: r = 16 on every projection
    arch: str = "llama"
    mode: str = "lora"  # param_counts counts the adapters; the caller decides whether they train


# meta-llama/Llama-2-{7b,13b,70b}-hf config.json (read 2026-12-07): hidden, layers, heads, KV heads, FFN, vocab
SHAPES = {7e9: Shape("Llama-2-7B", 4096, 32, 32, 32, 11008), 13e9: Shape("Llama-2-13B", 5120, 40, 40, 40, 13824),
          70e9: Shape("Llama-2-70B", 8192, 80, 64, 8, 28672)}


def shape_for(size: float) -> Shape:
    """Llama-2's shape at 7B, 13B and 70B, else a Llama-2-like one of about `size` parameters."""
    if size in SHAPES:
        return SHAPES[size]
    # params ~ layers x (4 h^2 + 3 x 2.6875 h^2) + 2 x vocab x h, layers = h / 128
    h = 128 * max(4, round((size / 12.0625 * 128) ** (1 / 3) / 128))
    return Shape(f"Llama-2-like {size / 1e9:,.1f}B", h, h // 128, h // 128, h // 128, int(round(2.6875 * h / 256)) * 256)


@dataclass
class Plan:
    """One (size, mode, instance type): fit, rate, scaling, and the reasons."""

    fits: bool = False
    strategy: str | None = None  # ddp | fsdp
    precision: str | None = None
    checkpointing: bool = False
    need_gib: float | None = None
    usable_gib: float | None = None
    tokens_per_s: float | None = None  # the instance
    lo: float | None = None
    hi: float | None = None
    per_gpu: float | None = None
    scaling: scaling_.Scaling | None = None
    reason: str = ""
    notes: list[str] = field(default_factory=list)


def memory_fit(size: float, mode: str, sheet: cal_.Sheet, gpus: int, cfg: TierConfig) -> Plan:
    """Where `size` in `mode` fits `gpus` x `sheet` (see the module docstring); seq_len and micro-batch from cfg."""
    out = Plan()
    shape = shape_for(size)
    precision = "bf16" if sheet.peaks.get("bf16") else "fp16"
    n_proj, n_other, n_lora = memory.param_counts(shape)
    trainable = n_lora if mode != "full" else 0.0
    state = memory.state_bytes(mode, precision, params_total=size + trainable, params_trainable=trainable,
                               params_quantized=n_proj)
    usable = sheet.memory_gib * cal_.GIB * cfg.memory_headroom
    out.precision, out.usable_gib = precision, usable / cal_.GIB
    tokens = cfg.seq_len * cfg.micro_batch
    for shards, strategy in ((1, "ddp"), (gpus, "fsdp")) if gpus > 1 else ((1, "ddp"),):
        for ckpt in (False, True):
            need = state / shards + memory.activation_bytes(shape, tokens, precision, ckpt) + memory.SLACK_BYTES
            if need <= usable:
                out.fits, out.strategy, out.checkpointing, out.need_gib = True, strategy, ckpt, need / cal_.GIB
                out.notes.append(f"{mode} {size / 1e9:,.0f}B fits {'one card' if shards == 1 else f'{gpus} cards sharded (FSDP)'}: "
                                 f"~{need / cal_.GIB:,.1f} of {usable / cal_.GIB:,.1f} GiB usable per GPU "
                                 f"({memory.describe(mode, precision)}; {shape.name}, {tokens:,} tokens per micro-batch"
                                 f"{', activation checkpointing' if ckpt else ''})")
                return out
    need = state / gpus + memory.activation_bytes(shape, tokens, precision, True) + memory.SLACK_BYTES
    out.need_gib = need / cal_.GIB
    out.reason = (f"{mode} {size / 1e9:,.0f}B needs ~{need / cal_.GIB:,.0f} GiB per GPU "
                  + (f"even sharded over {gpus} GPUs " if gpus > 1 else "") + "with activation checkpointing "
                  f"({memory.describe(mode, precision)}); {sheet.memory_gib:g} GiB x {cfg.memory_headroom:g} = "
                  f"{usable / cal_.GIB:,.1f} GiB usable per GPU")
    return out


def flops_per_token(size: float, mode: str, ckpt: bool) -> float:
    """Training FLOPs per token of a `size` model in `mode` (6N full, 4N LoRA), the recomputed forward added
    under activation checkpointing."""
    return FLOPS_PER_TOKEN[mode] * size * ((1 + RECOMPUTE[mode]) if ckpt else 1.0)


def plan(size: float, mode: str, sheet: cal_.Sheet, gpus: int, cfg: TierConfig, *, per_gpu: tuple[float, float, float],
         ref_flops: float, fabric: str | None, network: str | None, measured_scaling: float | None = None) -> Plan:
    """The whole answer for one (size, mode, instance type). per_gpu: (tokens/s, lo, hi) of the reference on one
    GPU of this type; ref_flops: the reference's FLOPs per token (6N or 4N of its own size)."""
    out = memory_fit(size, mode, sheet, gpus, cfg)
    if not out.fits:
        return out
    ratio = ref_flops / flops_per_token(size, mode, out.checkpointing)
    x1, lo1, hi1 = (v * ratio for v in per_gpu)
    out.per_gpu = x1
    if gpus == 1:
        out.tokens_per_s, out.lo, out.hi = x1, lo1, hi1
        out.scaling = scaling_.Scaling(efficiency=1.0, lo=1.0, hi=1.0, strategy="ddp")
        return out
    if measured_scaling is not None:
        sc = scaling_.Scaling(efficiency=measured_scaling, lo=measured_scaling, hi=measured_scaling, strategy="measured",
                              reason="measured on this type by the distributed probe")
    else:
        n_proj, n_other, n_lora = memory.param_counts(shape_for(size))
        trainable = size if mode == "full" else n_lora
        sc = scaling_.predict_scaling(
            sheet.key, gpus, fabric, params=size, trainable_params=trainable,
            tokens_per_gpu_step=cfg.seq_len * cfg.micro_batch * cfg.grad_accumulation, tokens_per_s_1=x1,
            strategy=out.strategy, grad_bytes_per_param=memory.gradient_bytes_per_param(mode, out.precision),
            param_bytes=float(memory.param_bytes(mode, out.precision)[1 if mode == "full" else 0]),
            micro_steps=cfg.grad_accumulation, network=network)
    out.scaling = sc
    if sc.efficiency is None:
        out.reason = sc.reason
        return out
    out.tokens_per_s, out.lo, out.hi = x1 * gpus * sc.efficiency, lo1 * gpus * sc.lo, hi1 * gpus * sc.hi
    out.notes.append(f"{gpus} GPUs at scaling efficiency {sc.efficiency:.2f} (90% {sc.lo:.2f}..{sc.hi:.2f}), "
                     + (sc.reason if sc.strategy != "measured" else sc.label))
    if not math.isfinite(out.tokens_per_s):
        out.reason, out.tokens_per_s = "no estimate: the rate is not finite", None
    return out
