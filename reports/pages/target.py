"""One page per target: its cost and price history, whether the server is well used (reports/pages/well_used.py),
throughput per preset, the configuration each preset was measured at (and every candidate tried), what changed
in its environment, the change points found and its newest runs.

    python -c "import duckdb; from reports.data import load; from reports.pages.target import target_pages; print([p.filename for p in target_pages(load(duckdb.connect('costgap.duckdb', read_only=True)))])"
"""

from __future__ import annotations

from reports import charts, charts_gap
from reports.data import ReportData, Rows, Section
from reports.pages.html import Markup, Sorted, badge
from reports.pages.page import Page, _section, changes_table, row, slug
from reports.pages.well_used import target_section

# (column, label) of the environment fields a change is shown for, in reading order
ENV_FIELDS = (("gpu_name", "GPU"), ("gpu_count", "GPUs"), ("driver", "driver"), ("cuda_runtime", "CUDA"),
              ("cudnn", "cuDNN"), ("torch", "torch"), ("python", "Python"), ("kernel", "kernel"),
              ("pcie_gen_current", "PCIe gen"), ("pcie_width_current", "PCIe width"),
              ("power_limit_w", "power limit (W)"), ("container_image", "image"), ("cpu_model", "CPU"))


def environment_changes(envs: Rows) -> Rows:
    """Each environment of one target as what changed against the one before (the first: in full)."""
    out, prev = [], None
    for e in envs:
        if prev is None:
            what = "; ".join(f"{label} {e[k]}" for k, label in ENV_FIELDS if e.get(k) is not None) or "nothing recorded"
        else:
            what = "; ".join(f"{label} {prev.get(k) if prev.get(k) is not None else '—'} → "
                             f"{e.get(k) if e.get(k) is not None else '—'}"
                             for k, label in ENV_FIELDS if e.get(k) != prev.get(k)) or "no field shown here changed"
        out.append({"first_used_at": e["first_used_at"], "last_used_at": e["last_used_at"], "runs": e["runs"],
                    "change": what, "environment_id": e["environment_id"]})
        prev = e
    return out


FOUND = {"searched": "searched", "pinned": "pinned by the run", "fixed": "fixed by the profile"}


def _label(mb, ckpt) -> str:
    return f"micro-batch {mb}, checkpointing {'on' if ckpt else 'off'}"


def config_rows(rows: Rows) -> Rows:
    """One row per candidate of each preset's newest fine-tune; one "configuration not searched" row for
    a bundle from before the search (its configuration as run)."""
    import json

    out = []
    for r in rows:
        tried = json.loads(r["configs_tried"] or "[]")
        if r.get("config_search") is None or not tried:
            out.append({"preset": r["preset"], "found": "configuration not searched",
                        "configuration": _label(r["micro_batch"], r["activation_checkpointing"]),
                        "trial_tokens_per_s": None, "tokens_per_s": r["tokens_per_s"],
                        "peak_gib": r.get("peak_mem_allocated_gib"),
                        "outcome": "run", "reason": "measured before the configuration search (issue 35)"})
            continue
        order = {"chosen": 0, "slower": 1, "dropped": 2}
        for c in sorted(tried, key=lambda c: order.get(c["outcome"], 3)):  # the chosen one first
            chosen = c["outcome"] == "chosen"
            out.append({"preset": r["preset"], "found": FOUND.get(r["config_search"], r["config_search"]),
                        "configuration": _label(c["micro_batch"], c["activation_checkpointing"]),
                        "trial_tokens_per_s": c.get("tokens_per_s"),
                        "tokens_per_s": r["tokens_per_s"] if chosen else None,
                        "peak_gib": c.get("peak_mem_allocated_gib"),
                        "outcome": badge("chosen", "ok") if chosen else c["outcome"],
                        "reason": c.get("reason") or ""})
    return out


def _key(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(text).lower()).strip("-") or "x"


def target_page(data: ReportData, t: dict, i: int) -> Page:
    name, cur = t["target"], data.currency
    by = lambda rows: [r for r in rows if r.get("target") == name]  # noqa: E731
    p = Page(slug(name), f"Target {name}",
             " · ".join(str(v) for v in (t.get("provider"), t.get("region"), t.get("instance_type"), t.get("gpu_model"))
                        if v) or "A target first seen in a bundle (not configured in targets.toml).")
    hist = by(data.history.rows)
    presets = sorted({r["preset"] for r in hist})
    p.h2("Cost and price history")

    def cost() -> Markup:
        priced = [r for r in hist if r.get("cost_per_mtok") is not None]
        charts_html = [p.chart(f"t{i}-cost-{_key(s)}", lambda s=s: charts_gap.cost_lines(
            [r for r in priced if r["preset"] == s], s, cur, data.colors), f"{s}: cost per week, 90% band.",
            rows=[{k: r[k] for k in ("period_end", "preset", "cost_per_mtok", "cost_lo", "cost_hi", "price_per_hour",
                                     "tokens_per_s", "R")} for r in priced if r["preset"] == s])
                       for s in sorted({r["preset"] for r in priced})]
        prices = [{"period_end": r["period_end"], "target": name, "price_per_hour": r["price_per_hour"]}
                  for r in hist if r["preset"] == presets[0] and r.get("price_per_hour") is not None]
        if prices:
            charts_html.append(p.chart(f"t{i}-price", lambda: charts.price_steps(prices, cur, data.colors),
                                       "The blended price per instance-hour each week used.", rows=prices))
        changes = [r for r in data.price_changes.rows if r["target"] == name]
        table = p.table(f"t{i}-price-changes", [("changed_at", "Effective from"), ("previous_price", "Before (per hour)"),
                                               ("price_per_hour", "After (per hour)"), ("currency", "Currency"),
                                               ("source", "Source")], changes,
                        numeric=("previous_price", "price_per_hour")) if changes else \
            Markup('<p class="empty">No price change recorded for this target.</p>')
        return row(charts_html) + table

    p.card(_section(Section(rows=hist), cost, "weeks with runs",
                    none="No successful fine-tune run yet, so no cost per token (see Runs below)."))
    p.h2("Is this server well used?")
    p.card(target_section(p, data, name, i))
    p.h2("Throughput per preset")
    p.card(_section(Section(rows=hist), lambda: row(
        p.chart(f"t{i}-x-{_key(s)}", lambda s=s: charts.throughput_lines(
            [r for r in hist if r["preset"] == s], s, data.colors), f"{s}: median tokens/s per week.",
            rows=[{k: r[k] for k in ("period_end", "preset", "tokens_per_s", "runs")} for r in hist if r["preset"] == s])
        for s in presets), "fine-tune runs"))
    p.h2("What changed in its environment")
    envs = environment_changes(by(data.env_history.rows))
    p.card(_section(Section(rows=envs), lambda: p.table(
        f"t{i}-environments", [("first_used_at", "First used"), ("last_used_at", "Last used"), ("runs", "Runs"),
                               ("change", "Environment (first: in full; then only what changed)")],
        envs, numeric=("runs",)), "environments"))
    p.h2("Configuration per preset: each card at its best")
    cfg_rows = config_rows(by(data.configs.rows))
    p.card(_section(Section(rows=cfg_rows), lambda: (
        Markup("<p>Each fine-tune is measured at the fastest configuration that fits this card, found by measurement: "
        "the probe trials every configuration its memory model says fits (activation checkpointing off at the "
        "largest micro-batch, on at the largest it allows) and measures the fastest. Newest run per preset.</p>")
        + p.table(f"t{i}-configs", [("preset", "Preset"), ("found", "How found"), ("configuration", "Configuration"),
                                   ("trial_tokens_per_s", "Trial tokens/s"),
                                   ("tokens_per_s", "Measured tokens/s (steady run)"), ("peak_gib", "Peak GiB"),
                                   ("outcome", "Outcome"), ("reason", "Why")],
                  cfg_rows, numeric=("trial_tokens_per_s", "tokens_per_s", "peak_gib"))), "measured fine-tunes"))
    ch = by(data.changes.rows)
    p.h2("Throughput shifts found")
    p.card(_section(Section(rows=ch), lambda: changes_table(p, f"t{i}-shifts", ch),
                    "significant change-point findings for this target"))
    runs = by(data.runs.rows)
    p.h2("Runs")

    def run_table() -> Markup:
        rows = [dict(r, run_id=Sorted(Markup('<span class="mono">{}</span>').format(str(r["run_id"])[:12]), sort=r["run_id"]),
                     steady=badge("unstable", "warn") if r.get("steady") is False else r.get("steady"),
                     provenance=badge(r["provenance"], "warn") if r.get("provenance") else "measured") for r in runs]
        return (Markup("<p>{} run(s); newest {} shown.</p>").format(runs[0]["total"], len(rows)) + p.table(
            f"t{i}-runs", [("started_at", "Started"), ("run_id", "Run"), ("profile", "Profile"), ("status", "Status"),
                           ("preset_tokens_per_s", "Tokens/s per preset"), ("steady", "Steady"),
                           ("attempts", "Attempts"), ("failed_attempts", "Failed"), ("provenance", "Data")],
            rows, numeric=("attempts", "failed_attempts")))
    p.card(_section(Section(rows=runs), run_table, "runs"))
    return p


def target_pages(data: ReportData) -> list[Page]:
    return [target_page(data, t, i) for i, t in enumerate(data.targets)]
