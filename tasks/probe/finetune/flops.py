"""FLOPs per training token and model FLOPs utilisation (MFU) for the short fine-tune.

    .venv/bin/pytest -q tests/test_finetune_flops.py

Full fine-tune (PaLM, Chowdhery et al. 2022, appendix B; the convention of the reference file
../shared/reference/h200-plain-torch-2026-12-02.json):

    flops_per_token = 6 * N_non_embedding + 12 * L * H * T

N_non_embedding is every parameter except the input embedding table (the LM head is a matmul and is
counted), L layers, H the hidden size (heads x head_dim), T the sequence length. 6N is forward (2N)
plus backward (4N: activation and weight gradients); 12LHT is the attention score and value matmuls,
forward and backward. Recomputation under activation checkpointing is not counted (MFU, not HFU).

LoRA (stated here and in the bundle note): the frozen base still runs forward (2N) and must
propagate activation gradients to every adapter below (2N), but computes no weight gradients, so

    flops_per_token = 4 * N_non_embedding_base + 6 * N_lora + 12 * L * H * T

Attention has no weights, so its backward is all activation gradients: the full 12LHT stays.

QLoRA counts exactly as LoRA: only the activations' work (the frozen base's forward and its
activation gradients, 4N, plus attention) and the adapters' (6 N_lora). Dequantizing each 4-bit
weight to bf16 before its matmul, in the forward and again in the backward, is work the hardware
does that the model does not need, so like recomputation it is left out: MFU, not HFU.

An encoder (bert-large, masked LM) is a full fine-tune by the first formula: N counts the MLM
head's decoder, tied to the word embeddings, because transformers' BertForMaskedLM computes the
logits at every position; the attention term is the same (each token attends to all T).
MFU = tokens_per_s * flops_per_token / (peak_tflops * 1e12); None when the peak is unknown.
"""

from __future__ import annotations


def flops_per_token(
    *, mode: str, n_non_embedding: int, n_layers: int, hidden: int, seq_len: int, n_lora: int = 0
) -> float:
    """Training FLOPs per token for `mode` "full", "lora" or "qlora" (as LoRA; dequantizing is not counted)."""
    for name, v in (("n_non_embedding", n_non_embedding), ("n_layers", n_layers), ("hidden", hidden),
                    ("seq_len", seq_len)):
        if v <= 0:
            raise ValueError(f"flops_per_token: {name} must be > 0, got {v}")
    attention = 12.0 * n_layers * hidden * seq_len
    if mode == "full":
        return 6.0 * n_non_embedding + attention
    if mode in ("lora", "qlora"):
        if n_lora <= 0:
            raise ValueError(f"flops_per_token: mode '{mode}' needs n_lora > 0, got {n_lora}")
        return 4.0 * n_non_embedding + 6.0 * n_lora + attention
    raise ValueError(f"flops_per_token: mode must be 'full', 'lora' or 'qlora', got {mode!r}")


def mfu(tokens_per_s: float | None, flops_token: float | None, peak_tflops: float | None) -> float | None:
    """Fraction of the peak the run achieved; None when any input is unknown (never a guess)."""
    if not tokens_per_s or not flops_token or not peak_tflops:
        return None
    value = tokens_per_s * flops_token / (peak_tflops * 1e12)
    return value if value <= 1.0 else None  # above 1 means a wrong peak: store NULL, not a wrong number
