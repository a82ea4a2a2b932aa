"""The fine-tune benchmark on CPU: tiny preset end to end, out-of-memory in the search, precision choice, energy NULLs.

Every record and attempt is validated against the bundle's Finetune/Attempt models.
"""

import time

import pytest
import torch

from tasks.bundle import Attempt, Finetune
from tasks.probe.finetune import presets as fpresets
from tasks.probe.finetune.plan import candidates
from tasks.probe.finetune.run import FinetuneOptions, classify, run_finetunes
from tasks.probe.finetune.train import ProbeTimeout, NonFiniteLoss, choose_precision, make_scaler
from tasks.probe.host.nvml import Sampler

FAST = {"steps": 2, "warmup_steps": 1, "warmup_min_s": 0.0, "num_workers": 0}


def _valid(fts, atts):
    for r in fts:
        Finetune.model_validate(r)
    for a in atts:
        Attempt.model_validate(a)


@pytest.mark.timed  # the quick profile's 60 s budget, on this box: measured alone, not beside the heavy tests
def test_tiny_finishes_within_60s_with_falling_loss_and_valid_records():
    t0 = time.perf_counter()
    sampler = Sampler(t0=time.time()).start()  # no NVML on this host: telemetry empty, energy NULL
    try:
        fts, atts = run_finetunes(["tiny"], device="cpu", sampler=sampler, budget_s=60,
                                  options={"steps": 6, "warmup_steps": 2, "warmup_min_s": 0.0, "num_workers": 2})
    finally:
        sampler.stop()
    wall = time.perf_counter() - t0
    _valid(fts, atts)
    r = fts[0]
    assert wall <= 60, wall
    assert r["status"] == "ok" and r["precision"] == "fp32" and r["mode"] == "full"
    assert r["loss_last"] < r["loss_first"]
    assert len(r["step_time_s"]) == r["steps_timed"] == 6
    assert r["tokens_per_s"] == pytest.approx(4 * 256 / r["step_time_median_s"])
    assert r["mfu"] is None and r["peak_tflops"] is None  # no known CPU peak: NULL, not a guess
    for k in ("energy_j", "j_per_token", "kwh_per_mtok", "conditions", "peak_mem_allocated_gib"):
        assert r[k] is None, k
    assert [a["state"] for a in atts] == ["completed"] and atts[0]["task"] == "finetune:tiny"


@pytest.mark.slow  # trains the tiny preset
def test_steady_rule_fills_windows_and_flags_unstable_when_never_settled():
    rule = {"window_s": 0.001, "min_windows": 3, "max_s": 0.3, "tolerance": 1e-9}  # unreachable tolerance
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=60,
                              options={**FAST, "steps": None, "steady": rule})
    _valid(fts, atts)
    r = fts[0]
    assert r["status"] == "unstable" and r["steady"] is False
    assert len(r["window_tokens_per_s"]) == r["steps_timed"] >= 1  # every step closes a 1 ms window


def test_tokens_per_s_comes_from_the_steady_part_of_the_window():
    from tasks.probe.finetune.steady import steady_steps

    # 9 windows of 2 steps; the first third (3 windows, 6 steps) is the transient
    assert steady_steps([0.5] * 6 + [1.0] * 12, [2] * 9) == [1.0] * 12
    assert steady_steps([0.5, 1.0], []) == [0.5, 1.0]  # fixed steps: every step counts


@pytest.mark.slow  # trains the tiny preset
def test_injected_oom_drops_candidates_in_their_trials_and_halves_only_when_none_fit():
    """Out of memory in a trial drops that configuration, it is not a failed attempt (issue 35); only
    when every candidate is out of memory are they tried at half the micro-batch, down to 1."""
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=60,
                              options={**FAST, "inject_oom_above": 1, "trial_s": 0.05})
    _valid(fts, atts)
    assert [(a["state"], a["error_kind"], a["attempt"]) for a in atts] == [("completed", None, 1)]
    r = fts[0]
    assert r["status"] == "ok" and r["micro_batch"] == 1 and r["activation_checkpointing"] is False
    tried = {(c["micro_batch"], c["activation_checkpointing"]): c for c in r["configs_tried"]}
    for key in ((4, False), (4, True), (2, False), (2, True)):
        assert tried[key]["outcome"] == "dropped" and "out of memory" in tried[key]["reason"], key
    assert tried[(1, False)]["outcome"] == "chosen"
    assert tried[(1, True)]["outcome"] == "dropped" and "dominated" in tried[(1, True)]["reason"]


@pytest.mark.slow  # trains the tiny preset
def test_nothing_fits_is_not_applicable_not_a_failure():
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=60,
                              options={**FAST, "inject_oom_above": 0, "activation_checkpointing": True})
    _valid(fts, atts)
    assert fts[0]["status"] == "not_applicable" and fts[0].get("tokens_per_s") is None
    assert [(a["state"], a["error_kind"]) for a in atts] == [("not_applicable", "oom")]
    for mb in (4, 2, 1):  # every micro-batch it tried is named
        assert f"micro-batch {mb}, checkpointing on" in atts[0]["message"], mb


def test_precision_choice_by_capability():
    assert choose_precision("cuda", (7, 0))[0] == "fp16" and "GradScaler" in choose_precision("cuda", (7, 0))[1]
    assert choose_precision("cuda", (7, 5))[0] == "fp16"  # T4: no bf16 tensor cores either
    assert choose_precision("cuda", (8, 6))[0] == "bf16"  # A10
    assert choose_precision("cuda", (9, 0))[0] == "bf16"  # H100/H200
    assert choose_precision("cpu", None)[0] == "fp32"
    assert isinstance(make_scaler("fp16", "cpu"), torch.amp.GradScaler) and make_scaler("bf16", "cuda") is None
    assert fpresets.param_dtypes("full", "fp16") == (torch.float32, torch.float32)  # fp32 master weights


@pytest.mark.timed  # trains within the same 60 s budget
def test_fp16_gradscaler_path_trains():
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=60, options={**FAST, "precision": "fp16"})
    _valid(fts, atts)
    assert fts[0]["status"] == "ok" and fts[0]["precision"] == "fp16"


class _FakeWindow:
    duration_s = 10.0

    def __enter__(self):
        return self

    def __exit__(self, *a):
        pass

    def energy_j(self):
        return 123.0

    def conditions(self):
        return {"power_w_median": 300.0, "throttle_reasons": ["sw_power_cap"]}


class _FakeSampler:
    phases: list = []

    def set_phase(self, name):
        self.phases.append(name)

    def window(self):
        return _FakeWindow()


@pytest.mark.slow  # trains the tiny preset
def test_energy_per_token_from_the_window():
    s = _FakeSampler()
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=s, budget_s=60, options={**FAST, "steps": 4})
    _valid(fts, atts)
    r = fts[0]
    tokens = 4 * 4 * 256
    assert r["energy_j"] == 123.0 and r["j_per_token"] == pytest.approx(123.0 / tokens)
    assert r["kwh_per_mtok"] == pytest.approx(123.0 / tokens * 1e6 / 3.6e6)
    assert r["conditions"]["throttle_reasons"] == ["sw_power_cap"] and "finetune:tiny" in s.phases


def test_new_presets_are_not_applicable_on_cpu_with_reasons_and_bad_options_name_the_field():
    fts, atts = run_finetunes(["8b-qlora", "bert-large"], device="cpu", sampler=None, budget_s=5)
    _valid(fts, atts)
    assert [f["status"] for f in fts] == [a["state"] for a in atts] == ["not_applicable"] * 2
    assert "needs a CUDA GPU" in fts[0]["message"] and "needs a CUDA GPU" in fts[1]["message"]
    with pytest.raises(ValueError, match="micro_batch"):
        FinetuneOptions.from_dict({"micro_batch": 0})
    with pytest.raises(ValueError, match="bogus"):
        FinetuneOptions.from_dict({"bogus": 1})
    with pytest.raises(ValueError, match="unknown fine-tune preset"):
        run_finetunes(["13b"], device="cpu", sampler=None, budget_s=5)


def test_classify_failures():
    assert classify(torch.OutOfMemoryError("CUDA out of memory")) == ("failed", "oom")
    assert classify(ProbeTimeout("x")) == ("failed", "timeout")
    assert classify(NonFiniteLoss("nan")) == ("failed", "other")
    assert classify(RuntimeError("CUDA error: an illegal memory access was encountered")) == ("failed", "cuda_error")
    assert classify(KeyError("boom")) == ("crashed", "crash")
    wrapped = RuntimeError("compile failed")
    wrapped.__cause__ = torch.OutOfMemoryError("out of memory")
    assert classify(wrapped) == ("failed", "oom")


def test_candidates_for_small_and_large_cards(monkeypatch):
    """Candidates from the memory model alone: both configurations where checkpointing reaches a
    bigger micro-batch, the dominated one marked where it does not, none where nothing fits."""
    for gib, precision in ((22.0, "bf16"), (31.7, "fp16")):  # A10, V100-sized
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda d, g=gib: (g * 2**30, g * 2**30))
        cands = candidates(fpresets.get_preset("1b"), precision, torch.device("cuda", 0), FinetuneOptions())
        plain, ckpt = cands
        assert not plain.checkpointing and ckpt.checkpointing and not ckpt.dominated, (gib, cands)
        assert ckpt.micro_batch > plain.micro_batch and ckpt.micro_batch >= 4, (gib, cands)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda d: (139 * 2**30, 139 * 2**30))
    plain, ckpt = candidates(fpresets.get_preset("1b"), "bf16", torch.device("cuda", 0), FinetuneOptions())
    assert (plain.checkpointing, plain.micro_batch, ckpt.checkpointing, ckpt.micro_batch) == (False, 16, True, 16)
    assert ckpt.dominated and not plain.dominated
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda d: (22 * 2**30, 22 * 2**30))
    assert candidates(fpresets.get_preset("7b-full"), "bf16", torch.device("cuda", 0), FinetuneOptions()) == []


def test_build_preset_meta_counts_match_the_tinyllama_shape():
    model, cfg, meta = fpresets.build_preset("1b", "meta", precision="bf16")
    assert meta["params_total"] == 1_100_048_384 and meta["params_non_embedding"] == 1_034_512_384
    assert cfg.num_hidden_layers == 22 and cfg.hidden_size == 2048 and meta["params_lora"] == 0


@pytest.mark.slow  # trains the tiny preset
def test_local_checkpoint_and_tokenizer_dirs(tmp_path):
    """--model PATH fine-tunes a saved local checkpoint with its own tokenizer; no hub access."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    model, _, _ = fpresets.build_preset("tiny", "cpu")
    ckpt = tmp_path / "my-llama"
    model.save_pretrained(ckpt)
    from tasks.probe.finetune.data import generate_sample

    words = sorted({w for r in generate_sample(40)
                    for w in " ".join(r.values()).split()})
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(words[:400])}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(ckpt)
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=60, options={**FAST, "model": str(ckpt)})
    _valid(fts, atts)
    assert fts[0]["status"] == "ok" and fts[0]["model_source"] == "my-llama"
    assert fpresets.tokenizer_dir(str(ckpt)) == str(ckpt)
    with pytest.raises(ValueError, match="--model must be a local"):
        run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=5, options={"model": str(tmp_path / "none")})


def test_energy_window_picks_the_finetune_gpu_by_uuid(monkeypatch):
    from types import SimpleNamespace

    from tasks.probe.finetune.run import _nvml_gpus

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: SimpleNamespace(uuid="bbb-2"))
    nv = SimpleNamespace(nvmlDeviceGetUUID=lambda h: f"GPU-{h}")
    two = SimpleNamespace(nv=nv, handles=["aaa-1", "bbb-2"])
    assert _nvml_gpus(two, torch.device("cuda", 1)) == [1]
    assert _nvml_gpus(SimpleNamespace(nv=nv, handles=["bbb-2"]), torch.device("cuda", 0)) is None
    assert _nvml_gpus(two, torch.device("cpu")) is None and _nvml_gpus(None, torch.device("cuda", 0)) is None
