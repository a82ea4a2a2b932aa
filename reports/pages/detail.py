"""The report's detail pages: Hardware efficiency, Reliability and Data quality (targets: pages_target.py).

    python -c "import duckdb; from reports.data import load; from reports.pages.detail import reliability; print(reliability(load(duckdb.connect('costgap.duckdb', read_only=True))).title)"

Reliability shows the p that enters R: the fine-tune failed-attempt rate k/n with its 90% interval,
per week and per target, and what reruns add to the cost per 1M tokens, C·(1 − 1/R). Rates, not
counts, across targets: their run volumes differ by orders of magnitude.
"""

from __future__ import annotations

from reports import charts, charts_gap
from reports.data import ReportData, Section
from reports.pages.html import Markup, Sorted, badge, escape, p_text
from reports.pages.page import Page, _section, _target_link, row

METRIC_NAMES = {  # probe metric ids -> what a person reads
    "bf16_burst_tflops": "bf16 GEMM, burst (TFLOP/s)", "bf16_sustained_tflops": "bf16 GEMM, sustained at best shape",
    "bf16_sustained_fixed_tflops": "bf16 GEMM, sustained at 2048×7168×4096", "fp16_tflops": "fp16 GEMM (TFLOP/s)",
    "tf32_tflops": "tf32 GEMM (TFLOP/s)", "fp32_tflops": "fp32 GEMM (TFLOP/s)", "copy_gbps": "memory copy (GB/s)",
    "triad_gbps": "memory triad (GB/s)", "h2d_pinned_gbps": "host → device, pinned (GB/s)",
    "d2h_pinned_gbps": "device → host, pinned (GB/s)", "h2d_pageable_gbps": "host → device, pageable (GB/s)",
    "d2h_pageable_gbps": "device → host, pageable (GB/s)",
}


def metric_name(metric: str) -> str:
    return METRIC_NAMES.get(metric, metric.replace("_", " "))


def hardware(data: ReportData) -> Page:
    p = Page("hardware.html", "Hardware efficiency",
             "Achieved ÷ theoretical peak for GEMM, memory (HBM) and PCIe figures, median over the cost window. "
             "A figure far below its peak is where the list price stops meaning what it says.")
    eff = [dict(r, metric_label=metric_name(r["metric"])) for r in data.efficiency.rows]
    peaked = [r for r in eff if r.get("efficiency") is not None and r["family"] in ("GEMM", "HBM", "PCIe")]
    p.h2("Achieved ÷ peak")
    p.card(_section(Section(rows=peaked, note=data.efficiency.note), lambda: p.chart(
        "hw-efficiency", lambda: charts.efficiency_bars([dict(r, metric=r["metric_label"]) for r in peaked], data.colors),
        "Dashed line: the datasheet peak.",
        rows=[{k: r.get(k) for k in ("target", "family", "metric", "value", "unit", "peak", "efficiency", "n")}
              for r in peaked]), "measurements with a known peak"))
    p.h2("All hardware figures")
    p.card(_section(data.efficiency, lambda: p.table("hardware-figures", [
        ("family", "Family"), ("target", "Target"), ("metric_label", "Figure"), ("value", "Value"), ("unit", "Unit"),
        ("peak", "Peak"), ("efficiency", "Achieved ÷ peak"), ("n", "Runs"), ("throttled_runs", "Ran throttled")],
        [dict(r, target=_target_link(r["target"]),
              efficiency=Sorted(escape(f"{r['efficiency']:.1%}"), sort=r["efficiency"]) if r.get("efficiency") is not None else None,
              throttled_runs=badge(str(r["throttled_runs"]), "warn") if r.get("throttled_runs") else 0)
         for r in eff if r["family"] != "Feed"], numeric=("value", "peak", "efficiency", "n", "throttled_runs")),
        "measurements"))
    feed = [r for r in eff if r["family"] == "Feed"]
    p.h2("DataLoader and storage feed")
    p.card(_section(Section(rows=feed, note=data.efficiency.note), lambda: p.table("feed", [
        ("target", "Target"), ("benchmark", "Benchmark"), ("metric_label", "Figure"), ("value", "Value"), ("unit", "Unit"),
        ("n", "Runs")], [dict(r, target=_target_link(r["target"])) for r in feed], numeric=("value", "n")),
        "DataLoader or storage figures"))
    p.h2("Measurements that ran throttled")
    th = data.throttled

    def throttled() -> Markup:
        rows = [dict(r, target=_target_link(r["target"]), metric=metric_name(r["metric"]),
                     reasons=badge(", ".join(r.get("throttle_reasons") or []) or "flagged", "warn")) for r in th.rows]
        return (Markup("<p>{} measurement(s) ran under a clock-event reason (power cap, thermal, HW slowdown) or were "
                       "flagged; newest {} shown.</p>").format(th.rows[0]["total"], len(rows)) + p.table("throttled", [
                    ("started_at", "Run"), ("target", "Target"), ("metric", "Figure"), ("value", "Value"),
                    ("reasons", "Reasons"), ("sm_clock_mhz_median", "SM clock median (MHz)"),
                    ("power_w_median", "Power median (W)")], rows,
                    numeric=("value", "sm_clock_mhz_median", "power_w_median")))
    p.card(_section(th, throttled, "throttled measurements",
                    none="No measurement recorded a clock-event reason (power cap, thermal, HW slowdown)."))
    p.h2("Power and clocks (NVML telemetry, weekly)")
    p.card(_section(data.telemetry, lambda: p.chart(
        "hw-telemetry", lambda: charts.telemetry_lines(data.telemetry.rows, data.colors),
        "Each run's mean over its NVML samples, then the median over the week's runs (reduced in DuckDB).",
        rows=data.telemetry.rows), "NVML telemetry"))
    return p


def reliability(data: ReportData) -> Page:
    cur = data.currency
    p = Page("reliability.html", "Reliability",
             "The failed-attempt rate p of the fine-tune is what enters the cost: R = 1 + f·p/(1−p) multiplies the "
             "cost per token (f: the share of an attempt's work lost per failure, 0.5 without checkpoints). "
             "p = k/n with a 90% interval from its Beta posterior (the one the cost interval uses).")
    p.h2("p in the cost window, and what reruns add")

    def now() -> Markup:
        rows = []
        for r in data.cost.rows:
            adds = r["cost_per_mtok"] * (1 - 1 / r["R"]) if r.get("cost_per_mtok") is not None and r.get("R") else None
            interval = (Sorted(escape(f"90% {r['p_lo']:.1%} to {r['p_hi']:.1%}"), sort=r["p_lo"])
                        if r.get("p_lo") is not None else None)
            rows.append({"target": _target_link(r["target"]), "preset": r["preset"],
                         "p": Sorted(escape(p_text(r["failed_attempts"], r["attempts"])), sort=r["p"]),
                         "ci": interval, "R": r["R"], "adds": adds, "cost": r["cost_per_mtok"]})
        return p.table("reliability-window", [
            ("target", "Target"), ("preset", "Preset"), ("p", "p (failed / attempts)"), ("ci", "p, 90% interval"),
            ("R", "Rerun factor R"), ("adds", f"Reruns add ({cur} / 1M tokens)"),
            ("cost", f"Cost / 1M tokens ({cur})")], rows,
            numeric=("p", "ci", "R", "adds", "cost"),
            csv=[{k: r.get(k) for k in ("target", "preset", "p", "failed_attempts", "attempts", "p_lo", "p_hi", "R",
                                        "cost_per_mtok")} for r in data.cost.rows])
    p.card(_section(data.cost, now, "fine-tune runs in the window"))
    p.h2("p per week, per preset")
    hist = [r for r in data.history.rows if r["attempts"]]
    p.card(_section(Section(rows=hist), lambda: row(
        p.chart(f"rel-p-{i}", lambda s=s: charts_gap.rerun_rate_lines(
            [r for r in hist if r["preset"] == s], s, data.colors), f"{s}: k/n per week; bars: 90% interval.",
            rows=[{k: r[k] for k in ("period_start", "period_end", "target", "preset", "p", "failed_attempts",
                                     "attempts", "p_lo", "p_hi", "R")} for r in hist if r["preset"] == s])
        for i, s in enumerate(sorted({r["preset"] for r in hist}))), "fine-tune attempts"))
    p.h2("Failure kinds, as a share of each target's attempts (cost window)")
    fk = data.failure_kinds
    p.card(_section(fk, lambda: p.chart("rel-kinds", lambda: charts.failure_kind_bars(fk.rows, data.colors),
                                        "Failed fine-tune attempts of each kind ÷ the target's fine-tune attempts.",
                                        rows=fk.rows) + p.table(
        "failure-kinds", [("target", "Target"), ("error_kind", "Kind"), ("rate", "Share of attempts"),
                          ("failures", "Failed"), ("attempts", "Attempts"), ("task", "Most often in"),
                          ("example", "Example message")],
        [dict(r, target=_target_link(r["target"]), rate=Sorted(escape(f"{r['rate']:.1%}"), sort=r["rate"])) for r in fk.rows],
        numeric=("rate", "failures", "attempts")), "failed fine-tune attempts in the window",
        none="No fine-tune attempt failed in the cost window."))
    return p


def quality(data: ReportData) -> Page:
    p = Page("quality.html", "Data quality",
             "Every landed batch is validated by Great Expectations. A file that is not a valid bundle is rejected; a "
             "bundle that fails an expectation is quarantined with the failed expectations. Neither reaches the "
             "fact tables; `costgap ingest` reports them the same way.")
    p.h2("Validation results over time")
    p.card(_section(data.validation_daily, lambda: p.chart(
        "dq-daily", lambda: charts.validation_bars(data.validation_daily.rows), "Expectations evaluated per day.",
        rows=data.validation_daily.rows), "validation results"))
    p.h2("Expectations")
    p.card(_section(data.validation, lambda: p.table("expectations", [
        ("suite", "Suite"), ("expectation", "Expectation"), ("column_name", "Column"), ("checked", "Checked"),
        ("failed", "Failed"), ("failed_example", "Observed when failing"), ("last_validated_at", "Last")],
        [dict(r, failed=badge(str(r["failed"]), "bad") if r["failed"] else 0) for r in data.validation.rows],
        numeric=("checked", "failed")), "validation results"))
    p.h2("Rejected and quarantined bundles")
    q = data.quarantine

    def refused() -> Markup:
        kinds = {k: sum(1 for r in q.rows if r["kind"] == k) for k in ("rejected", "quarantined")}
        head = Markup("<p>{} file(s) refused in all: newest {} shown, of which {} rejected (not a valid bundle) and "
                      "{} quarantined (a valid bundle that failed validation).</p>").format(
            q.rows[0]["total"], len(q.rows), kinds["rejected"], kinds["quarantined"])
        return head + p.table("refused", [
            ("quarantined_at", "When"), ("kind", "Outcome"), ("target", "Target"), ("bundle_id", "Bundle"),
            ("reason", "Reason"), ("field", "Field"), ("source_uri", "File")],
            [dict(r, kind=badge(r["kind"], "bad" if r["kind"] == "rejected" else "warn"),
                  bundle_id=Sorted(Markup('<span class="mono">{}…</span>').format(str(r["bundle_id"])[:12]), sort=r["bundle_id"]))
             for r in q.rows])
    p.card(_section(q, refused, "refused bundles", none="Nothing refused: every file received so far landed."))
    return p

