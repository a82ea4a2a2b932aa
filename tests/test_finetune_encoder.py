"""The encoder preset on CPU: BERT's masking recipe, parameter counts, FLOPs and a tiny masked-LM run.

    .venv/bin/pytest -q tests/test_finetune_encoder.py
"""

import dataclasses

import pytest
import torch

from tasks.bundle import Attempt, Finetune
from tasks.probe.finetune import presets as fpresets
from tasks.probe.finetune.data import ByteTokenizer
from tasks.probe.finetune.encoder import IGNORE_INDEX, mask_token_id, mlm_batch
from tasks.probe.finetune.flops import flops_per_token
from tasks.probe.finetune.run import run_finetunes

TINY_BERT = dataclasses.replace(fpresets.get_preset("bert-large"), name="bert-test", hidden=64, layers=2,
                                heads=2, kv_heads=2, ffn=128, vocab=512, seq_len=64, micro_batch_max=4,
                                lr=1e-3, gpu_only=None)


def test_bert_large_is_the_comparisons_shape():
    p = fpresets.get_preset("bert-large")
    assert (p.arch, p.objective, p.mode, p.layers, p.hidden, p.heads, p.ffn, p.seq_len, p.micro_batch_max) == (
        "bert", "mlm", "full", 24, 1024, 16, 4096, 512, 32)
    assert fpresets.get_preset("1b").objective == "clm"


@pytest.mark.parametrize("field, value", [("arch", "gpt"), ("mode", "lora")])
def test_bad_arch_names_the_field(field, value):
    with pytest.raises(ValueError, match="arch"):
        dataclasses.replace(TINY_BERT, **{field: value})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mlm_batch_follows_berts_15_80_10_10_recipe(seed):
    ids = torch.randint(0, 258, (64, 512), generator=torch.Generator().manual_seed(seed))
    inputs, labels = mlm_batch(ids, mask_id=258, n_tokens=258, generator=torch.Generator().manual_seed(seed))
    picked = labels != IGNORE_INDEX
    n = ids.numel()
    assert abs(picked.sum().item() / n - 0.15) < 0.01
    assert torch.equal(labels[picked], ids[picked])  # the loss predicts the original token
    assert torch.equal(inputs[~picked], ids[~picked])  # positions not predicted are untouched
    masked = (inputs == 258) & picked
    assert abs(masked.sum().item() / picked.sum().item() - 0.8) < 0.03
    assert not ((inputs == 258) & ~picked).any() and inputs.max() <= 258
    kept = (inputs == ids) & picked  # 10% kept, plus random draws that hit the same id
    assert 0.08 < kept.sum().item() / picked.sum().item() < 0.13


@pytest.mark.parametrize("prob", [0.0, 1.0, -0.1])
def test_mlm_batch_rejects_a_bad_probability(prob):
    with pytest.raises(ValueError, match="prob"):
        mlm_batch(torch.zeros(2, 4, dtype=torch.long), mask_id=1, n_tokens=2,
                  generator=torch.Generator(), prob=prob)


def test_mask_id_follows_the_tokenizer_and_must_fit_the_vocab():
    assert mask_token_id(ByteTokenizer(), 30522) == 258
    with pytest.raises(ValueError, match="does not fit"):
        mask_token_id(ByteTokenizer(), 200)


def test_bert_large_counts_the_tied_decoder_as_a_matmul():
    model, cfg, meta = fpresets.build_preset("bert-large", "meta", precision="bf16")
    h, v, f, L = 1024, 30522, 4096, 24
    per_layer = 4 * (h * h + h) + 2 * h * f + f + h + 2 * 2 * h  # q,k,v,o (+bias), FFN, 2 LayerNorms
    head = h * h + h + 2 * h + v  # transform dense + LayerNorm + decoder bias
    emb_norm = 2 * h  # the embeddings' LayerNorm is no lookup table: it stays in
    assert meta["params_non_embedding"] == L * per_layer + head + emb_norm + v * h  # + tied decoder
    assert meta["params_total"] == meta["params_non_embedding"] - v * h + (v + 512 + 2) * h
    assert 334e6 < meta["params_total"] < 336e6 and meta["params_lora"] == 0
    fpt = flops_per_token(mode="full", n_non_embedding=meta["params_non_embedding"], n_layers=L,
                          hidden=h, seq_len=512)
    assert fpt == 6 * meta["params_non_embedding"] + 12 * L * h * 512


def test_bert_large_memory_estimate_fits_an_h200_at_batch_32_without_checkpointing():
    p = fpresets.get_preset("bert-large")
    need = fpresets.estimate_bytes(p, 32, precision="bf16", checkpointing=False)
    assert 10e9 < need < 0.85 * 139 * 2**30
    assert fpresets.estimate_bytes(p, 32, precision="bf16", checkpointing=True) < need


@pytest.mark.slow  # trains a tiny BERT
def test_tiny_bert_trains_as_a_masked_lm_on_cpu(monkeypatch):
    monkeypatch.setitem(fpresets.PRESETS, "bert-test", TINY_BERT)
    fts, atts = run_finetunes(["bert-test"], device="cpu", sampler=None, budget_s=60,
                              options={"steps": 8, "warmup_steps": 2, "warmup_min_s": 0.0, "num_workers": 0})
    for r in fts:
        Finetune.model_validate(r)
    for a in atts:
        Attempt.model_validate(a)
    r = fts[0]
    assert r["status"] == "ok" and r["mode"] == "full" and r["seq_len"] == 64 and r["micro_batch"] == 4
    assert r["loss_last"] < r["loss_first"] and r["loss_first"] == pytest.approx(6.2, abs=0.6)  # ~ln(512)
    assert r["tokens_per_s"] == pytest.approx(4 * 64 / r["step_time_median_s"])
    assert r["flops_per_token"] == 6 * r["params_non_embedding"] + 12 * 2 * 64 * 64
