"""The one memory model (tasks/probe/finetune/memory.py): the probe's plan, the estimator and the tiers read it.

    .venv/bin/pytest -q tests/test_memory_model.py
"""

from __future__ import annotations

import pytest

from tasks.probe.finetune import memory


@pytest.mark.parametrize("mode", memory.MODES)
@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp32"])
def test_bytes_are_the_probes_dtypes(mode, precision):
    from tasks.probe.finetune import presets

    base, train = presets.param_dtypes(mode, precision)
    assert memory.param_bytes(mode, precision) == (base.itemsize, train.itemsize)


@pytest.mark.parametrize("precision, per_param", [("bf16", 8.0), ("fp16", 16.0), ("fp32", 16.0)])
def test_full_fine_tune_bytes_per_param(precision, per_param):
    assert memory.full_bytes_per_param(precision) == per_param  # the 7b-full preset: 8 B/param in bf16
    assert memory.state_bytes("full", precision, params_total=7e9) == 7e9 * per_param


@pytest.mark.parametrize("name", ["1b", "8b-lora", "8b-qlora", "bert-large"])
def test_the_probes_plan_holds_the_same_state(name):
    """presets.estimate_bytes is state + micro-batch x activations + slack: its state is the memory model's."""
    from tasks.probe.finetune import presets

    p = presets.PRESETS[name]
    e1, e2 = (presets.estimate_bytes(p, mb, precision="bf16", checkpointing=False) for mb in (1, 2))
    state = 2 * e1 - e2 - 1.5e9
    h, f, kv = p.hidden, p.ffn, p.hidden * p.kv_heads / p.heads
    if p.arch == "bert":
        n_proj, n_other = p.layers * (4 * h * h + 2 * h * f), (p.vocab + 514) * h
    else:
        n_proj, n_other = p.layers * (2 * h * h + 2 * h * kv + 3 * h * f), 2 * p.vocab * h
    n_lora = 0 if p.mode == "full" else p.layers * p.lora_r * (9 * h + 3 * f + 2 * kv)
    want = memory.state_bytes(p.mode, "bf16", params_total=n_proj + n_other + n_lora, params_trainable=n_lora,
                              params_quantized=n_proj)
    assert state == pytest.approx(want, rel=1e-9)


def test_the_estimator_holds_the_same_state():
    from tasks.estimate import calibrate as cal_

    w = cal_.Workload("x", "H200", "t", "qlora", "bf16", 2048, 1, 1.0, 8e9, 4e7, 7e9, 30.0, 1000.0)
    assert w.state_bytes("bf16") == memory.state_bytes("qlora", "bf16", params_total=8e9, params_trainable=4e7,
                                                       params_quantized=7e9)
    full = cal_.Workload("x", "V100", "t", "full", "fp16", 2048, 1, 1.0, 1e9, 1e9, 9e8, 30.0, 1000.0)
    assert full.state_bytes("fp16") == 16e9 and full.state_bytes("bf16") == 8e9


def test_bad_mode_or_precision_names_the_field():
    with pytest.raises(ValueError, match="precision = 'int8'"):
        memory.param_bytes("full", "int8")
    with pytest.raises(ValueError, match="mode = 'dora'"):
        memory.state_bytes("dora", "bf16", params_total=1.0)
