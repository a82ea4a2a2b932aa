"""`costgap demo`: samples land as measured, the derived history and prices are labelled on every page.

    .venv/bin/pytest -q tests/test_report_demo.py
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.demo import DemoConfig
from tests.factories import bundle_doc, write_bundle

pytestmark = pytest.mark.slow  # whole `costgap demo` builds


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("samples")
    t = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=1)
    write_bundle(d, bundle_doc(target="h200-sxm", started_at=t, tokens_per_s=62000.0, gemm_tflops=600.0,
                               gpu_name="NVIDIA H200", driver="580.159.04"))
    write_bundle(d, bundle_doc(target="cpu-local", started_at=t, tokens_per_s=900.0))
    return d


@pytest.fixture(scope="module")
def demo(samples, tmp_path_factory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("demo")
    wh, site = root / "demo.duckdb", root / "site"
    res = CliRunner().invoke(app, ["demo", "--warehouse", str(wh), "--site", str(site), "--samples", str(samples), "--no-images"])
    assert res.exit_code == 0, res.output
    return wh, site, res.output


def test_demo_lands_samples_and_labelled_history(demo):
    wh, _, out = demo
    cfg = DemoConfig()
    assert "2 measured sample bundle(s)" in out
    con = duckdb.connect(str(wh), read_only=True)
    try:
        runs = con.execute("select count(*) from runs").fetchone()[0]
        synthetic = con.execute("select count(*) from provenance where scope = 'run' and label = 'synthetic'").fetchone()[0]
        measured = con.execute("select count(*) from runs where run_id not in "
                               "(select key from provenance where scope = 'run')").fetchone()[0]
        prices = con.execute("select count(distinct price_per_hour) from prices where billing_mode = 'on_demand'"
                             ).fetchone()[0]
        monthly = con.execute("select count(*) from prices where billing_mode = 'monthly'").fetchone()[0]
        rates = con.execute("select count(*) from fx_rates").fetchone()[0]
        labelled_prices = con.execute("select count(*) from provenance where scope = 'price_import'").fetchone()[0]
        failed = con.execute("select count(*) from attempts where message like 'synthetic OOM%'").fetchone()[0]
    finally:
        con.close()
    assert synthetic == 2 * cfg.weeks * cfg.runs_per_week and measured == 2 and runs == synthetic + 2
    # illustrative prices: the even target (cpu-local) one price throughout, the odd one (h200-sxm) a cut
    # + the two ILLUSTRATIVE candidate prices (A10 gn7i, V100 GN10Xp) for `costgap estimate` (issue 25), on demand only
    assert prices == 5 and labelled_prices == 1 and monthly == 3 and rates == 2  # monthly and FX: the picker's choices
    assert failed > 0


def test_every_page_says_what_was_not_measured(demo):
    _, site, _ = demo
    pages = list(site.glob("*.html"))
    assert len(pages) >= 8
    for p in pages:
        text = p.read_text(encoding="utf-8")
        assert "Not everything here was measured" in text, p.name
        assert "Synthetic: 48 run(s)" in text and "Illustrative: 1 price import(s)" in text, p.name
    target = next(site.glob("target-h200-sxm-*.html")).read_text(encoding="utf-8")
    assert 'badge warn">synthetic' in target and "measured" in target


def test_demo_report_has_costs_and_a_decomposition(demo):
    _, site, _ = demo
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'id="t-overview-answer"' in index and "baseline" in index
    assert 'id="picker-inputs"' in index and 'src="assets/picker.js"' in index
    assert 'id="c-overview-cost"' in index
    why = (site / "why.html").read_text(encoding="utf-8")
    assert 'id="c-why-0"' in why and "cpu-local became" in why and "log points" in why
    over = (site / "over-time.html").read_text(encoding="utf-8")
    assert "demo-synthetic:older-stack" in over and 'id="c-gap-tiny"' in over  # the stack change, labelled


def test_demo_without_samples_is_a_clear_error(tmp_path):
    res = CliRunner().invoke(app, ["demo", "--warehouse", str(tmp_path / "d.duckdb"), "--site", str(tmp_path / "s"),
                                   "--samples", str(tmp_path / "none")])
    assert res.exit_code != 0
    assert "no sample bundles" in str(res.exception) or "no sample bundles" in res.output


def test_demo_replaces_only_its_own_warehouse(demo, samples, tmp_path):
    from flows.landing import land_into

    wh, site, _out = demo
    again = CliRunner().invoke(app, ["demo", "--warehouse", str(wh), "--site", str(tmp_path / "s2"), "--samples", str(samples),
                                   "--no-images"])
    assert again.exit_code == 0, again.output  # a demo file is rebuilt from scratch
    main = tmp_path / "main.duckdb"
    land_into(str(main), [str(samples)])  # a real landing (source 'cli'): not a demo file
    before = main.stat().st_size
    res = CliRunner().invoke(app, ["demo", "--warehouse", str(main), "--site", str(tmp_path / "s3"), "--samples", str(samples)])
    assert res.exit_code != 0 and "not a demo warehouse" in str(res.exception)
    assert main.exists() and main.stat().st_size == before


def test_demo_without_the_estimated_first_target_records_no_estimate(demo):
    wh, _, out = demo  # its samples hold no h100-sxm-1x (DemoConfig.estimated_first): the step is skipped
    con = duckdb.connect(str(wh), read_only=True)
    try:
        assert con.execute("select count(*) from estimates").fetchone()[0] == 0
    finally:
        con.close()
    assert "estimating" not in out and "estimate(s) for" not in out


@pytest.fixture(scope="module")
def track_demo(tmp_path_factory) -> tuple[Path, Path, str, Path]:
    """`costgap demo` over the committed H100 samples and three H200 ones (1b, 8b-lora, 8b-qlora, bert-large)."""
    import shutil

    from tasks.demo import sample_dir

    root = tmp_path_factory.mktemp("track")
    samples = root / "samples"
    (samples / "h200").mkdir(parents=True)
    shutil.copytree(sample_dir() / "h100", samples / "h100")
    for prefix in ("1906d644", "289c38f4", "6fbcef20"):  # standard (GEMM, copy, 1b, 8b-lora), 8b-qlora, bert-large
        shutil.copy(next((sample_dir() / "h200").glob(f"{prefix}*.json")), samples / "h200")
    wh, site = root / "demo.duckdb", root / "site"
    res = CliRunner().invoke(app, ["demo", "--warehouse", str(wh), "--site", str(site), "--samples", str(samples),
                                   "--no-images"])
    assert res.exit_code == 0, res.output
    return wh, site, res.output, samples


def test_demo_scores_the_estimated_first_target_against_its_real_samples(track_demo):
    """Issue 35.4: the H100 is estimated from the H200 runs before its bundles land; its real samples land
    alone and score every estimate (error, inside the 90% interval) against the sample's own tokens/s, never a
    synthetic run; the Candidates page draws and lists them."""
    import json

    wh, site, out, samples = track_demo
    target = DemoConfig().estimated_first
    assert target == "h100-sxm-1x"
    import statistics

    real: dict[str, list[float]] = {}  # every committed H100 sample of each preset (two sessions)
    for f in (samples / "h100").glob("*.json"):
        for ft in json.loads(f.read_text())["finetune"]:
            if ft["status"] == "ok":
                real.setdefault(ft["preset"], []).append(ft["tokens_per_s"])
    assert f"demo: estimating {target} from the other targets' runs (4 presets) before its bundles land" in out
    assert f"4 of 4 estimate(s) for {target} scored against its measured samples" in out
    con = duckdb.connect(str(wh), read_only=True)
    try:
        est = con.execute("select preset, tokens_per_s, tokens_per_s_lo, tokens_per_s_hi, measured_tokens_per_s, "
                          "measured_runs, error, inside, estimated_at, measurement_landed_at from estimates "
                          "where target = ? order by preset", [target]).fetchall()
        real_landed = con.execute("select max(landed_at) from runs where target = ? and run_id not in "
                                  "(select key from provenance where scope = 'run')", [target]).fetchone()[0]
        synthetic_landed = con.execute("select min(landed_at) from runs where target = ? and run_id in "
                                       "(select key from provenance where scope = 'run' and label = 'synthetic')",
                                       [target]).fetchone()[0]
        others = con.execute("select count(*) from estimates where target <> ?", [target]).fetchone()[0]
    finally:
        con.close()
    assert [r[0] for r in est] == ["1b", "8b-lora", "8b-qlora", "bert-large"] and others == 0
    for preset, x, lo, hi, m, runs, error, inside, at, landed in est:
        # the real samples alone (their median, as the cost model takes X), never a synthetic run
        assert m == pytest.approx(statistics.median(real[preset]), rel=1e-9) and runs == len(real[preset])
        assert error == pytest.approx(x / m - 1.0) and inside is (lo <= m <= hi)
        assert at < landed == real_landed < synthetic_landed
    page = (site / "candidates.html").read_text(encoding="utf-8")
    assert 'id="c-estimate-track"' in page and "recorded estimate, later measured" in page
    assert 'id="t-estimate_track"' in page and "Inside the interval" in page and page.count(target) >= 4
    shown = (site / "data" / "estimate_track.csv").read_text(encoding="utf-8").splitlines()
    assert len(shown) == 5 and all(target in line for line in shown[1:])
