"""Change detection on synthetic histories: a planted 10% shift at an environment change is found;
pure noise raises no more false alarms than the chosen level, over many seeds. Plus the warehouse path.

    .venv/bin/pytest -q tests/test_changepoint.py
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from tasks.cost.changepoint import DetectConfig, detect, scan, window_shift
from tests.cost_support import T0, add_env, add_run, add_target, warehouse

OLD = {"driver": "550.54", "cuda_driver": "12.4", "cuda_runtime": "12.4", "cudnn": "9.1", "torch": "2.5.1",
       "container_image": "costgap:1"}
NEW = {**OLD, "cuda_runtime": "12.2", "container_image": "costgap:2"}
NOISE_CV = 0.02  # run-to-run spread of tokens/s on a quiet host (issue 10: steady runs spread <= 1-2%)


def history(seed: int, shift: float, n_before: int = 15, n_after: int = 15) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_before + n_after):
        after = i >= n_before
        x = 60_000.0 * (1 + shift if after else 1.0) * np.exp(rng.normal(0, NOISE_CV))
        rows.append({"run_id": f"r{i}", "target": "t", "preset": "1b", "tokens_per_s": float(x),
                     "started_at": datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=i),
                     **(NEW if after else OLD)})
    return rows


def test_planted_ten_percent_shift_is_found_with_size_confidence_and_fields():
    cfg = DetectConfig()
    for seed in range(50):
        found = scan(history(seed, -0.10), cfg, np.random.default_rng(seed))
        assert len(found) == 1
        f = found[0]
        assert f["significant"] and f["p_value"] < cfg.alpha and f["confidence"] > 0.99
        assert f["shift_lo"] <= f["shift"] <= f["shift_hi"] and abs(f["shift"] + 0.10) < 0.02
        assert {c["field"] for c in f["changed"]} == {"cuda_runtime", "container_image"}
        assert (f["runs_before"], f["runs_after"], f["run_after"]) == (15, 15, "r15")
    assert "cuda_runtime 12.4 -> 12.2" in f["summary"] and "-1" in f["summary"]


def test_pure_noise_raises_no_false_alarm_at_the_chosen_level_over_many_seeds():
    seeds = 300
    cfg = DetectConfig()
    alarms = sum(scan(history(s, 0.0), cfg, np.random.default_rng(s))[0]["significant"] for s in range(seeds))
    assert alarms == 0  # alpha = 0.01 and |shift| >= 2%: noise of 2% CV never reaches both
    # The permutation test alone (no minimum size) is calibrated: about alpha of the seeds, not more.
    raw = DetectConfig(min_shift=0.0, permutations=1000)
    pvals = np.array([scan(history(s, 0.0), raw, np.random.default_rng(s))[0]["p_value"] for s in range(seeds)])
    assert np.mean(pvals < 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / seeds)
    assert np.mean(pvals < 0.01) <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / seeds)


def test_no_environment_change_or_too_few_runs_means_no_test():
    cfg = DetectConfig()
    same = [dict(r, **OLD) for r in history(1, -0.2)]
    assert scan(same, cfg, np.random.default_rng(0)) == []
    assert scan(history(1, -0.2, n_before=2), cfg, np.random.default_rng(0)) == []
    with pytest.raises(Exception, match="alpha"):
        DetectConfig(alpha=1.5)


def test_detect_reads_the_warehouse_and_gap_shows_it(tmp_path):
    con = warehouse(tmp_path / "w.duckdb")
    add_target(con, "A", "p", "r", "i")
    add_target(con, "B", "p", "r", "j")
    add_env(con, "old", cuda_runtime="12.4")
    add_env(con, "new", cuda_runtime="12.2")
    rng = np.random.default_rng(3)
    for i in range(20):
        env = "new" if i >= 10 else "old"
        factor = 0.89 if i >= 10 else 1.0  # "the CUDA 12.2 image costs us 11%"
        add_run(con, f"a{i}", "A", T0 + timedelta(days=i), 1000.0 * factor * np.exp(rng.normal(0, 0.02)),
                environment_id=env)
        add_run(con, f"b{i}", "B", T0 + timedelta(days=i), 800.0 * np.exp(rng.normal(0, 0.02)))
    found = detect(con)
    assert [(f["target"], f["preset"]) for f in found] == [("A", "1b")]
    assert found[0]["changed"] == [{"field": "cuda_driver", "before": "12.4", "after": "12.2"},
                                   {"field": "cuda_runtime", "before": "12.4", "after": "12.2"}]
    assert -0.14 < found[0]["shift"] < -0.08
    assert len(detect(con, only_significant=False)) == 1
    assert detect(con, targets=["B"]) == []
    from tasks.cost.table import gap
    con.execute("insert into prices values ('p', 'r', 'i', 'on_demand', 'USD', 2.0, 2.0, 'hour', ?, null, 't', ?, ?,"
                " 'x'), ('p', 'r', 'j', 'on_demand', 'USD', 1.0, 1.0, 'hour', ?, null, 't', ?, ?, 'x')",
                [T0, T0, T0, T0, T0, T0])
    g = gap(con, "A", "B", as_of=T0 + timedelta(days=25))
    assert len(g["changes"]) == 1 and g["changes"][0]["target"] == "A"


@pytest.mark.parametrize("shift, expected", [(0.10, True), (0.0, False), (0.01, False)])
def test_window_shift_between_two_windows(shift, expected):
    """The same test between two windows' runs (the alerts' "throughput shifted"): a 10% step is found, no
    step is not, and a 1% step is below min_shift however sure the test is; too few runs: no test."""
    rng = np.random.default_rng(3)
    before = 60_000.0 * np.exp(rng.normal(0, NOISE_CV / 4, 12))
    after = 60_000.0 * (1 + shift) * np.exp(rng.normal(0, NOISE_CV / 4, 12))
    got = window_shift(before, after)
    assert got["significant"] is expected and got["shift_lo"] <= got["shift"] <= got["shift_hi"]
    assert got["shift"] == pytest.approx(shift, abs=0.01)
    assert window_shift(before[:2], after) is None
