"""Fine-tune model presets: named recipes, random init from a Llama or BERT config, no hub download.

    .venv/bin/python -c "from tasks.probe.finetune.presets import build_preset; print(build_preset('tiny', 'cpu')[2])"

Every preset is one workload that every target runs the same way, so tokens/s compare like with
like. Big models are built directly on the GPU (or the meta device for sizing): random init on a
GPU takes seconds, a CPU init of 8B parameters takes minutes. `estimate_bytes` is the memory model
that lists the configurations worth a trial (plan.candidates); search.py measures them and an
out-of-memory in a trial drops one. Decoders (arch "llama") train as causal LMs; the
encoder (arch "bert", tasks/probe/finetune/encoder.py) as a masked LM; "qlora" presets keep the base in
4-bit NF4 (tasks/probe/finetune/qlora.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class Preset:
    """One fine-tune workload. Shapes cite the model card they copy."""

    name: str
    mode: str  # "full" | "lora" | "qlora"
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq_len: int = 2048  # issue 4: the acceptance figures are at seq 2048
    micro_batch_max: int = 16  # upper end of the auto micro-batch search (the H200 best for 1b was 16)
    lr: float = 2e-4  # big enough that the loss visibly falls within a few steps on random init
    rope_theta: float = 10000.0
    lora_r: int = 16  # issue 4: LoRA r=16 on all projection layers
    lora_alpha: int = 32  # the common alpha = 2r
    compile: bool = False  # default for torch.compile; the profile or options may override
    arch: str = "llama"  # "llama": decoder, causal LM (labels = inputs); "bert": encoder, masked LM
    gpu_only: str | None = None  # why the preset is not_applicable without CUDA; None: runs anywhere

    def __post_init__(self) -> None:
        if self.mode not in ("full", "lora", "qlora"):
            raise ValueError(f"Preset {self.name}: mode must be full/lora/qlora, got {self.mode!r}")
        if self.arch not in ("llama", "bert") or (self.arch == "bert" and self.mode != "full"):
            raise ValueError(f"Preset {self.name}: arch must be llama, or bert with mode full; got "
                             f"{self.arch!r} with {self.mode!r}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"Preset {self.name}: hidden/heads/kv_heads do not divide: "
                             f"{self.hidden}/{self.heads}/{self.kv_heads}")
        for name in ("seq_len", "micro_batch_max", "layers", "ffn", "vocab"):
            if getattr(self, name) < 1:
                raise ValueError(f"Preset {self.name}: {name} must be >= 1, got {getattr(self, name)}")

    @property
    def objective(self) -> str:
        """"clm" (next-token, labels = inputs) for decoders, "mlm" (masked tokens) for encoders."""
        return "mlm" if self.arch == "bert" else "clm"


PRESETS: dict[str, Preset] = {
    # A few million parameters: CPU and CI. Vocab covers the byte tokenizer (258 ids).
    "tiny": Preset("tiny", "full", hidden=256, layers=4, heads=4, kv_heads=2, ffn=688, vocab=512,
                   seq_len=256, micro_batch_max=4, lr=1e-3),
    # TinyLlama-1.1B (huggingface.co/TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T config.json,
    # read 2026-12-02): hidden 2048, 22 layers, 32 heads, 4 KV heads, FFN 5632, vocab 32000.
    "1b": Preset("1b", "full", hidden=2048, layers=22, heads=32, kv_heads=4, ffn=5632, vocab=32000,
                 compile=True),
    # Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json, read 2026-12-02): hidden 4096, 32 layers,
    # 32 heads, 8 KV heads, FFN 14336, vocab 128256, rope_theta 500000.
    "8b-lora": Preset("8b-lora", "lora", hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336,
                      vocab=128256, rope_theta=500000.0, micro_batch_max=4, lr=1e-3),
    # Llama-2-7B (meta-llama/Llama-2-7b-hf config.json, read 2026-12-02): full fine-tune, only
    # where memory allows (~8 bytes/parameter of state in pure bf16 before activations).
    "7b-full": Preset("7b-full", "full", hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008,
                      vocab=32000, micro_batch_max=8, lr=1e-4),
    # The seed's Llama-3-8B QLoRA case (shape as 8b-lora): the projections in 4-bit NF4 through
    # bitsandbytes or torchao (qlora.py), bf16 compute, LoRA r=16 on top; same micro-batch ceiling
    # as 8b-lora so their peak memory compares like for like.
    "8b-qlora": Preset("8b-qlora", "qlora", hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336,
                       vocab=128256, rope_theta=500000.0, micro_batch_max=4, lr=1e-3,
                       gpu_only="8B parameters: ~16 GB to build, minutes a step on a CPU"),
    # BERT-large (Devlin et al. 2018, BERT_LARGE: L=24, H=1024, A=16; google-bert/bert-large-uncased
    # config.json, read 2026-12-04: intermediate 4096, vocab 30522, 512 positions): masked-LM
    # training at seq 512 and batch 32, the comparison's encoder workload. Eager, as most users run it.
    "bert-large": Preset("bert-large", "full", hidden=1024, layers=24, heads=16, kv_heads=16, ffn=4096,
                         vocab=30522, seq_len=512, micro_batch_max=32, lr=1e-4, arch="bert",
                         gpu_only="32 x 512 tokens through 335M parameters: minutes a step on a CPU"),
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown fine-tune preset {name!r}; expected one of {sorted(PRESETS)}") from None


def llama_config(p: Preset):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=p.vocab, hidden_size=p.hidden, intermediate_size=p.ffn,
        num_hidden_layers=p.layers, num_attention_heads=p.heads, num_key_value_heads=p.kv_heads,
        max_position_embeddings=max(p.seq_len, 2048), rope_theta=p.rope_theta,
        tie_word_embeddings=False, use_cache=False,
    )


def _dtype(precision: str) -> torch.dtype:
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[precision]


def param_dtypes(mode: str, precision: str) -> tuple[torch.dtype, torch.dtype]:
    """(base weights, trainable weights). bf16 trains pure bf16 (as the reference's plain torch run);
    fp16 keeps fp32 trainable weights because GradScaler cannot unscale fp16 gradients."""
    if precision == "bf16":
        return torch.bfloat16, torch.bfloat16
    if precision == "fp16":
        return (torch.float16 if mode != "full" else torch.float32), torch.float32
    return torch.float32, torch.float32


def count_params(model) -> dict[str, int]:
    """Parameter counts by role. Quantized weights count the parameters they stand for. The
    non-embedding count leaves out lookup tables (token, position, type embeddings) and the LoRA
    adapters (counted apart), but keeps every matmul, including an output head tied to the input
    embedding (BERT's MLM decoder multiplies by the word-embedding table at every position)."""
    from tasks.probe.finetune.qlora import logical_numel

    emb_ids = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    total = trainable = embed = lora = 0
    for name, prm in model.named_parameters():
        n = logical_numel(prm)
        total += n
        trainable += n if prm.requires_grad else 0
        embed += n if id(prm) in emb_ids else 0
        lora += n if "lora_" in name else 0
    try:
        head = model.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        head = None
    tied = head.weight.numel() if head is not None and id(head.weight) in emb_ids else 0
    return {"params_total": total, "params_trainable": trainable,
            "params_non_embedding": total - embed - lora + tied, "params_lora": lora}


def _build_base(p: Preset, device, dtype: torch.dtype, model_path: str | None):
    """(model, config, source) of the base network before adapters."""
    if p.arch == "bert":
        if model_path:
            from transformers import BertForMaskedLM

            model = BertForMaskedLM.from_pretrained(model_path, local_files_only=True, dtype=dtype,
                                                    attn_implementation="sdpa").to(device)
            return model, model.config, model_path.rstrip("/").split("/")[-1] or "model"
        from tasks.probe.finetune.encoder import build_bert

        return (*build_bert(p, device, dtype), "preset")
    from transformers import AutoModelForCausalLM, LlamaForCausalLM

    if model_path:
        model = AutoModelForCausalLM.from_pretrained(
            model_path, local_files_only=True, dtype=dtype, attn_implementation="sdpa").to(device)
        return model, model.config, model_path.rstrip("/").split("/")[-1] or "model"
    cfg = llama_config(p)
    with torch.device(device):
        model = LlamaForCausalLM._from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    return model, cfg, "preset"


def build_preset(name: str, device: str | torch.device, *, precision: str = "fp32",
                 activation_checkpointing: bool = False, model_path: str | None = None, seed: int = 0,
                 preset: Preset | None = None, nf4_backend: str | None = None):
    """Build (model, cfg, meta) for preset `name` (or the `preset` object) on `device` with random
    init (or `model_path`).

    meta: mode, params_total, params_trainable, params_non_embedding, params_lora, build_s,
    model_source. LoRA presets come back as a peft PeftModel with only the adapters trainable;
    QLoRA presets quantize the base through `nf4_backend` (qlora.backend() picks it) first.
    """
    p = preset or get_preset(name)
    base_dtype, train_dtype = param_dtypes(p.mode, precision)
    if p.mode == "qlora" and nf4_backend is None:
        raise ValueError(f"{p.name}: a qlora preset needs nf4_backend (tasks.probe.finetune.qlora.backend())")
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    model, cfg, source = _build_base(p, device, base_dtype if p.mode != "full" else train_dtype,
                                     model_path)
    model.config.use_cache = False
    if activation_checkpointing:
        set_checkpointing(model, True)
    if p.mode == "lora":
        from peft import LoraConfig, get_peft_model

        lcfg = LoraConfig(r=p.lora_r, lora_alpha=p.lora_alpha, lora_dropout=0.0,
                          target_modules=list(LORA_TARGETS), task_type="CAUSAL_LM")
        model = get_peft_model(model, lcfg, autocast_adapter_dtype=train_dtype == torch.float32)
        for prm in model.parameters():
            if prm.requires_grad:
                prm.data = prm.data.to(train_dtype)
    elif p.mode == "qlora":
        from tasks.probe.finetune.qlora import quantize_and_adapt

        model = quantize_and_adapt(model, p, nf4_backend, base_dtype, train_dtype, LORA_TARGETS)
    model.train()
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
    meta = {"mode": p.mode, "model_source": source, "build_s": time.perf_counter() - t0,
            "nf4_backend": nf4_backend if p.mode == "qlora" else None, **count_params(model)}
    return model, cfg, meta


def set_checkpointing(model, on: bool) -> None:
    """Activation checkpointing on or off on a built model (a peft wrapper's base included), so the
    configuration search (search.py) tries both on one model. Non-reentrant: works with frozen bases
    (LoRA, QLoRA) and torch.compile (a change of the flag recompiles once, then both graphs are cached)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if on:
        kw = {"use_reentrant": False}
        if hasattr(base, "activation_checkpointing_enable"):  # transformers >= 5.2x
            base.activation_checkpointing_enable(activation_checkpointing_kwargs=kw)
        else:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kw)
    elif hasattr(base, "activation_checkpointing_disable"):
        base.activation_checkpointing_disable()
    else:
        base.gradient_checkpointing_disable()
    base.train()


COMPILED_ACTIVATIONS = 0.68  # torch.compile keeps this share of the eager activations and logits:
#   the H200 1b run at micro-batch 16, compiled (sample 82cd05ae, 2026-12-04), peaked at 57.2 GiB
#   allocated where the eager model below says 79.7 (9.6 of it weights, optimizer state and slack)


def estimate_bytes(p: Preset, micro_batch: int, *, precision: str, checkpointing: bool,
                   compiled: bool = False) -> float:
    """Rough peak bytes of one training step (which configurations to try, nothing more).

    The one memory model (tasks/probe/finetune/memory.py), which the estimator and the tiers read too:
    state (weights, gradients, optimizer) by mode and precision, activations per token and layer, logits,
    and the allocator's slack; torch.compile keeps COMPILED_ACTIVATIONS of the activations. Checked
    against the reference's 1b peaks (44.7 GB at micro-batch 8 eager: this says 48)."""
    from tasks.probe.finetune import memory

    n_proj, n_other, n_lora = memory.param_counts(p)
    state = memory.state_bytes(p.mode, precision, params_total=n_proj + n_other + n_lora, params_trainable=n_lora,
                               params_quantized=n_proj)
    per_step = memory.activation_bytes(p, micro_batch * p.seq_len, precision, checkpointing)
    return state + per_step * (COMPILED_ACTIVATIONS if compiled else 1.0) + memory.SLACK_BYTES


def preset_for_model(p: Preset, model_path: str) -> Preset:
    """The preset's recipe (mode, seq_len, LoRA rank, lr) with the shape of a local checkpoint."""
    import dataclasses

    from transformers import AutoConfig

    try:
        c = AutoConfig.from_pretrained(model_path, local_files_only=True)
    except (OSError, ValueError) as e:
        raise ValueError(f"{model_path}: --model is not a usable local checkpoint directory ({e})") from None
    return dataclasses.replace(
        p, hidden=c.hidden_size, layers=c.num_hidden_layers, heads=c.num_attention_heads,
        kv_heads=getattr(c, "num_key_value_heads", None) or c.num_attention_heads,
        ffn=getattr(c, "intermediate_size", 4 * c.hidden_size), vocab=c.vocab_size)


def tokenizer_dir(model_path: str | None) -> str | None:
    """The checkpoint's own tokenizer when it ships one; None means the byte tokenizer."""
    if not model_path:
        return None
    from pathlib import Path

    d = Path(model_path)
    names = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")
    return str(d) if any((d / n).is_file() for n in names) else None
