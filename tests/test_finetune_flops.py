"""MFU arithmetic (PaLM formula; LoRA count) against hand calculations."""

import pytest

from tasks.probe.finetune.flops import flops_per_token, mfu


def test_1b_full_matches_hand_calculation_and_the_reference_mfu():
    # TinyLlama-1.1B shape: 1,100,048,384 parameters, input embedding 32000 x 2048 = 65,536,000.
    n = 1_100_048_384 - 65_536_000
    hand = 6 * 1_034_512_384 + 12 * 22 * 2048 * 2048  # 6,207,074,304 + 1,107,296,256
    assert hand == 7_314_370_560
    got = flops_per_token(mode="full", n_non_embedding=n, n_layers=22, hidden=2048, seq_len=2048)
    assert got == hand
    # The reference run: 60,433 tokens/s against 989 TFLOP/s -> 0.447 (h200-plain-torch-2026-12-02.json)
    assert mfu(60_433, got, 989.0) == pytest.approx(60_433 * 7_314_370_560 / 989e12)
    assert round(mfu(60_433, got, 989.0), 3) == 0.447


def test_lora_counts_4n_base_plus_6n_adapters_plus_attention():
    hand = 4 * 1000 + 6 * 10 + 12 * 2 * 8 * 16
    assert flops_per_token(mode="lora", n_non_embedding=1000, n_layers=2, hidden=8, seq_len=16,
                           n_lora=10) == hand


def test_mfu_is_none_without_a_peak_or_when_impossible():
    assert mfu(1000.0, 1e9, None) is None
    assert mfu(None, 1e9, 989.0) is None
    assert mfu(1e6, 1e12, 989.0) is None  # > 100%: a wrong peak, stored as NULL


@pytest.mark.parametrize("kw,match", [({"mode": "full", "n_non_embedding": 0}, "n_non_embedding"),
                                      ({"mode": "lora", "n_lora": 0}, "n_lora"),
                                      ({"mode": "dpo"}, "mode")])
def test_bad_inputs_name_the_field(kw, match):
    base = {"mode": "full", "n_non_embedding": 10, "n_layers": 1, "hidden": 1, "seq_len": 1}
    with pytest.raises(ValueError, match=match):
        flops_per_token(**{**base, **kw})
