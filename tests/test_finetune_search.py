"""Each card at its best (issue 35): candidates, trials, a pinned run, and what the warehouse and the
target page make of the search, including bundles from before it ("configuration not searched").

    .venv/bin/pytest -q tests/test_finetune_search.py
"""

from __future__ import annotations

import json

import pytest
import torch

from tasks.bundle import Finetune
from tasks.probe.finetune import presets as fpresets
from tasks.probe.finetune.plan import candidates
from tasks.probe.finetune.record import FinetuneOptions
from tasks.probe.finetune.run import run_finetunes
from tests.factories import bundle_doc, write_bundle

FAST = {"steps": 2, "warmup_steps": 1, "warmup_min_s": 0.0, "num_workers": 0, "trial_s": 0.05}
TINY = fpresets.get_preset("tiny")


def _gib(ck: bool, mb: int) -> float:
    return fpresets.estimate_bytes(TINY, mb, precision="fp32", checkpointing=ck) / 2**30


def _budget() -> float:
    """A memory budget in which tiny fits micro-batch 2 without checkpointing and 4 with it."""
    assert _gib(True, 4) < _gib(False, 4)
    return max(_gib(False, 2), _gib(True, 4)) + 0.25 * (_gib(False, 4) - max(_gib(False, 2), _gib(True, 4)))


@pytest.mark.parametrize("opts,want", [
    ({}, [(False, 4, False), (True, 4, True)]),  # plain reaches the top: checkpointing is dominated
    ({"memory_budget_gib": "split"}, [(False, 2, False), (True, 4, False)]),  # both are real candidates
    ({"memory_budget_gib": "split", "search": False}, [(False, 2, False)]),  # the quick profile: one
    ({"micro_batch": 2, "activation_checkpointing": True}, [(True, 2, False)]),  # pinned: exactly that
    ({"activation_checkpointing": True, "memory_budget_gib": "split"}, [(True, 4, False)]),  # half pinned
    ({"memory_budget_gib": 0.001}, []),  # nothing fits the card at all
])
def test_candidates_are_what_the_memory_model_says_fits(opts, want):
    if opts.get("memory_budget_gib") == "split":
        opts = dict(opts, memory_budget_gib=_budget())
    got = candidates(TINY, "fp32", torch.device("cpu"), FinetuneOptions(**opts))
    assert [(c.checkpointing, c.micro_batch, c.dominated) for c in got] == want


@pytest.mark.slow  # trains the tiny preset
def test_both_candidates_trialled_and_the_faster_measured_every_candidate_recorded():
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=120,
                              options={**FAST, "memory_budget_gib": _budget()})
    r = Finetune.model_validate(fts[0])
    assert r.status == "ok" and r.config_search == "searched" and r.search_s > 0
    tried = {(c.micro_batch, c.activation_checkpointing): c for c in r.configs_tried}
    assert set(tried) == {(2, False), (4, True)}
    assert all(c.tokens_per_s and c.tokens_per_s > 0 for c in tried.values())
    chosen = [c for c in r.configs_tried if c.outcome == "chosen"]
    assert len(chosen) == 1 and [c.outcome for c in r.configs_tried].count("slower") == 1
    assert chosen[0].tokens_per_s == max(c.tokens_per_s for c in r.configs_tried)  # the fastest trial runs
    assert (r.micro_batch, r.activation_checkpointing) == (chosen[0].micro_batch, chosen[0].activation_checkpointing)
    assert [a["state"] for a in atts] == ["completed"]


@pytest.mark.slow  # trains the tiny preset
def test_a_candidate_out_of_memory_in_its_trial_is_dropped_and_named_never_a_failure():
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=120,
                              options={**FAST, "memory_budget_gib": _budget(), "inject_oom_above": 2})
    r = Finetune.model_validate(fts[0])
    assert r.status == "ok" and (r.micro_batch, r.activation_checkpointing) == (2, False)
    dropped = [c for c in r.configs_tried if c.outcome == "dropped"]
    assert [(c.micro_batch, c.activation_checkpointing) for c in dropped] == [(4, True)]
    assert "out of memory" in dropped[0].reason and dropped[0].tokens_per_s is None
    assert [(a["state"], a["error_kind"]) for a in atts] == [("completed", None)]  # no failed attempt: R unchanged


@pytest.mark.slow  # trains the tiny preset
def test_a_pinned_configuration_runs_exactly_that_and_out_of_memory_is_not_applicable():
    fts, _ = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=120,
                           options={**FAST, "micro_batch": 2, "activation_checkpointing": True})
    r = Finetune.model_validate(fts[0])
    assert r.status == "ok" and r.config_search == "pinned"
    assert (r.micro_batch, r.activation_checkpointing) == (2, True)
    assert [(c.micro_batch, c.activation_checkpointing, c.outcome) for c in r.configs_tried] == [(2, True, "chosen")]
    fts, atts = run_finetunes(["tiny"], device="cpu", sampler=None, budget_s=120,
                              options={**FAST, "micro_batch": 4, "activation_checkpointing": False,
                                       "inject_oom_above": 2})
    assert fts[0]["status"] == "not_applicable" and "micro-batch 4, checkpointing off" in fts[0]["message"]
    assert [(a["state"], a["error_kind"]) for a in atts] == [("not_applicable", "oom")]  # never halved


def test_the_cli_refuses_a_bad_pin_with_exit_2(capsys):
    from tasks.probe.__main__ import main

    assert main(["--profile", "quick", "--micro-batch", "0", "--out", "/nonexistent-never-written"]) == 2
    assert "micro_batch" in capsys.readouterr().err


def test_search_results_land_and_old_bundles_show_configuration_not_searched(tmp_path):
    """The warehouse keeps every candidate; the target page shows them, and a bundle from before the search
    lands as before and reads "configuration not searched"."""
    from reports.pages.target import config_rows
    from tasks.landing.land import land_paths
    from warehouse import sql
    from warehouse.db import connect

    tried = [{"micro_batch": 2, "activation_checkpointing": False, "compile": False, "estimated_gib": 47.4,
              "outcome": "chosen", "tokens_per_s": 11200.0, "peak_mem_allocated_gib": 44.0,
              "reason": "fastest trial"},
             {"micro_batch": 4, "activation_checkpointing": True, "compile": False, "estimated_gib": 32.3,
              "outcome": "slower", "tokens_per_s": 8300.0, "peak_mem_allocated_gib": 30.1, "reason": None},
             {"micro_batch": 4, "activation_checkpointing": False, "compile": False, "estimated_gib": 72.0,
              "outcome": "dropped", "tokens_per_s": None, "peak_mem_allocated_gib": None,
              "reason": "out of memory in its trial: CUDA out of memory"}]
    new = bundle_doc(target="new-box", seq=1)
    new = bundle_doc(target="new-box", seq=1, finetune=[dict(new["finetune"][0], micro_batch=2,
                                                             config_search="searched", configs_tried=tried,
                                                             search_s=12.5)])
    old = bundle_doc(target="old-box", seq=2)
    write_bundle(tmp_path / "in", new)
    write_bundle(tmp_path / "in", old)
    con = connect(str(tmp_path / "w.duckdb"))
    try:
        land_paths(con, [str(tmp_path / "in")], source="test")
        rows = {r["target"]: r for r in sql.rows(con, "report_finetune_configs")}
    finally:
        con.close()
    assert rows["new-box"]["config_search"] == "searched" and rows["new-box"]["search_s"] == 12.5
    assert json.loads(rows["new-box"]["configs_tried"]) == tried
    assert rows["old-box"]["config_search"] is None
    shown = config_rows([rows["new-box"]])
    assert [r["configuration"] for r in shown] == ["micro-batch 2, checkpointing off",
                                                   "micro-batch 4, checkpointing on",
                                                   "micro-batch 4, checkpointing off"]
    assert shown[0]["trial_tokens_per_s"] == 11200.0 and "out of memory" in shown[2]["reason"]
    assert shown[0]["tokens_per_s"] == rows["new-box"]["tokens_per_s"] and shown[1]["tokens_per_s"] is None
    (legacy,) = config_rows([rows["old-box"]])
    assert legacy["found"] == "configuration not searched" and legacy["configuration"] == "micro-batch 4, checkpointing off"
