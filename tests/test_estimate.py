"""The estimator (issue 25): no datasheet -> no number, precision and memory fit, never in a measured figure,
scored when measured, and `costgap estimate --json` on a real warehouse.

    .venv/bin/pytest -q tests/test_estimate.py
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.estimate import calibrate as cal_
from tasks.estimate import estimate as est
from tasks.estimate import estimate_track as track
from tasks.estimate.candidates import candidates
from tasks.cost.table import cost_table, gap_history, options
from tests.bench.bench_estimate import calibration


@pytest.fixture(scope="module")
def cal() -> cal_.Calibration:
    return calibration()  # the committed H200 samples, landed into a fresh warehouse


def test_no_datasheet_entry_means_no_number(cal):
    p = est.predict(cal.reference["1b"], cal_.match_gpu("Radeon Instinct MI300X"), 1, cal, "Radeon Instinct MI300X")
    assert p.tokens_per_s is None and p.lo is None and "no datasheet entry" in p.reason
    assert est.price_row(p, 2.0, 1.0)["cost_per_mtok"] is None


@pytest.mark.parametrize("gpu,precision,fit", [("V100", "fp16", "smaller micro-batch"), ("A10", "bf16", "smaller micro-batch"),
                                               ("H200", "bf16", "as measured")])
def test_precision_and_fit(cal, gpu, precision, fit):
    p = est.predict(cal.reference["1b"], cal_.match_gpu(gpu), 1, cal, gpu)
    assert p.precision == precision and p.fit == fit
    assert p.lo < p.tokens_per_s < p.hi and len(p.assumptions) >= 6
    if precision == "fp16":
        assert any("no bf16" in a for a in p.assumptions)


def test_checkpointing_costs_its_recompute(cal):
    w = cal.reference["8b-lora"]
    p = est.predict(w, cal_.match_gpu("A10"), 1, cal, "A10")
    assert p.fit == "checkpointing" and p.checkpointing and any("recomputing" in a for a in p.assumptions)
    # the same micro-batch without checkpointing would be faster: the recomputed forward is charged
    plain = cal_.step_time(w, cal_.match_gpu("A10"), "bf16", p.micro_batch, False, cal.eff).seconds
    ckpt = cal_.step_time(w, cal_.match_gpu("A10"), "bf16", p.micro_batch, True, cal.eff).seconds
    assert ckpt > plain * 1.3


@pytest.mark.parametrize("preset", ["1b", "8b-lora", "bert-large"])
@pytest.mark.parametrize("gpu", ["A10", "V100", "L4", "A100-SXM4-40GB", "H100-SXM5-80GB", "H200"])
def test_the_estimate_is_the_fastest_configuration_that_fits_and_never_one_that_does_not(cal, preset, gpu):
    """As the probe searches (issue 35): every configuration the memory model says fits is predicted and
    the fastest reported, named in the assumptions; never one the memory model says does not fit."""
    w, sheet = cal.reference[preset], cal_.match_gpu(gpu)
    p = est.predict(w, sheet, 1, cal, gpu)
    if p.tokens_per_s is None:
        assert p.fit == "does not fit"
        return
    usable = sheet.memory_gib * cal_.GIB * est.TIER.memory_headroom
    fits = est.configs(w, p.precision, usable)
    assert (p.micro_batch, p.checkpointing) in fits
    need = w.state_bytes(p.precision) + p.micro_batch * w.seq_len * w.act_bytes_per_token * (
        cal_.CKPT_KEEP if p.checkpointing else 1.0)
    assert need <= usable
    kappa = cal.kappa_for(preset)[0]
    best = max(kappa / cal_.step_time(w, sheet, p.precision, mb, ck, cal.eff).seconds for mb, ck in fits)
    assert p.tokens_per_s == pytest.approx(best)
    named = [a for a in p.assumptions if a.startswith("configuration:")]
    assert named and f"micro-batch {p.micro_batch}, checkpointing {'on' if p.checkpointing else 'off'}" in named[0]


def test_full_fp16_on_a_16_gib_card_does_not_fit(cal):
    p = est.predict(cal.reference["1b"], cal_.match_gpu("T4"), 1, cal, "Tesla T4")
    assert p.precision == "fp16" and p.fit == "does not fit" and p.tokens_per_s is None
    assert "does not fit" in p.reason


def test_does_not_fit_says_so(cal):
    w = cal.reference["8b-lora"]
    tiny = cal_.Sheet("tiny", {"bf16": 100.0, "fp16": 100.0}, 8.0, 300.0, "test sheet", "2026-12-04")
    p = est.predict(w, tiny, 1, cal, "tiny")
    assert p.fit == "does not fit" and p.tokens_per_s is None and "does not fit" in p.reason


def test_loo_and_held_out_scores(cal):
    loo = track.leave_one_out(cal)
    assert {r["preset"] for r in loo["rows"]} >= {"1b", "8b-lora", "bert-large"}
    assert loo["share_inside"] >= 0.8  # the target, on the committed bundles
    held = track.held_out(cal)
    assert held["scored"] == len(track.published()) and all(f["source"] and f["date"] for f in track.published())


def test_checkpointing_bound_matches_the_probe():
    from tasks.probe.finetune import presets

    for name in ("1b", "8b-lora", "bert-large"):  # checkpointing keeps at most CKPT_KEEP of the activations
        p = presets.PRESETS[name]

        def act(ckpt: bool) -> float:  # bytes of one micro-batch's activations (the model is linear in it)
            return (presets.estimate_bytes(p, 2, precision="bf16", checkpointing=ckpt)
                    - presets.estimate_bytes(p, 1, precision="bf16", checkpointing=ckpt))

        assert act(True) / act(False) <= cal_.CKPT_KEEP


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A real warehouse: the committed samples, a price for the H200 target and for an A10 target not yet run."""
    from tasks.landing.land import land_paths
    from tasks.demo import sample_dir
    from tasks.pricing.base import PriceRow
    from tasks.pricing.book import import_rows
    from warehouse.db import connect

    path = tmp_path_factory.mktemp("est") / "w.duckdb"
    con = connect(str(path))
    land_paths(con, [str(sample_dir() / "h200")], source="test")
    con.execute("update targets set provider = 'p', region = 'r', instance_type = 'h200.1x' where target = 'h200-sxm-1x'")
    con.execute("update targets set provider = 'p', region = 'r', instance_type = 'h200dev.1x' where target = 'h200-dev'")
    con.execute("insert into targets (target, provider, region, instance_type, gpu_model, gpu_count) values "
                "('a10-box', 'p', 'r', 'a10.1x', 'A10', 1), ('odd-box', 'p', 'r', 'odd.1x', 'Mystery GPU', 1)")
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    rows = [PriceRow("p", "r", it, "on_demand", "USD", usd, "hour", start, source="test", fetched_at=start)
            for it, usd in (("h200.1x", 3.8), ("h200dev.1x", 3.5), ("a10.1x", 0.75), ("odd.1x", 0.5))]
    import_rows(con, rows, source_kind="test", source="test", fetched_at=start)
    con.close()
    return path


def test_cli_estimate_json_lists_every_type(world):
    res = CliRunner().invoke(app, ["estimate", "--preset", "1b", "--json", "--warehouse", str(world),
                                   "--targets-file", "deploy/targets.toml"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    by = {r["instance_type"]: r for r in rows}
    assert by["h200.1x"]["status"] == "measured" and by["h200.1x"]["lo"] is None  # the measurement, not an estimate
    a10 = by["a10.1x"]
    assert a10["status"] == "estimate" and a10["cost_per_mtok"] > 0 and a10["cost_lo"] < a10["cost_per_mtok"] < a10["cost_hi"]
    assert by["GN10Xp.2XLARGE40"]["precision"] == "fp16" and by["GN10Xp.2XLARGE40"]["fit"] in (
        "smaller micro-batch", "checkpointing")
    assert by["odd.1x"]["status"] == "no estimate" and by["odd.1x"]["tokens_per_s"] is None
    assert "no datasheet entry" in by["odd.1x"]["reason"]


def _measured_surfaces(con, at) -> str:
    """Every measured surface as text: the cost table, gap_history.csv's rows, the leaders and the alerts' decisions."""
    from tasks.alerts.config import AlertConfig
    from tasks.alerts.evaluate import decisions
    from tasks.cost import rules
    from tasks.cost.table import costs, leaders

    span = rules.history(rules.window(con).end)
    hrows, hfigs = costs(con, span, options(), today=at)
    ev = decisions(con, AlertConfig(), at)
    def r9(x):  # DuckDB's threaded sums differ in the last bits between two reads of the same data
        if isinstance(x, float):
            return float(f"{x:.9g}")
        if isinstance(x, dict):
            return {k: r9(v) for k, v in x.items()}
        return [r9(v) for v in x] if isinstance(x, (list, tuple)) else x

    return json.dumps(r9({"cost": cost_table(con, today=at).to_dicts(), "gap_history": gap_history(hrows, hfigs, "h200-dev"),
                       "leaders": leaders(hrows, hfigs), "alerts": [repr(c) for c in ev.changes]}),
                      default=str, sort_keys=True)


def test_estimate_never_enters_measured_figures_and_is_scored_when_measured(world, tmp_path):
    import shutil

    from tasks.landing.land import land_paths
    from tests.factories import bundle_doc, write_bundle
    from warehouse.db import connect

    path = tmp_path / "w.duckdb"
    shutil.copy(world, path)
    con = connect(str(path))
    at = datetime(2026, 12, 3, 12, tzinfo=timezone.utc)  # the run below must not be in the future
    rows = candidates(con, "1b", options(), at)
    assert any(r["target"] == "a10-box" and r["status"] == "estimate" for r in rows)
    before = _measured_surfaces(con, at)
    assert track.record(con, rows, at) >= 1
    after = _measured_surfaces(con, at)
    assert '"gap": 0.' in before or '"gap": -0.' in before
    assert before == after  # recording estimates changes no measured table, gap, gap history or alert
    assert "a10-box" not in after and con.execute("select count(*) from runs where target = 'a10-box'").fetchone()[0] == 0
    # the A10 type is measured later: the estimate is scored, kept, and the measured table shows the measurement
    ft = {"preset": "1b", "status": "ok", "mode": "full", "precision": "bf16", "device": "cuda", "seq_len": 2048,
          "micro_batch": 4, "steps_warmup": 2, "steps_timed": 5, "tokens_per_s": 7000.0, "step_time_s": [1.17] * 5,
          "step_time_median_s": 1.17, "mfu": 0.41, "loss_first": 10.9, "loss_last": 9.0,
          "params_total": 1_100_048_384, "params_trainable": 1_100_048_384, "params_non_embedding": 1_034_512_384}
    d = bundle_doc(target="a10-box", started_at=at + timedelta(hours=12), gpu_name="NVIDIA A10", finetune=[ft])
    bundles = tmp_path / "b"
    bundles.mkdir()
    write_bundle(bundles, d)
    land_paths(con, [str(bundles)], source="test")
    scored = track.score(con, at + timedelta(days=2))
    kept = [r for r in track.track_record(con) if r["target"] == "a10-box" and r["preset"] == "1b"]
    assert scored and kept[0]["measured_tokens_per_s"] == pytest.approx(7000.0)
    assert kept[0]["error"] == pytest.approx(kept[0]["tokens_per_s"] / 7000.0 - 1.0)
    assert track.score(con, at + timedelta(days=3)) == []  # written once, kept
    now = [r for r in candidates(con, "1b", options(), at + timedelta(days=2)) if r["target"] == "a10-box"]
    assert now[0]["status"] == "measured" and now[0]["tokens_per_s"] == pytest.approx(7000.0)
    con.close()


def test_leave_one_target_out(cal):
    import dataclasses

    ws = [dataclasses.replace(w, target="only") for w in cal.reference.values()]
    assert track.leave_one_target_out(ws, lambda t: cal.eff)["rows"] == []  # one target: said, not faked
    a10 = [dataclasses.replace(w, gpu_name="NVIDIA A10", target="a10", tokens_per_s=w.tokens_per_s / 20,
                               samples=(w.tokens_per_s / 20,)) for w in ws]
    got = track.leave_one_target_out(ws + a10, lambda t: cal.eff)
    assert {r["target"] for r in got["rows"]} == {"only", "a10"} and got["median_abs_error"] is not None
    # an A10 "measured" 20x slower than the H200 (the datasheets say ~8x): every estimate reads high, scored so
    assert all(r["error"] > 0.3 for r in got["rows"] if r["target"] == "a10")
    assert all(r["error"] < -0.3 for r in got["rows"] if r["target"] == "only")


def test_estimates_are_scored_when_bundles_measured_before_them_land_after_them(world, tmp_path):
    """Issue 37.6: an estimate is scored against the first measurement that *landed* after it was recorded,
    whatever the run's own start time, and at the landing itself (`costgap ingest`), not at the next
    `costgap estimate --record`."""
    import shutil
    import subprocess

    from tests.conftest import COSTGAP, REPO
    from tests.factories import bundle_doc, write_bundle
    from warehouse.db import connect

    path = tmp_path / "w.duckdb"
    shutil.copy(world, path)
    con = connect(str(path))
    con.execute("insert into targets (target, provider, region, instance_type, gpu_model, gpu_count) values "
                "('a10-two', 'p', 'r', 'a10.other', 'A10', 1)")
    at = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=5)
    est_rows = [r for r in candidates(con, "1b", options(), at) if r["target"] in ("a10-box", "a10-two")]
    assert sorted(r["status"] for r in est_rows) == ["estimate", "estimate"]
    assert track.record(con, est_rows, at) == 2
    con.close()
    x = {r["target"]: r["tokens_per_s"] for r in est_rows}
    measured = {"a10-box": x["a10-box"], "a10-two": x["a10-two"] / 5}  # on the estimate; a fifth of it
    ran = at - timedelta(hours=1)  # measured an hour before the estimates were recorded, landed after them
    bundles = tmp_path / "b"
    bundles.mkdir()
    for i, (t, tps) in enumerate(measured.items()):
        ft = {"preset": "1b", "status": "ok", "mode": "full", "precision": "bf16", "device": "cuda", "seq_len": 2048,
              "micro_batch": 4, "steps_warmup": 2, "steps_timed": 5, "tokens_per_s": tps, "step_time_s": [1.17] * 5,
              "step_time_median_s": 1.17, "mfu": 0.41, "loss_first": 10.9, "loss_last": 9.0,
              "params_total": 1_100_048_384, "params_trainable": 1_100_048_384, "params_non_embedding": 1_034_512_384}
        write_bundle(bundles, bundle_doc(target=t, started_at=ran, gpu_name="NVIDIA A10", finetune=[ft], seq=i))
    r = subprocess.run([*COSTGAP, "ingest", str(bundles), "--warehouse", str(path)], cwd=REPO, capture_output=True,
                       text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "scored 2 recorded estimate(s)" in r.stderr
    con = connect(str(path), read_only=True)
    kept = {k["target"]: k for k in track.track_record(con) if k["preset"] == "1b"}
    landed = con.execute("select max(landed_at) from runs where target = 'a10-box'").fetchone()[0]
    con.close()
    for t, tps in measured.items():
        k = kept[t]
        assert k["measured_tokens_per_s"] == pytest.approx(tps) and k["measured_runs"] == 1
        assert k["error"] == pytest.approx(k["tokens_per_s"] / tps - 1.0)
        assert k["inside"] is (k["tokens_per_s_lo"] <= tps <= k["tokens_per_s_hi"])
        assert k["measured_at"] == ran and k["measurement_landed_at"] == landed > at
    assert kept["a10-box"]["inside"] is True and kept["a10-box"]["error"] == pytest.approx(0.0, abs=1e-9)
    assert kept["a10-two"]["inside"] is False and kept["a10-two"]["error"] == pytest.approx(4.0)


def test_past_one_gpu_the_scaling_is_measured_or_predicted_from_the_fabric_never_assumed(cal):
    """Issue 42: an 8-GPU type scales by the efficiency predicted from its fabric (labelled so), a type with no
    published fabric has no estimate, a measured efficiency wins, and a preset too big for one card is sharded."""
    w, h100 = cal.reference["1b"], cal_.match_gpu("H100-SXM")
    one = est.predict(w, h100, 1, cal)
    eight = est.predict(w, h100, 8, cal, fabric="nvswitch")
    assert eight.tokens_per_s == pytest.approx(one.tokens_per_s * 8 * eight.scaling, rel=1e-6)
    assert eight.scaling_lo <= eight.scaling <= eight.scaling_hi < 1 and eight.strategy == "ddp"
    assert eight.scaling_label.startswith("predicted from nvswitch") and "busbw" in eight.scaling_label
    assert any("8 GPUs at scaling efficiency" in a for a in eight.assumptions)
    assert not any("ASSUMED" in a and "scaling" in a for a in eight.assumptions)
    unknown = est.predict(w, h100, 8, cal)
    assert unknown.tokens_per_s is None and "fabric unknown" in unknown.reason
    measured = est.predict(w, h100, 8, cal, fabric="nvswitch", measured_scaling=0.8)
    assert measured.tokens_per_s == pytest.approx(one.tokens_per_s * 8 * 0.8) and measured.scaling_label == \
        "measured on this type"
    a10 = cal_.match_gpu("A10")
    assert est.predict(cal.reference["7b-full"], a10, 1, cal).fit == "does not fit"
    sharded = est.predict(cal.reference["7b-full"], a10, 4, cal, fabric="pcie")
    assert sharded.tokens_per_s is not None and sharded.strategy == "fsdp"
