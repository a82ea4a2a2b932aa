"""The one memory model of a fine-tune's resident state: bytes per parameter, by mode and precision.

    .venv/bin/pytest -q tests/test_memory_model.py

Read by the probe's plan (tasks/probe/finetune/presets.estimate_bytes), the estimator
(tasks/estimate/calibrate.Workload.state_bytes) and the tier recommendation (tasks/estimate/tiers.py):
one recipe, named once, so the three cannot disagree on what a 7B full fine-tune holds. Stdlib only, so
the probe (torch only) and the estimator (no torch) both import it.

The recipe is the probe's (presets.param_dtypes):
- full, bf16: pure bf16 training: weights, gradients and two AdamW moments at 2 B = 8 B/param;
- full, fp16 (a card without bf16) and fp32: fp32 master weights, gradients and moments = 16 B/param
  (fp16 autocast; GradScaler cannot unscale fp16 gradients). The ZeRO paper's mixed-precision Adam
  (Rajbhandari et al. 2020, sec. 3) is the same 16 B with a bf16 copy besides;
- LoRA: the frozen base at 2 B (bf16/fp16) or 4 B (fp32), the adapters trained at 16 B (fp32 weight,
  gradient, two moments: an upper bound);
- QLoRA: as LoRA, with the quantized projections at NF4's bytes (4-bit codes, an fp8 absmax per 64, an
  fp32 scale per 256 of those: tasks/probe/finetune/qlora.py quantizes them so).
Activations (`activation_bytes`, from a model's shape): what autograd saves per token and layer with fused
(SDPA) attention, in the spirit of Korthikanti et al. 2022; with checkpointing only each layer's input plus
one layer being recomputed; logits ~12 x vocab bytes per token (bf16 logits, fp32 loss and its gradient).
The probe's plan and the tiers read them; the estimator reads the measured peak instead (it has one).
A shape is anything with the Preset fields arch, hidden, layers, heads, kv_heads, ffn, vocab, lora_r.
"""

from __future__ import annotations

MODES = ("full", "lora", "qlora")
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
NF4_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)  # 4-bit codes, fp8 absmax per 64, fp32 per 256
ADAPTER_BYTES_PER_PARAM = 16.0  # LoRA adapters: fp32 weight, gradient and two AdamW moments
ADAM_COPIES = 4  # weight, gradient, first and second moment, each in the trainable dtype
SLACK_BYTES = 1.5e9  # the allocator's slack, cuBLAS workspaces and the CUDA context, beside state and activations
LOGIT_BYTES_PER_VOCAB = 12  # per token and vocabulary entry: bf16 logits, the fp32 loss input and its gradient


def param_bytes(mode: str, precision: str) -> tuple[int, int]:
    """(bytes of a frozen base weight, bytes of a trainable weight): presets.param_dtypes in bytes."""
    if precision not in DTYPE_BYTES:
        raise ValueError(f"precision = {precision!r}: expected one of {sorted(DTYPE_BYTES)}")
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r}: expected one of {MODES}")
    if precision == "bf16":
        return 2, 2
    if precision == "fp16":
        return (4 if mode == "full" else 2), 4
    return 4, 4


def full_bytes_per_param(precision: str) -> float:
    """Resident bytes per parameter of a full fine-tune (8 in bf16, 16 in fp16 or fp32)."""
    return float(param_bytes("full", precision)[1] * ADAM_COPIES)


def state_bytes(mode: str, precision: str, *, params_total: float, params_trainable: float = 0.0,
                params_quantized: float = 0.0) -> float:
    """Bytes of weights, gradients and optimizer state. Full: every parameter trains. LoRA/QLoRA:
    `params_trainable` adapters at 16 B; of the frozen rest, `params_quantized` (QLoRA's projections)
    at NF4's bytes and the remainder at the base dtype."""
    base_b, _ = param_bytes(mode, precision)
    if mode == "full":
        return params_total * full_bytes_per_param(precision)
    frozen = max(params_total - params_trainable, 0.0)
    quantized = min(params_quantized, frozen) if mode == "qlora" else 0.0
    return quantized * NF4_BYTES_PER_PARAM + (frozen - quantized) * base_b + params_trainable * ADAPTER_BYTES_PER_PARAM


def gradient_bytes_per_param(mode: str, precision: str) -> float:
    """Bytes of one trainable parameter's gradient, as data-parallel ranks exchange it."""
    return 4.0 if mode != "full" else float(param_bytes(mode, precision)[1])


def describe(mode: str, precision: str) -> str:
    """One line naming the recipe, for a row's assumptions."""
    if mode == "full":
        return (f"full fine-tune in {precision}: {full_bytes_per_param(precision):g} B/param (weights, gradients, "
                "two AdamW moments" + (" in bf16)" if precision == "bf16" else " in fp32)"))
    base = "NF4 projections, " if mode == "qlora" else ""
    return (f"{mode} in {precision}: frozen base {base}{param_bytes(mode, precision)[0]} B/param, adapters "
            f"{ADAPTER_BYTES_PER_PARAM:g} B/param")


def param_counts(shape) -> tuple[float, float, float]:
    """(projection parameters, the rest: embeddings and head, LoRA adapters at r on every projection) of a
    Llama-style decoder or a BERT encoder."""
    h, f, kv = shape.hidden, shape.ffn, shape.hidden * shape.kv_heads / shape.heads
    if shape.arch == "bert":  # q, k, v, o + two FFN matrices; word (tied head), 512 positions, 2 types
        n_proj, n_other = shape.layers * (4 * h * h + 2 * h * f), (shape.vocab + 514) * h
    else:
        n_proj, n_other = shape.layers * (2 * h * h + 2 * h * kv + 3 * h * f), 2 * shape.vocab * h
    n_lora = 0 if getattr(shape, "mode", "lora") == "full" else shape.layers * shape.lora_r * (9 * h + 3 * f + 2 * kv)
    return float(n_proj), float(n_other), float(n_lora)


def activation_bytes(shape, tokens: float, precision: str, checkpointing: bool) -> float:
    """Activations and logits one micro-batch of `tokens` holds at its peak (eager)."""
    h, f, kv = shape.hidden, shape.ffn, shape.hidden * shape.kv_heads / shape.heads
    act_b = DTYPE_BYTES[precision] if precision == "fp32" else 2
    if shape.arch == "bert":
        # per token and layer: q/k/v, the projections' inputs, two LayerNorms, the FFN's up and GELU outputs
        # (2 x ffn), and three dropout masks (1 byte each)
        per_layer = (8 * h + 2 * f) * act_b + 3 * h
    else:
        # per token and layer: norm inputs/outputs, q/k/v, attention output, and the SwiGLU's gate, up,
        # activation and product (4 x ffn), plus two fp32 RMSNorm upcasts
        per_layer = (6 * h + 4 * f + 2 * kv) * act_b + 8 * h
    act = tokens * (shape.layers * h * act_b + per_layer) if checkpointing else tokens * shape.layers * per_layer
    return act + tokens * shape.vocab * LOGIT_BYTES_PER_VOCAB
