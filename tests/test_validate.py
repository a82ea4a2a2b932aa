"""The GX suites on their own (real Great Expectations over pandas frames, no warehouse):
table-driven, one broken bundle per rule, in one batch with a good one."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tasks.bundle import FUTURE_SKEW, parse_bundle
from tasks.canonical import canonical_json
from tasks.landing.frames import FrameBatch, run_status
from tasks.landing.validate import _suites, describe, validate_frames
from tests.factories import bundle_doc

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def _frames(*docs):
    batch = FrameBatch(landed_at=NOW, skew=FUTURE_SKEW)
    for d in docs:
        batch.add(parse_bundle(canonical_json(d), now=NOW), "mem.json", "{}")
    return batch.frames()


def _ft(**changes):
    ft = dict(bundle_doc()["finetune"][0])
    ft.update(changes)
    return [ft]


def _m(**changes):
    m = {"benchmark": "membw", "metric": "copy_gbps", "value": 10.0, "unit": "GB/s", "repeats": 3,
         "statistic": "median"}
    m.update(changes)
    return [m]


def _tel(**changes):
    tel = {"t": [0.0, 1.0], "gpu": [0, 0], "util": [1.0, 2.0], "mem_util": [1.0, 1.0],
           "power_w": [10.0, 10.0], "sm_clock_mhz": [900.0, 900.0], "temp_c": [40.0, 40.0]}
    tel.update(changes)
    return tel


CASES = [
    (dict(finetune=_ft(step_time_p10_s=0.6, step_time_median_s=0.5)), "finetunes", "step_time_median_s>=step_time_p10_s"),
    (dict(finetune=_ft(step_time_p90_s=0.4, step_time_median_s=0.5)), "finetunes", "step_time_p90_s>=step_time_median_s"),
    (dict(finetune=_ft(device="cuda", peak_mem_reserved_gib=30.0),
          environment=dict(bundle_doc()["environment"], gpu_name="NVIDIA A10G", gpu_count=1, gpu_memory_gib=24.0)),
     "finetunes", "mem_fraction"),
    (dict(measurements=_m(value=700.0, peak=600.0)), "measurements", "efficiency"),
    (dict(measurements=_m(value=0.0)), "measurements", "rate_value"),
    (dict(measurements=_m(benchmark="feed", metric="wait_share", value=1.5, unit="share")), "measurements",
     "share_value"),
    (dict(measurements=_m(benchmark="gpu_busy", metric="util_mean_pct", value=101.0, unit="%")), "measurements",
     "pct_value"),
    (dict(measurements=_m(benchmark="storage", metric="read4k_qd1_p50_ms", value=0.0, unit="ms")), "measurements",
     "ms_value"),
    (dict(measurements=_m(benchmark="storage", metric="io_uring", value=0.5, unit="bool")), "measurements",
     "bool_value"),
    (dict(measurements=_m(benchmark="sharing", metric="sharing_gain", value=-1.0, unit="fraction")), "measurements",
     "gain_value"),
    (dict(telemetry=_tel(mem_util=[1.0, -2.0])), "telemetry", "mem_util"),
    (dict(telemetry=_tel(temp_c=[40.0, 400.0])), "telemetry", "temp_c"),
    (dict(telemetry=_tel(power_w=[10.0, -1.0])), "telemetry", "power_w"),
    (dict(telemetry=_tel(t=[0.0, 9999.0])), "telemetry", "duration_s>=t"),
    (dict(attempts=[{"task": "gemm", "attempt": 1, "state": "completed", "duration_s": 1.0,
                     "started_at": "2026-11-03T00:00:00Z"}]), "attempts", "run_latest_ok>=started_at"),
    (dict(environment=dict(bundle_doc()["environment"], gpu_name="A10\\G", gpu_count=1)), "environments", "gpu_name"),
]


@pytest.mark.parametrize("changes, suite, column", CASES, ids=[f"{s}.{c}" for _, s, c in CASES])
def test_each_rule_names_its_column(changes, suite, column):
    good, bad = bundle_doc(seq=1), bundle_doc(seq=2, **changes)
    out = validate_frames(_frames(good, bad), now=NOW)
    assert set(out.failed) == {bad["bundle_id"]}
    failed = {(f["suite"], f["column"]) for f in out.failed[bad["bundle_id"]]}
    assert failed == {(f"costgap.{suite}", column)}
    assert f"{suite}.{column}" in describe(out.failed[bad["bundle_id"]])
    rows = out.rows
    mine = rows[rows["run_id"] == good["bundle_id"]]
    assert len(mine) and mine["success"].all()  # the good bundle's results are stored as passes


def test_result_rows_cover_every_expectation_per_run_and_batch():
    out = validate_frames(_frames(bundle_doc(seq=1, telemetry=_tel()), bundle_doc(seq=2, telemetry=_tel())), now=NOW)
    n_rules = sum(len(rules) for rules in _suites().values())
    rows = out.rows
    assert len(rows[rows["run_id"].isna()]) == n_rules  # one batch-level row per expectation
    assert len(rows) == 3 * n_rules and rows["success"].all() and out.failed == {}
    assert rows["validation_id"].nunique() == 1


@pytest.mark.parametrize("attempts, finetune, status", [
    ([("gemm", 1, "completed"), ("finetune", 1, "failed"), ("finetune", 2, "completed")], "ok", "ok"),
    ([("gemm", 1, "completed"), ("finetune", 1, "skipped")], "skipped", "ok"),
    ([("gemm", 1, "completed"), ("finetune", 1, "failed")], "failed", "partial"),
    ([("gemm", 1, "completed")], "unstable", "partial"),
    ([("gemm", 1, "crashed")], None, "failed"),
])
def test_run_status(attempts, finetune, status):
    rows = [{"task": t, "attempt": a, "state": s, "duration_s": 1.0,
             **({"error_kind": "oom"} if s in ("failed", "crashed") else {})} for t, a, s in attempts]
    ft = [] if finetune is None else _ft(status=finetune, **({"tokens_per_s": None} if finetune in ("failed", "skipped") else {}))
    doc = bundle_doc(attempts=rows, finetune=ft, measurements=[] if status == "failed" else bundle_doc()["measurements"])
    assert run_status(parse_bundle(canonical_json(doc), now=NOW)) == status


@pytest.mark.parametrize("changes", [{}, CASES[0][0], CASES[4][0], CASES[10][0], CASES[-1][0]],
                         ids=["all-pass", "finetunes", "measurements", "telemetry", "environments"])
def test_the_verdict_first_pass_keeps_every_result_of_the_full_one(changes, monkeypatch):
    """validate_frames runs each suite for its verdict (BOOLEAN_ONLY) and in full only when it fails: the
    rows and failures must be those of running every suite in full, for a batch that passes and for each
    table's failure."""
    from tasks.landing import validate

    frames = _frames(bundle_doc(seq=1, telemetry=_tel()), bundle_doc(seq=2, **changes))
    quick = validate_frames(frames, now=NOW)
    monkeypatch.setattr(validate, "PASS_FORMAT", validate.FAIL_FORMAT)
    full = validate_frames(frames, now=NOW)
    assert quick.failed == full.failed and (quick.failed != {}) == bool(changes)
    drop = ["validation_id"]
    assert quick.rows.drop(columns=drop).equals(full.rows.drop(columns=drop))
