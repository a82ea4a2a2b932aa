"""What `costgap gap`, `targets` and `tiers` print for a person (their `--json` prints the raw rows instead).

    costgap targets --warehouse .costgap/demo.duckdb
    costgap gap h100-sxm-1x h200-sxm-1x --warehouse .costgap/demo.duckdb

Every figure goes through cli/format.py (separators, units, currency, no e-notation); every verdict word
comes from tasks/cost/verdict.py, as the site's answer table does; the gap's terms are in log points, as the
alerts and the site say them; windows are shown to the minute. Each function returns the lines to print.
"""

from __future__ import annotations

from cli import format as fmt
from tasks.cost.verdict import CLEAR, MEANING, WITHIN_NOISE

VERDICT_LEGEND = f"verdict: {CLEAR} = {MEANING[CLEAR]}; {WITHIN_NOISE} = {MEANING[WITHIN_NOISE]}"


def window_flag(c: dict) -> str:
    """The stale flag of the price a window's cost is built on, for the line that shows that cost."""
    if not c.get("price_stale_at_window_end"):
        return ""
    return f"STALE price: confirmed {c['price_age_days_at_window_end']} d before the window's end"


def unstable_flag(c: dict) -> str:
    """The flag of a cost built on fine-tunes whose steady-state rule did not converge, with their window spread."""
    if not c.get("unstable"):
        return ""
    spread = f", window spread {c['window_spread'] * 100:.1f}%" if c.get("window_spread") is not None else ""
    return f"UNSTABLE: {c['unstable_runs']} of {c['runs']} runs did not settle{spread}"


def today(c: dict, cur: str) -> str:
    """Today's price and the cost at it, with the price's age and stale flag."""
    if c.get("price_now_per_hour") is None:
        return "today: no price in force"
    stale = " STALE" if c["price_stale"] else ""
    return (f"today: {fmt.per_hour(c['price_now_per_hour'], cur)} -> {fmt.per_mtok(c['cost_now_per_mtok'], cur)} "
            f"(price confirmed {c['price_age_days']} d ago{stale})")


def _flags(*flags: str) -> str:
    return "; ".join(f for f in flags if f)


def _side(name: str, c: dict, cur: str, width: int) -> list[str]:
    return [f"  {name + ':':<{width + 1}} {fmt.per_mtok(c['cost_per_mtok'], cur)} "
            f"{fmt.interval(c['cost_lo'], c['cost_hi'])}; {fmt.per_hour(c['price_per_hour'], cur)} (window blend), "
            f"{fmt.tokens_per_s(c['tokens_per_s'])} ({c['runs']} runs), {c['failed_attempts']}/{c['attempts']} "
            f"attempts failed (R {fmt.fixed(c['R'], 3)}){_sep(_flags(window_flag(c), unstable_flag(c)))}",
            f"  {'':<{width + 1}} {today(c, cur)}"]


def _prices(mode: str | None) -> str:
    from reports.pages.answer import BILLING_WORDS  # the site's words for a billing mode (imported when asked)

    return f"{BILLING_WORDS.get(mode, mode)} prices" if mode else "prices at each target's own billing mode"


def terms_line(ln_ratio: float, terms: dict, head: str) -> str:
    """'why, in log points ...: price -24.0 + throughput +8.9 + reliability +0.0 = -15.0'."""
    return (f"{head} in log points (100 x ln, about the % each moves the cost ratio): price "
            f"{fmt.log_points(terms['price'])} + throughput {fmt.log_points(terms['throughput'])} + reliability "
            f"{fmt.log_points(terms['reliability'])} = {fmt.log_points(ln_ratio)}")


def gap_lines(res: dict) -> list[str]:
    """One gap(A, B) over one window: both costs, the gap with its interval and verdict, the terms, changes."""
    a, b, cur = res["a"], res["b"], res["currency"]
    width = max(len(a), len(b))
    more = "more" if res["gap"] >= 0 else "less"
    out = [f"{a} against {b}: preset {res['preset']}, {_prices(res['billing'])}, "
           f"window {fmt.window(res['window']['start'], res['window']['end'])}"]
    out += _side(a, res["components"]["a"], cur, width) + _side(b, res["components"]["b"], cur, width)
    out.append(f"gap: {a} costs {abs(res['gap']) * 100:,.1f}% {more} than {b} ({fmt.pct(res['gap'])}, 90% "
               f"{fmt.pct(res['gap_lo'])}..{fmt.pct(res['gap_hi'])}): {res['verdict']} ({MEANING[res['verdict']]})")
    out.append(terms_line(res["ln_ratio"], res["terms"], "why,"))
    out += [f"change: {ch['summary']}" for ch in res.get("changes", [])]
    return out


def between_lines(res: dict) -> list[str]:
    """How the gap moved between two windows: each window's gap, then the change split into the same terms."""
    out = []
    for n, key in enumerate(("window1", "window2"), start=1):
        out += [f"window {n}:"] + [f"  {line}" for line in gap_lines(res[key])]
    d = res["delta"]
    out.append(terms_line(d["ln_ratio"], d["terms"], "change of the gap from window 1 to window 2,"))
    for side in ("a", "b"):
        out += [f"  throughput term: {res[side]} {ch['field']}: {ch['before']} -> {ch['after']}"
                for ch in res["env_changes"][side]]
    out += [f"change: {ch['summary']}" for ch in res.get("changes", [])]
    return out


def targets_lines(rows: list[dict], versus: dict, currency: str) -> list[str]:
    """The cost table grouped by preset (cheapest preset first), each preset's answer and verdict on top."""
    if not rows:
        return ["no successful fine-tune runs in the window: costgap run, or costgap ingest PATH"]
    first = rows[0]
    out = [f"window {fmt.window(first['window_start'], first['window_end'])} (ends at the newest run unless "
           "--as-of); each run costed at the price in force then", VERDICT_LEGEND]
    presets = list(dict.fromkeys(r["preset"] for r in rows))  # rows come cheapest first
    for preset in presets:
        group = [r for r in rows if r["preset"] == preset]
        out += ["", _preset_head(preset, group, versus)]
        cells = []
        for r in group:
            if r["cost_per_mtok"] is None:  # a row of its own, saying why
                cells.append([r["target"], "no cost", "", "", "", fmt.num(r["tokens_per_s"]),
                              f"{r['failed_attempts']}/{r['attempts']}" if r["attempts"] is not None else "",
                              fmt.fixed(r["R"], 3) if r["R"] is not None else "",
                              _flags(f"no cost: {r['no_cost_reason']}", unstable_flag(r))])
                continue
            v = versus.get((0, r["target"], preset)) or {}
            vs = "cheapest" if v.get("verdict") is None else f"{fmt.pct(v['gap'])} {v['verdict']}"
            cells.append([r["target"], fmt.per_mtok(r["cost_per_mtok"], currency),
                          f"{fmt.num(r['cost_lo'])}..{fmt.num(r['cost_hi'])}", vs,
                          fmt.per_hour(r["price_per_hour"], currency), fmt.num(r["tokens_per_s"]),
                          f"{r['failed_attempts']}/{r['attempts']}", fmt.fixed(r["R"], 3),
                          _flags(_today_flag(r, currency), window_flag(r), unstable_flag(r))])
        out += fmt.table(cells, ["target", "cost", "90% interval", "vs cheapest", "price", "tokens/s",
                                 "failed", "R", ""], right=(5,))
    return out


def _sep(flag: str) -> str:
    return f"; {flag}" if flag else ""


def _today_flag(r: dict, cur: str) -> str:
    """Today's cost where today's price differs from the window's, and today's price age when it is stale."""
    if r.get("price_now_per_hour") is None:
        return "today: no price in force"
    moved = fmt.num(r["cost_now_per_mtok"]) != fmt.num(r["cost_per_mtok"])
    if not moved and not r["price_stale"]:
        return ""
    return today(r, cur)


def _preset_head(preset: str, group: list[dict], versus: dict) -> str:
    costed = [r for r in group if r["cost_per_mtok"] is not None]
    if not costed:
        return f"preset {preset}: no target has a cost"
    if len(costed) == 1:
        return f"preset {preset}: {costed[0]['target']} is the only target measured"
    second = costed[1]
    v = versus[(0, second["target"], preset)]
    return (f"preset {preset}: {costed[0]['target']} is cheapest; {second['target']} costs {v['gap'] * 100:,.1f}% more "
            f"{fmt.interval(v['gap_lo'], v['gap_hi'], fmt.pct)}: {v['verdict']}")


def tiers_lines(tiers: list[dict], extra: list[dict], currency: str, train_tokens: float,
                kwh_price: float) -> list[str]:
    """Per (tier, mode): the instance types that fit, cheapest first (legend first); past one card measured or
    predicted from the interconnect; then the derived figures per (target, preset)."""
    out = ["per model-size tier and training mode: which instance types fit a fine-tune of the tier's size, and "
           f"what a token costs there; time and cost to train {fmt.count(train_tokens)} tokens",
           "  * = recommended: the cheapest that fits, compared within one mode (full against full, LoRA against "
           "LoRA); ESTIMATED = tokens/s predicted, not measured; past one card the scaling is measured or predicted "
           "from the interconnect (fabric, busbw)"]
    group, cells = None, []
    for r in tiers:
        if (r["tier"], r["mode"]) != group:
            if cells:
                out += fmt.table(cells, indent="  ")
                cells = []
            group = (r["tier"], r["mode"])
            out.append(f"{r['tier']} ({fmt.num(r['tier_params'] / 1e9)}B), {r['mode']} fine-tune:")
        where = f"{r['instance_type']} ({r['provider']}, {r['gpus']}x {r['gpu']})"
        if r["cost_per_mtok"] is None:
            cells.append([" ", r["target"] or "", where, "does not fit" if r["fits"] is False else "no cost", "",
                          r["reason"] or ""])
            continue
        how = "measured" if r["status"] == "measured" else "ESTIMATED"
        if r["assumed"]:
            how += " (MFU ASSUMED equal)"
        if r["gpus"] > 1 and r["scaling"] is not None:
            how += (f"; {r['strategy'] or ''} scaling {fmt.fixed(r['scaling'], 2)} "
                    f"{fmt.interval(r['scaling_lo'], r['scaling_hi'], lambda x: fmt.fixed(x, 2))} {r['scaling_label']}")
        flags = _flags(window_flag(r), "today's price STALE" if r.get("price_stale_today") else "", unstable_flag(r))
        train = (f"{fmt.num(r['hours_to_train'])} h, {fmt.money(r['cost_to_train'], currency)}"
                 if r["cost_to_train"] is not None else "")
        cells.append(["*" if r["recommended"] else " ", r["target"] or "", where,
                      f"{fmt.per_mtok(r['cost_per_mtok'], currency)} {fmt.interval(r['cost_lo'], r['cost_hi'])}",
                      train, _flags(how, flags)])
    if cells:
        out += fmt.table(cells, indent="  ")
    out += ["", f"per target and preset: tokens per GPU-day; time and cost to train {fmt.count(train_tokens)} tokens "
            f"(reruns included); energy per 1M tokens at {fmt.num(kwh_price)} {currency}/kWh"]
    cells, notes = [], []
    for r in extra:
        name = f"{r['target']}/{r['preset']}"
        if r["tokens_per_s"] is None:  # a preset whose fine-tunes all failed or were not applicable
            notes.append(f"  {name}: no cost: {r['no_cost_reason']}")
            continue
        kwh = (f"{fmt.num(r['kwh_per_mtok'])} kWh = {fmt.money(r['electricity_cost_per_mtok'], currency)}"
               if r["kwh_per_mtok"] is not None else "energy not measured")
        money = fmt.money(r["cost_to_train"], currency) if r["cost_to_train"] is not None else "no price"
        stale = window_flag(r) if r["cost_to_train"] is not None else ""  # the cost to train is C x N
        cells.append([name, fmt.count(r["tokens_per_gpu_day"]),
                      f"{fmt.num(r['hours_to_train'])} h" if r["hours_to_train"] is not None else "? h", money, kwh,
                      _flags(stale, unstable_flag(r))])
    out += fmt.table(cells, ["target/preset", "tokens/GPU-day", "time", "cost", "energy per 1M tokens", ""],
                     right=(1, 2, 3))
    return out + notes


def answer_lines(rows: list[dict], cost: list[dict], currency: str | None) -> list[str]:
    """The site's answer per preset (reports.pages.answer.answer_rows), narrow: what `costgap run` ends with;
    then each (target, preset) without a cost, and why (`cost`: the cost table's rows)."""
    out = []
    if rows:
        cells = [[r["preset"], r["cheapest"], fmt.per_mtok(r["cost_per_mtok"], currency or r.get("currency", "")),
                  r["runner_up"] or "-", fmt.pct(r["gap"]) if r["runner_up"] else "-", r["verdict"]] for r in rows]
        out += (["the answer per preset: the cheapest target over the window, and how much more the next one costs",
                 VERDICT_LEGEND]
                + fmt.table(cells, ["preset", "cheapest", "cost", "runner-up", "costs more", "verdict"], right=(4,)))
    missing = [r for r in cost if r.get("cost_per_mtok") is None]
    out += [f"no cost for {r['target']}/{r['preset']}: "
            f"{r.get('no_cost_reason') or 'no price'}" for r in missing]
    if any(r.get("price_per_hour") is None and r.get("tokens_per_s") is not None for r in missing):
        out.append("  a cost per token needs a price: costgap prices import FILE (deploy/prices/lambda.csv shows "
                   "the columns)")
    return out or ["no cost yet: no fine-tune landed in the window"]
