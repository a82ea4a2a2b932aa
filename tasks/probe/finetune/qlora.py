"""QLoRA: the frozen base's linear weights in 4-bit NF4, bf16 compute, LoRA adapters on top.

    .venv/bin/pytest -q tests/test_finetune_qlora.py

QLoRA (Dettmers et al. 2023, arXiv:2305.14314): every projection of every decoder layer is stored as
4-bit NormalFloat with block-wise absmax scales (the scales quantized once more: "double
quantization"); each forward and backward pass dequantizes a weight to the compute dtype (bf16)
for its matmul; only the LoRA adapters (r=16 on all seven projections) train. The embeddings, the
norms and the LM head stay in bf16, as transformers' load_in_4bit leaves them.

Two backends, tried in order, each with a small quantize-and-matmul check on the device first:
  - bitsandbytes (what QLoRA users run: transformers + peft): bnb.nn.Linear4bit holding
    Params4bit(quant_type="nf4", compress_statistics=True); moving it to the GPU quantizes it
    (bitsandbytes docs, "4-bit quantization", v0.50, read 2026-12-04). peft wraps it with its own
    bnb LoRA layer when the model says `is_loaded_in_4bit`.
  - torchao's NF4Tensor (torchtune's QLoRA): to_nf4(weight) with block size 64 and scaler block
    256, and linear_nf4 for the matmul; the adapters are this module's NF4LoraLinear.
Neither importable and working: `backend()` returns None and the reason, and the preset is
not_applicable. Sizes: the 4-bit weights take ~0.53 bytes a parameter (0.5 + fp8 absmax per 64,
fp32 per 256 of those), ~3.4 GiB for Llama-3-8B's 7.0B projection parameters against 13.0 GiB in bf16.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tasks.probe.finetune.memory import NF4_BYTES_PER_PARAM  # noqa: F401  (the one memory model's figure)


def _torchao_nf4():
    """(to_nf4, linear_nf4) from whichever torchao layout is installed (0.18 moved the module)."""
    try:
        from torchao.quantization.quantize_.workflows.nf4.nf4_tensor import linear_nf4, to_nf4
    except ImportError:
        from torchao.dtypes.nf4tensor import linear_nf4, to_nf4
    return to_nf4, linear_nf4


def _check_bnb(device: torch.device) -> None:
    import bitsandbytes as bnb
    import peft  # noqa: F401  (its bitsandbytes LoRA layer wraps the 4-bit projections)

    lin = bnb.nn.Linear4bit(256, 128, bias=False, compute_dtype=torch.bfloat16, quant_type="nf4",
                            device="meta")
    lin.weight = bnb.nn.Params4bit(torch.randn(128, 256, dtype=torch.bfloat16), requires_grad=False,
                                   quant_type="nf4", compress_statistics=True)
    lin = lin.to(device)
    lin(torch.randn(4, 256, dtype=torch.bfloat16, device=device)).float().sum().item()


def _check_torchao(device: torch.device) -> None:
    to_nf4, linear_nf4 = _torchao_nf4()
    w = to_nf4(torch.randn(128, 256, dtype=torch.bfloat16, device=device))
    linear_nf4(torch.randn(4, 256, dtype=torch.bfloat16, device=device), w).float().sum().item()


CHECKS = {"bitsandbytes": _check_bnb, "torchao": _check_torchao}


def backend(device: torch.device | str) -> tuple[str | None, str]:
    """(the first NF4 backend that quantizes and multiplies on `device`, a note); (None, why)."""
    device = torch.device(device)
    why = []
    for name, check in CHECKS.items():
        try:
            check(device)
            return name, f"NF4 through {name} {_version(name)}"
        except Exception as e:  # ImportError, a missing CUDA library, an unsupported device
            why.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
    return None, "no 4-bit NF4 backend works here (" + "; ".join(why) + ")"


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


class NF4LoraLinear(nn.Module):
    """torchao path: y = linear_nf4(x, W_nf4) + (x A^T B^T) * alpha/r, only A and B trainable.

    A as peft initialises it (Kaiming-uniform, a=sqrt(5)), B zeros, so training starts at the base."""

    def __init__(self, linear: nn.Linear, r: int, alpha: int, compute_dtype: torch.dtype,
                 dtype: torch.dtype):
        super().__init__()
        to_nf4, self._linear_nf4 = _torchao_nf4()
        if linear.bias is not None:
            raise ValueError("NF4LoraLinear: biased projections are not part of the Llama shape")
        w = linear.weight.detach()
        self.weight = nn.Parameter(to_nf4(w.to(compute_dtype)), requires_grad=False)
        self.lora_A = nn.Parameter(torch.empty(r, w.shape[1], dtype=dtype, device=w.device))
        self.lora_B = nn.Parameter(torch.zeros(w.shape[0], r, dtype=dtype, device=w.device))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scale = alpha / r

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lora = (x.to(self.lora_A.dtype) @ self.lora_A.t() @ self.lora_B.t()) * self.scale
        return self._linear_nf4(x, self.weight) + lora.to(x.dtype)


def _projections(model, targets):
    """(parent module, attribute name, nn.Linear) for every target projection of every decoder layer."""
    for layer in model.model.layers:
        for parent in (layer.self_attn, layer.mlp):
            for name, child in list(parent.named_children()):
                if name in targets and isinstance(child, nn.Linear):
                    yield parent, name, child


def quantize_and_adapt(model, p, name: str, compute_dtype: torch.dtype, train_dtype: torch.dtype,
                       targets):
    """The QLoRA model: the base's target projections in NF4 through backend `name`, dequantized to
    `compute_dtype` (bf16; fp16 before Ampere) for each matmul, LoRA r=p.lora_r on each; returns the
    model to train (a peft PeftModel for bitsandbytes, `model` itself for torchao)."""
    if name == "bitsandbytes":
        import bitsandbytes as bnb
        from peft import LoraConfig, get_peft_model

        for parent, attr, lin in _projections(model, targets):
            q = bnb.nn.Linear4bit(lin.in_features, lin.out_features, bias=False,
                                  compute_dtype=compute_dtype, quant_type="nf4", device="meta")
            q.weight = bnb.nn.Params4bit(lin.weight.data, requires_grad=False, quant_type="nf4",
                                         compress_statistics=True)
            setattr(parent, attr, q.to(lin.weight.device))  # .to() quantizes; the bf16 copy is freed
            del lin
        model.is_loaded_in_4bit = True  # peft then wraps with its bitsandbytes LoRA layer
        lcfg = LoraConfig(r=p.lora_r, lora_alpha=p.lora_alpha, lora_dropout=0.0,
                          target_modules=list(targets), task_type="CAUSAL_LM")
        model = get_peft_model(model, lcfg, autocast_adapter_dtype=False)
    elif name == "torchao":
        for prm in model.parameters():
            prm.requires_grad_(False)
        for parent, attr, lin in _projections(model, targets):
            setattr(parent, attr, NF4LoraLinear(lin, p.lora_r, p.lora_alpha, compute_dtype, train_dtype))
            del lin
    else:
        raise ValueError(f"unknown NF4 backend {name!r}; expected one of {sorted(CHECKS)}")
    for prm in model.parameters():
        if prm.requires_grad:
            prm.data = prm.data.to(train_dtype)
    return model


def logical_numel(prm: torch.Tensor) -> int:
    """Parameters a tensor stands for: bitsandbytes packs two 4-bit codes a byte (its quant_state
    keeps the real shape); torchao's NF4Tensor already reports its logical shape."""
    qs = getattr(prm, "quant_state", None)
    shape = getattr(qs, "shape", None)
    return int(math.prod(shape)) if shape is not None else prm.numel()
