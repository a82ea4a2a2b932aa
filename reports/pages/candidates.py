"""The Candidates page: instance types not yet measured, estimated (and labelled so), beside the measured ones.

    costgap demo && open .costgap/demo-site/candidates.html

Per preset, every catalog type's cost per 1M tokens: measured ones filled, estimates hollow with a dashed
90% interval and the word "estimate" in every label and row. "Measure next": the estimated types whose
interval reaches the cheapest measured cost, so measuring them could change the answer. The track record:
leave-one-out predictions and the recorded estimates later measured, against the measurement. Its figures
come from tasks.estimate.candidates and tasks.estimate.estimate_track; nothing here enters a measured table.
"""

from __future__ import annotations

import altair as alt

from reports.pages.html import Markup, Sorted, escape
from reports.pages.page import Page

NAME = "candidates.html"
RECORDED = "recorded estimate, later measured"  # the track record's own points (estimates kept before measuring)


def load(con, today, currency: str = "USD", billing: str | None = "on_demand", extra: list[dict] | None = None) -> dict:
    """The page's data from one open connection (the report's snapshot)."""
    from tasks.estimate import calibrate as cal_
    from tasks.estimate import estimate_track as track
    from tasks.estimate.candidates import candidates, measure_next
    from tasks.cost.table import options

    ws = cal_.workloads(con)
    cal = cal_.calibrate(ws, cal_.efficiencies(con))
    if cal is None:
        return {"presets": {}, "next": [], "loo": None, "held_out": None, "track": []}
    from tasks.cost.table import cost_table

    opts = options(billing or "on_demand", currency)
    measured = cost_table(con, billing=opts.billing, currency=currency, today=today).to_dicts()
    from tasks.errors import UserError

    presets, errors = {}, []
    for p in sorted(cal.reference):
        try:
            presets[p] = candidates(con, p, opts, today, extra=extra, cal=cal, workloads=ws, measured=measured)
        except UserError as e:  # e.g. a missing FX rate for a candidate's price: said on the page, not hidden
            errors.append(f"{p}: no estimates: {e}")
    return {"presets": presets, "errors": errors, "next": [r for rows in presets.values() for r in measure_next(rows)],
            "pair": _pair(con, today, currency, billing, extra or []),
            "loo": track.leave_one_out(cal), "held_out": track.held_out(cal), "track": track.track_record(con),
            "by_target": track.leave_one_target_out(ws, lambda t: cal_.efficiencies(con, leave_out=t))}


def _pair(con, today, currency: str, billing: str | None, extra: list[dict]) -> dict:
    """The seed's question past one card (tasks/estimate/pair.py), or why it has no answer here."""
    from tasks.errors import UserError
    from tasks.estimate import pair

    try:
        a, b = pair.machine(pair.SEED[0]), pair.machine(pair.SEED[1], pair.SEED_FABRIC_B)
        return pair.compare(con, a, b, billing=billing or "on_demand", currency=currency, today=today, extra=extra)
    except UserError as e:
        return {"error": str(e)}


def _cost_chart(rows: list[dict], preset: str) -> dict:
    data = [{"type": f"{r['instance_type']} ({r['gpu_key']})", "kind": r["status"], "cost": r["cost_per_mtok"],
             "lo": r["cost_lo"], "hi": r["cost_hi"]} for r in rows if r["cost_per_mtok"] is not None]
    base = alt.Chart(alt.Data(values=data)).encode(y=alt.Y("type:N", sort=alt.EncodingSortField("cost"), title=None))
    bars = base.mark_rule(strokeDash=[4, 3]).encode(x=alt.X("lo:Q", title=f"{preset}: cost per 1M tokens"),
                                                    x2="hi:Q")
    pts = base.mark_point(size=70).encode(
        x="cost:Q", shape=alt.Shape("kind:N", title="measured or estimate", legend=alt.Legend(orient="bottom")),
        fill=alt.condition("datum.kind == 'measured'", alt.value("#1f4e79"), alt.value("transparent")),
        color=alt.value("#1f4e79"), tooltip=["type:N", "kind:N", "cost:Q", "lo:Q", "hi:Q"])
    return (bars + pts).properties(width=420, height=max(60, 22 * len(data))).to_dict()


def _track_chart(points: list[dict]) -> dict:
    line = alt.Chart(alt.Data(values=[{"v": min(p["measured"] for p in points)},
                                      {"v": max(p["measured"] for p in points)}])).mark_line(
        strokeDash=[2, 2], color="#888").encode(x="v:Q", y="v:Q")
    enc = dict(
        x=alt.X("measured:Q", title="measured tokens/s", scale=alt.Scale(type="log", nice=False, padding=12),
                axis=alt.Axis(format="~s")),
        y=alt.Y("estimate:Q", title="estimate (tokens/s)", scale=alt.Scale(type="log", nice=False, padding=12),
                axis=alt.Axis(format="~s")),
        # colour and shape on one field: one legend
        shape=alt.Shape("kind:N", title="scored how", legend=alt.Legend(orient="bottom", columns=1)),
        color=alt.Color("kind:N", title="scored how", legend=alt.Legend(orient="bottom", columns=1)),
        tooltip=["label:N", "kind:N", "estimate:Q", "measured:Q"])
    pts = alt.Chart(alt.Data(values=points)).mark_point(size=70, filled=False).encode(**enc)
    # the estimates recorded before their measurement landed (the track record proper), filled and on top, so
    # they stand out from the scores computed after the fact
    rec = alt.Chart(alt.Data(values=[p for p in points if p["kind"] == RECORDED])).mark_point(
        size=90, filled=True, opacity=1).encode(**enc)
    return (line + pts + rec).properties(width=400, height=300).to_dict()


def _fmt(x, spec=".4g") -> str:
    return "" if x is None else format(x, spec)


def _num(x, spec=".4g"):
    """A number shown as `spec`, sorting as the number (None: the table's missing value)."""
    return None if x is None else Sorted(escape(format(x, spec)), sort=x)


def candidates_page(data) -> Page:
    cand = getattr(data, "candidates", None) or {"presets": {}, "next": [], "loo": None, "held_out": None, "track": []}
    p = Page(NAME, "Candidates (estimates)",
             "Instance types not yet measured, with an ESTIMATE of tokens/s and cost per 1M tokens from the "
             "measured runs and each GPU's datasheet (costgap estimate). Estimates are drawn hollow with a dashed "
             "90% interval and labelled 'estimate' in every row; they never enter a measured figure, a gap, an "
             "alert or gap_history.csv. Measured types show their measurement.")
    for line in cand.get("errors", []):
        p.card(Markup("<p><b>Not estimated.</b> {}</p>").format(line))
    if not cand["presets"]:
        p.card(Markup("<p>No estimate: no measured fine-tune on a GPU with a datasheet entry to calibrate on.</p>"))
    for preset, rows in cand["presets"].items():
        p.h2(f"{preset}: measured and estimated")
        cols = [("status", "Measured or estimate"), ("instance_type", "Instance type"), ("gpu", "GPU"),
                ("tokens_per_s", "Tokens/s"), ("cost", "Cost per 1M tokens"), ("interval", "90% interval"),
                ("why", "How (fit, precision) or why not")]
        shown = [{"status": r["status"], "instance_type": r["instance_type"], "gpu": f"{r['gpu_count']}x {r['gpu_key'] or r['gpu']}",
                  "tokens_per_s": _num(r["tokens_per_s"], ",.0f"), "cost": _num(r["cost_per_mtok"]),
                  "interval": (Sorted(escape(f"{_fmt(r['cost_lo'])}..{_fmt(r['cost_hi'])}"), sort=r["cost_lo"])
                               if r["cost_lo"] is not None else None),
                  "why": r["reason"] or ((f"{r['fit']}, {r['precision']}" + (
                      f"; x{r['gpu_count']} at scaling {r['scaling']:.2f} ({r['scaling_lo']:.2f}..{r['scaling_hi']:.2f}), "
                      f"{r['scaling_label']}" if r["gpu_count"] > 1 and r.get("scaling_lo") is not None else ""))
                      if r["status"] == "estimate" else "measured")}
                 for r in rows]
        parts = [p.table(f"candidates_{preset}", cols, shown, numeric=("tokens_per_s", "cost", "interval"), csv=[{k: v for k, v in r.items() if k != "assumptions"}
                                                                    | {"assumptions": " | ".join(r["assumptions"])}
                                                                    for r in rows])]
        if any(r["cost_per_mtok"] is not None for r in rows):
            parts.append(p.chart(f"candidates-{preset}", lambda r=rows, s=preset: _cost_chart(r, s),
                                 f"{preset}: filled = measured, hollow with a dashed interval = estimate.",
                                 rows=[{k: r[k] for k in ("instance_type", "gpu_key", "status", "cost_per_mtok",
                                                          "cost_lo", "cost_hi", "currency")}
                                       for r in rows if r["cost_per_mtok"] is not None]))
        p.card(Markup("").join(parts))
    _pair_section(p, cand.get("pair"))
    p.h2("Measure next")
    nxt = cand["next"]
    p.card(Markup("<p>Estimated types whose 90% interval reaches the cheapest measured cost: measuring them could change "
                  "the answer.</p>") + (Markup("<ul>{}</ul>").format(Markup("").join(
               Markup("<li>{}: {} ({}), estimate {} {}/1M tokens, 90% {}..{}</li>").format(
                   r["preset"], r["instance_type"], r["gpu_key"], _fmt(r["cost_per_mtok"]), r["currency"],
                   _fmt(r["cost_lo"]), _fmt(r["cost_hi"]))
               for r in nxt)) if nxt else Markup("<p>None: no estimate could beat the cheapest measured type.</p>")))
    p.h2("Track record: estimates against measurements")
    loo, held = cand["loo"] or {"rows": []}, cand["held_out"] or {"rows": []}
    points = [{"label": f"{r['preset']} on {r['gpu']}", "kind": "leave-one-preset-out",
               "estimate": r["predicted_tokens_per_s"], "measured": r["measured_tokens_per_s"]} for r in loo["rows"]]
    points += [{"label": f"{r['preset']} on {r['target']}", "kind": "leave-one-target-out",
                "estimate": r["predicted_tokens_per_s"], "measured": r["measured_tokens_per_s"]}
               for r in (cand.get("by_target") or {"rows": []})["rows"]]
    points += [{"label": f"{r['preset']} on {r['gpu']}", "kind": "held-out published figure",
                "estimate": r["predicted_tokens_per_s"], "measured": r["per_gpu_tokens_per_s"]}
               for r in held["rows"] if r.get("predicted_tokens_per_s")]
    points += [{"label": f"{r['preset']} on {r['target']}", "kind": RECORDED,
                "estimate": r["tokens_per_s"], "measured": r["measured_tokens_per_s"]}
               for r in cand["track"] if r.get("measured_tokens_per_s")]
    parts = []
    if points:
        parts.append(p.chart("estimate-track", lambda: _track_chart(points),
                             "Each point: an estimate against the measurement it was scored on (dashed: exact).",
                             rows=points))
    cols = [("what", "Scored on"), ("preset", "Preset"), ("gpu", "GPU"), ("estimate", "Estimate tokens/s"),
            ("measured", "Measured tokens/s"), ("error", "Error"), ("source", "Source")]
    scored = [{"what": "leave-one-preset-out", "preset": r["preset"], "gpu": r["gpu"], "estimate": _num(r["predicted_tokens_per_s"], ",.0f"),
               "measured": _num(r["measured_tokens_per_s"], ",.0f"), "error": _num(r["error"], "+.1%"),
               "source": f"{r['inside']}/{r['runs']} runs inside the 90% interval"} for r in loo["rows"]]
    scored += [{"what": f"leave-one-target-out ({r['target']})", "preset": r["preset"], "gpu": r["gpu"],
                "estimate": _num(r["predicted_tokens_per_s"], ",.0f"), "measured": _num(r["measured_tokens_per_s"], ",.0f"),
                "error": _num(r["error"], "+.1%"), "source": f"{r['inside']}/{r['runs']} runs inside the 90% interval"}
               for r in (cand.get("by_target") or {"rows": []})["rows"]]
    scored += [{"what": "held-out published", "preset": r["preset"], "gpu": r["gpu"],
                "estimate": _num(r.get("predicted_tokens_per_s"), ",.0f"), "measured": _num(r.get("per_gpu_tokens_per_s"), ",.0f"),
                "error": _num(r.get("error"), "+.1%"), "source": f"{r['source']} ({r['date']})"} for r in held["rows"]]
    if scored:
        parts.append(p.table("estimate_scores", cols, scored, numeric=("estimate", "measured", "error")))
    if loo.get("median_abs_error") is not None:
        parts.append(Markup("<p>Leave-one-out median |error| {:.1%}, {}/{} measured runs inside their 90% interval; "
                            "held-out published figures: median error {} (tuned stacks against plain PyTorch "
                            "presets).</p>").format(loo["median_abs_error"], loo["inside"], loo["runs"],
                                                    _fmt(held.get("median_error"), "+.1%")))
    recorded = cand["track"]
    parts.append(Markup("<p>{} estimate(s) recorded in the warehouse, {} since measured.</p>").format(
        len(recorded), sum(1 for r in recorded if r.get("measured_at"))))
    if recorded:
        parts.append(p.table("estimate_track", [("preset", "Preset"), ("target", "Target"), ("estimated_at", "Estimated"),
                                                ("tokens_per_s", "Estimate tokens/s"), ("interval", "90% interval"),
                                                ("measured_at", "Measured"), ("measured_tokens_per_s", "Measured tokens/s"),
                                                ("error", "Error"), ("inside", "Inside the interval")],
                             [{**r, "estimated_at": r["estimated_at"].isoformat(timespec="minutes"),
                               "measured_at": r["measured_at"].isoformat(timespec="minutes") if r.get("measured_at") else None,
                               "tokens_per_s": _num(r["tokens_per_s"], ",.0f"), "error": _num(r.get("error"), "+.1%"),
                               "interval": Sorted(escape(f"{r['tokens_per_s_lo']:,.0f}..{r['tokens_per_s_hi']:,.0f}"),
                                                  sort=r["tokens_per_s_lo"]),
                               "inside": None if r.get("inside") is None else ("yes" if r["inside"] else "no"),
                               "measured_tokens_per_s": _num(r.get("measured_tokens_per_s"), ",.0f")} for r in recorded],
                             numeric=("tokens_per_s", "interval", "measured_tokens_per_s", "error")))
    p.card(Markup("").join(parts))
    return p


def _pair_chart(flip: dict, names: dict, mode: str) -> dict:
    data = [{"size_b": r["size"] / 1e9, "machine": names[k], "cost": r[k]} for r in flip["rows"] for k in ("a", "b")
            if r[k] is not None]
    return alt.Chart(alt.Data(values=data)).mark_line(point=True, strokeDash=[4, 3]).encode(
        x=alt.X("size_b:Q", title=f"model size, billion parameters ({mode})", scale=alt.Scale(type="log")),
        y=alt.Y("cost:Q", title="PREDICTED cost per 1M tokens", scale=alt.Scale(type="log")),
        color=alt.Color("machine:N", title=None, legend=alt.Legend(orient="bottom", columns=1)),
        tooltip=["machine:N", "size_b:Q", "cost:Q"]).properties(width=420, height=240).to_dict()


def _pair_section(p: Page, res: dict | None) -> None:
    """The seed's question past one card: two multi-GPU types, PREDICTED from their interconnect."""
    p.h2("Past one card: PREDICTED from the interconnect")
    if not res or res.get("error"):
        p.card(Markup("<p>No prediction: {}</p>").format((res or {}).get("error", "not computed")))
        return
    cur = res["currency"]
    rows = [("A", res["a"]), ("B", res["b"])] + ([("B without peer-to-peer", res["b_host"])] if "b_host" in res else [])
    rows += [(f"{r['tag'].upper()} x{r['nodes']} nodes over {r['network']}", r) for r in res.get("nodes", [])]
    cols = [("what", "Machine (predicted)"), ("gpus", "GPUs"), ("how", "Fabric, strategy"), ("eff", "Scaling efficiency"),
            ("comm", "Communication share"), ("cost", f"Cost per 1M tokens ({cur})"), ("why", "Why")]
    shown = []
    for tag, r in rows:
        bound = r.get("tcp_line_rate_bound") or {}
        shown.append({"what": f"{tag}: {r['machine']}", "gpus": r["gpus"],
                      "how": f"{r['fabric']}, {r.get('strategy') or ''}".strip(", "),
                      "eff": (Sorted(Markup("{}").format(f"{r['efficiency']:.2f} ({r['eff_lo']:.2f}..{r['eff_hi']:.2f})"),
                                     sort=r["efficiency"])
                              if r.get("efficiency") is not None else None),
                      "comm": _num(r.get("comm_share"), ".1%"),
                      "cost": (Sorted(Markup("{}").format(f"{_fmt(r['cost'])} ({_fmt(r['cost_lo'])}..{_fmt(r['cost_hi'])})"),
                                      sort=r["cost"])
                               if r.get("cost") is not None else None),
                      "why": (r.get("label") or r.get("reason") or "")
                      + (f"; at most {bound['efficiency']:.2f} even at TCP's full line rate"
                         if bound.get("efficiency") is not None else "")})
    names = {"a": f"A {res['a']['machine']}", "b": f"B {res['b']['machine']}"}
    changes = "; ".join(f"{'A' if x == 'a' else 'B' if x == 'b' else 'neither'} cheaper up to {s0 / 1e9:,.1f}B, then "
                        f"{'A' if y == 'a' else 'B' if y == 'b' else 'neither fits'} from {s1 / 1e9:,.1f}B"
                        for s0, s1, x, y in res["flip"]["changes"]) or (
        "not known without a price for both (below)" if _unpriced(res) else "no change of the cheaper machine")
    p.card(Markup("<p>{}</p>").format(
           f"The seed's question, as a PREDICTION (not a measurement): a {res['size'] / 1e9:,.0f}B {res['mode']} "
           "fine-tune on two multi-GPU types, each GPU's tokens/s from the calibrated estimator, the scaling efficiency "
           "predicted from the interconnect (a collective model fitted on public nccl-tests rows, a step model fitted on "
           f"public scaling rows; costgap scaling). Where the ranking changes with model size: {changes}.")
           + p.table("scaling_pair", cols, shown, numeric=("gpus", "eff", "comm", "cost"),
                                            csv=[{k: v for k, v in r.items() if k != "notes"} for _, r in rows])
           + _pair_cost_chart(p, res, names))


def _unpriced(res: dict) -> list[tuple[str, str]]:
    """(label, key) of each machine of the pair that has no price per hour."""
    return [(t, k) for t, k in (("A", "a"), ("B", "b")) if res[k].get("price_per_hour") is None]


def _pair_priced(res: dict) -> bool:
    """Whether any size of the pair has a cost (a price and a fit) to compare or draw."""
    return any(r[k] is not None for r in res["flip"]["rows"] for k in ("a", "b"))


def _pair_cost_chart(p: Page, res: dict, names: dict) -> Markup:
    """The pair's cost against model size, or why there is none: a chart with no point (neither machine priced,
    or neither fits at any size) would be an empty log-scaled plot that the image export cannot size."""
    if not _pair_priced(res):
        return Markup("<p>No cost chart: {}.</p>").format(
            "; ".join(f"{t}: {res[k]['price_source']}" for t, k in _unpriced(res)) or "neither machine fits at any size")
    return p.chart("scaling-pair", lambda: _pair_chart(res["flip"], names, res["mode"]),
                   "PREDICTED cost per 1M tokens against model size: where the lines cross, the cheaper type changes.",
                   rows=[{"size": r["size"], **{names[k]: r[k] for k in ("a", "b")}} for r in res["flip"]["rows"]])
