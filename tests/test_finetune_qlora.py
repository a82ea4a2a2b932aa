"""QLoRA: backend choice, NF4 sizes, parameter counts; a tiny 4-bit run where a backend is installed.

    .venv/bin/pytest -q tests/test_finetune_qlora.py

CI has neither bitsandbytes nor torchao: the runs that need one skip, the pure logic runs. On a GPU
host with either, the CUDA test checks that 4-bit weights cut peak memory against bf16 LoRA.
"""

import dataclasses
import importlib.util

import pytest
import torch

from tasks.bundle import Finetune
from tasks.probe.finetune import presets as fpresets
from tasks.probe.finetune import qlora
from tasks.probe.finetune.run import run_finetunes

BACKENDS = [b for b in ("bitsandbytes", "torchao") if importlib.util.find_spec(b)]
TINY_Q = dataclasses.replace(fpresets.get_preset("8b-qlora"), name="qlora-test", hidden=256, layers=2,
                             heads=4, kv_heads=2, ffn=512, vocab=512, seq_len=64, micro_batch_max=4,
                             gpu_only=None)
TINY_L = dataclasses.replace(TINY_Q, name="lora-test", mode="lora")
FAST = {"steps": 6, "warmup_steps": 2, "warmup_min_s": 0.0, "num_workers": 0}


def _raise(exc):
    def check(device):
        raise exc
    return check


@pytest.mark.parametrize("works, want", [
    ({"bitsandbytes": True, "torchao": True}, "bitsandbytes"),  # what QLoRA users run comes first
    ({"bitsandbytes": False, "torchao": True}, "torchao"),
    ({"bitsandbytes": False, "torchao": False}, None),
])
def test_backend_takes_the_first_that_works(monkeypatch, works, want):
    checks = {k: (lambda d: None) if ok else _raise(ImportError(f"No module named '{k}'"))
              for k, ok in works.items()}
    monkeypatch.setattr(qlora, "CHECKS", checks)
    name, note = qlora.backend("cpu")
    assert name == want
    if want is None:
        assert "bitsandbytes: ImportError" in note and "torchao: ImportError" in note
    else:
        assert note.startswith(f"NF4 through {want}")


def test_nf4_bytes_per_parameter_is_qloras():
    assert qlora.NF4_BYTES_PER_PARAM == pytest.approx(0.5 + 1 / 64 + 1 / 4096)


@pytest.mark.parametrize("shape, packed, want", [((4096, 1024), (2097152, 1), 4096 * 1024), (None, (8, 8), 64)])
def test_logical_numel_counts_what_packed_weights_stand_for(shape, packed, want):
    t = torch.empty(packed, dtype=torch.uint8)
    if shape is not None:
        t.quant_state = type("QS", (), {"shape": torch.Size(shape)})()
    assert qlora.logical_numel(t) == want


def test_memory_estimate_shows_the_4bit_saving_at_the_same_micro_batch():
    q, lo = fpresets.get_preset("8b-qlora"), fpresets.get_preset("8b-lora")
    saved = fpresets.estimate_bytes(lo, 4, precision="bf16", checkpointing=False) - \
        fpresets.estimate_bytes(q, 4, precision="bf16", checkpointing=False)
    n_proj = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)  # 6.98e9 projections
    assert saved == pytest.approx(n_proj * (2 - qlora.NF4_BYTES_PER_PARAM))  # ~10.4 GB


def test_qlora_build_without_a_backend_is_refused():
    with pytest.raises(ValueError, match="nf4_backend"):
        fpresets.build_preset("qlora-test", "cpu", preset=TINY_Q)


@pytest.mark.skipif(not BACKENDS, reason="needs bitsandbytes or torchao")
@pytest.mark.parametrize("backend", BACKENDS)
def test_tiny_qlora_counts_and_trains_only_the_adapters(backend):
    model, cfg, meta = fpresets.build_preset("qlora-test", "cpu", preset=TINY_Q, nf4_backend=backend)
    _, _, lmeta = fpresets.build_preset("lora-test", "cpu", preset=TINY_L)
    for k in ("params_total", "params_non_embedding", "params_lora", "params_trainable"):
        assert meta[k] == lmeta[k], k  # 4-bit weights count the parameters they stand for
    assert meta["nf4_backend"] == backend
    before = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad
              and type(p.data) is torch.Tensor and p.dtype.is_floating_point}  # plain frozen weights
    ids = torch.randint(0, 258, (2, 64))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(4):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]
    for n, p in model.named_parameters():
        if n in before:
            assert torch.equal(p.detach(), before[n]), n  # the base stays frozen


@pytest.mark.skipif(not BACKENDS, reason="needs bitsandbytes or torchao")
def test_tiny_qlora_through_the_finetune_runner(monkeypatch):
    monkeypatch.setitem(fpresets.PRESETS, "qlora-test", TINY_Q)
    fts, atts = run_finetunes(["qlora-test"], device="cpu", sampler=None, budget_s=60, options=FAST)
    r = Finetune.model_validate(fts[0])
    assert r.status == "ok" and r.mode == "qlora" and "NF4 through" in r.message
    assert r.flops_per_token == 4 * r.params_non_embedding + 6 * (r.params_trainable or 0) + 12 * 2 * 256 * 64


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_qlora_peak_memory_is_below_bf16_loras_on_the_gpu(monkeypatch):
    """A Llama-shaped 1.3B base (big projections, small vocab) at the same micro-batch: 4-bit wins."""
    name, why = qlora.backend("cuda")
    if name is None:
        pytest.skip(why)
    big = dict(hidden=2048, layers=16, heads=16, kv_heads=8, ffn=8192, vocab=1024, seq_len=256)
    q = dataclasses.replace(TINY_Q, **big)
    lo = dataclasses.replace(TINY_L, **big)
    monkeypatch.setitem(fpresets.PRESETS, "qlora-test", q)
    monkeypatch.setitem(fpresets.PRESETS, "lora-test", lo)
    fts, _ = run_finetunes(["lora-test", "qlora-test"], device="cuda", sampler=None, budget_s=120,
                           options={**FAST, "micro_batch": 2})
    lora_gib, qlora_gib = (f["peak_mem_allocated_gib"] for f in fts)
    assert [f["status"] for f in fts] == ["ok", "ok"]
    n_proj = 16 * (2 * 2048 * 2048 + 2 * 2048 * 1024 + 3 * 2048 * 8192)
    assert lora_gib - qlora_gib > 0.8 * n_proj * (2 - qlora.NF4_BYTES_PER_PARAM) / 2**30
