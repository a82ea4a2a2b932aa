"""The report's detail pages: Hardware efficiency, Reliability, Data quality and one page per target.

    python -c "import duckdb; from reports.data import load; from reports.pages_detail import target_pages; print([p.filename for p in target_pages(load(duckdb.connect('costgap.duckdb', read_only=True)))])"
"""

from __future__ import annotations

from reports import charts
from reports.data import ReportData, Rows, Section
from reports.html import Raw, badge, esc, table
from reports.page import Page, _section, _target_link, changes_table, slug

def hardware(data: ReportData) -> Page:
    p = Page("hardware.html", "Hardware efficiency",
             "Achieved ÷ theoretical peak for GEMM, memory (HBM) and PCIe figures, median over the latest window. "
             "A figure far below its peak is where the list price stops meaning what it says.")
    eff = data.efficiency.rows
    peaked = [r for r in eff if r.get("efficiency") is not None and r["family"] in ("GEMM", "HBM", "PCIe")]
    p.h2("Achieved ÷ peak")
    p.card(_section(Section(rows=peaked, note=data.efficiency.note), lambda: p.chart(
        "hw-efficiency", lambda: charts.efficiency_bars(peaked), "Dashed line: the datasheet peak."), "measurements with a known peak"))
    p.h2("All hardware figures")
    p.card(_section(data.efficiency, lambda: table(
        [("family", "Family"), ("target", "Target"), ("benchmark", "Benchmark"), ("metric", "Metric"), ("value", "Value"),
         ("unit", "Unit"), ("peak", "Peak"), ("efficiency", "Achieved ÷ peak"), ("n", "Runs"), ("throttled_runs", "Ran throttled")],
        [dict(r, target=_target_link(r["target"]),
              efficiency=Raw(esc(f"{r['efficiency']:.1%}")) if r.get("efficiency") is not None else None,
              throttled_runs=badge(str(r["throttled_runs"]), "warn") if r.get("throttled_runs") else 0)
         for r in eff if r["family"] != "Feed"], numeric=("value", "peak", "efficiency", "n", "throttled_runs"), scroll=True),
        "measurements"))
    feed = [r for r in eff if r["family"] == "Feed"]
    p.h2("DataLoader and storage feed")
    p.card(_section(Section(rows=feed, note=data.efficiency.note), lambda: table(
        [("target", "Target"), ("benchmark", "Benchmark"), ("metric", "Metric"), ("value", "Value"), ("unit", "Unit"), ("n", "Runs")],
        [dict(r, target=_target_link(r["target"])) for r in feed], numeric=("value", "n")), "DataLoader or storage figures"))
    p.h2("Measurements that ran throttled")
    th = data.throttled

    def throttled() -> str:
        total = th.rows[0]["total"]
        rows = [dict(r, target=_target_link(r["target"]), reasons=badge(", ".join(r.get("throttle_reasons") or []) or "flagged", "warn"))
                for r in th.rows]
        return (f"<p>{esc(total)} measurement(s) ran under a clock-event reason (power cap, thermal, HW slowdown) "
                f"or were flagged; newest {len(rows)} shown.</p>" + table(
                    [("started_at", "Run"), ("target", "Target"), ("benchmark", "Benchmark"), ("metric", "Metric"),
                     ("value", "Value"), ("unit", "Unit"), ("reasons", "Reasons"), ("flags", "Flags"),
                     ("sm_clock_mhz_min", "SM clock min"), ("sm_clock_mhz_median", "SM clock median"),
                     ("power_w_median", "Power median (W)")], rows,
                    numeric=("value", "sm_clock_mhz_min", "sm_clock_mhz_median", "power_w_median"), scroll=True))
    p.card(_section(th, throttled, "throttled measurements",
                    none="No measurement recorded a clock-event reason (power cap, thermal, HW slowdown)."))
    p.h2("Power and clocks (NVML telemetry, weekly)")
    p.card(_section(data.telemetry, lambda: p.chart("hw-telemetry", lambda: charts.telemetry_lines(data.telemetry.rows),
                                                    "Each run's mean over its NVML samples, then the median over the week's runs (reduced in DuckDB)."), "NVML telemetry"))
    return p


def reliability(data: ReportData) -> Page:
    p = Page("reliability.html", "Reliability",
             "Every try of every task is kept. Failed attempts raise the rerun factor R = 1 + f·p/(1−p) "
             "that multiplies the cost per token.")
    wk = data.reliability
    p.h2("Failed-attempt share per week")
    p.card(_section(wk, lambda: p.chart("rel-rate", lambda: charts.failure_rate_lines(wk.rows)), "attempts"))
    p.h2("Attempts by outcome")
    p.card(_section(wk, lambda: p.chart("rel-outcomes", lambda: charts.outcome_bars(wk.rows)), "attempts"))
    p.h2("Failure kinds per target")
    fk = data.failure_kinds
    p.card(_section(fk, lambda: p.chart("rel-kinds", lambda: charts.failure_kind_bars(fk.rows)) + table(
        [("target", "Target"), ("error_kind", "Kind"), ("failures", "Failures"), ("task", "Most often in"), ("example", "Example message")],
        [dict(r, target=_target_link(r["target"])) for r in fk.rows], numeric=("failures",)), "failed attempts"))
    return p


def quality(data: ReportData) -> Page:
    p = Page("quality.html", "Data quality",
             "Every landed batch is validated by Great Expectations. A bundle that fails goes to quarantine with the "
             "failed expectations and never reaches the fact tables.")
    p.h2("Validation results over time")
    p.card(_section(data.validation_daily, lambda: p.chart("dq-daily", lambda: charts.validation_bars(data.validation_daily.rows)),
                    "validation results"))
    p.h2("Expectations")
    p.card(_section(data.validation, lambda: table(
        [("suite", "Suite"), ("expectation", "Expectation"), ("column_name", "Column"), ("checked", "Checked"),
         ("failed", "Failed"), ("failed_example", "Observed when failing"), ("last_validated_at", "Last")],
        [dict(r, failed=badge(str(r["failed"]), "bad") if r["failed"] else 0) for r in data.validation.rows],
        numeric=("checked", "failed"), scroll=True), "validation results"))
    p.h2("Quarantine")
    q = data.quarantine
    p.card(_section(q, lambda: f"<p>{esc(q.rows[0]['total'])} bundle(s) in quarantine; newest {len(q.rows)} shown.</p>" + table(
        [("quarantined_at", "When"), ("kind", "Kind"), ("target", "Target"), ("bundle_id", "Bundle"), ("reason", "Reason"),
         ("field", "Field"), ("source_uri", "Source"), ("failed", "Failed checks")],
        [dict(r, bundle_id=Raw(f'<span class="mono">{esc(str(r["bundle_id"])[:16])}…</span>'),
              failed=(r["failed"] or "")[:300]) for r in q.rows], scroll=True), "quarantined bundles",
        none="Nothing in quarantine: every bundle received so far passed validation."))
    return p


def target_pages(data: ReportData) -> list[Page]:
    by = lambda rows, t: [r for r in rows if r.get("target") == t]  # noqa: E731
    pages = []
    for i, t in enumerate(data.targets):
        name = t["target"]
        p = Page(slug(name), f"Target {name}",
                 " · ".join(str(v) for v in (t.get("provider"), t.get("region"), t.get("instance_type"), t.get("gpu_model")) if v)
                 or "A target first seen in a bundle (not configured in targets.toml).")
        tp, env = by(data.throughput.rows, name), by(data.env_changes.rows, name)
        p.h2("Throughput over time")
        p.card(_section(Section(rows=tp, note=data.throughput.note), lambda: p.chart(
            f"target-{i}-throughput", lambda: charts.throughput_lines(tp, env)), "fine-tune runs"))
        ch = by(data.changes.rows, name)
        p.h2("Throughput shifts found")
        p.card(_section(Section(rows=ch, note=data.changes.note), lambda: changes_table(ch), "significant change-point findings for this target"))
        eh = by(data.env_history.rows, name)
        p.h2("Environment history")
        p.card(_section(Section(rows=eh, note=data.env_history.note), lambda: table(
            [("first_used_at", "First used"), ("last_used_at", "Last used"), ("runs", "Runs"), ("gpu_name", "GPU"),
             ("gpu_count", "GPUs"), ("driver", "Driver"), ("cuda_runtime", "CUDA"), ("cudnn", "cuDNN"), ("torch", "torch"),
             ("python", "Python"), ("kernel", "Kernel"), ("cpu_model", "CPU"), ("pcie_gen_current", "PCIe gen"),
             ("power_limit_w", "Power limit (W)"), ("container_image", "Image")], eh, numeric=("runs", "gpu_count")),
            "environments"))
        runs = by(data.runs.rows, name)
        p.h2("Runs")

        def run_table(runs: Rows = runs) -> str:
            total = runs[0]["total"]
            rows = [dict(r, run_id=Raw(f'<span class="mono">{esc(str(r["run_id"])[:12])}</span>'),
                         steady=badge("unstable", "warn") if r.get("steady") is False else r.get("steady"),
                         environment_id=Raw(f'<span class="mono">{esc(str(r["environment_id"])[:8])}</span>'),
                         provenance=badge(r["provenance"], "warn") if r.get("provenance") else "measured")
                    for r in runs]
            return (f"<p>{esc(total)} run(s); newest {len(rows)} shown.</p>" + table(
                [("started_at", "Started"), ("run_id", "Run"), ("profile", "Profile"), ("status", "Status"),
                 ("presets", "Presets"), ("tokens_per_s", "Tokens/s"), ("mfu", "MFU"), ("steady", "Steady"), ("attempts", "Attempts"),
                 ("failed_attempts", "Failed"), ("environment_id", "Env"), ("origin_kind", "Origin"),
                 ("provenance", "Data")], rows, numeric=("tokens_per_s", "mfu", "attempts", "failed_attempts"), scroll=True))
        p.card(_section(Section(rows=runs, note=data.runs.note), run_table, "runs"))
        pages.append(p)
    return pages


