"""Every figure built on an old price is flagged on its own line, in `costgap gap`, `targets` and `tiers`.

    .venv/bin/pytest -q tests/test_price_stale.py

A: priced once, last confirmed 40 days before the window's end (stale there, stale today).
B: the same price confirmed on the window's last day (fresh at the window's end; stale today only once
   more than 30 days have passed since, so today's flag is read at a fixed `today` where it matters).
C: never priced: every stale field is null, never false. Real DuckDB files, the real CLI.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

from typer.testing import CliRunner

from cli.main import app
from tasks.cost import rules
from tasks.cost import table as cost
from tasks.cost.model import CostOptions
from tests.cost_support import T0, add_env, add_price, add_run, add_target, warehouse

END = T0 + timedelta(days=40)  # the window's end (--as-of)
STALE_KEYS = ("price_age_days_at_window_end", "price_stale_at_window_end", "price_age_days_today",
              "price_stale_today", "price_stale")


def _world(path) -> None:
    con = warehouse(path)
    add_target(con, "A", "lambda", "us-east-1", "gpu_1x_a10", gpu_model="A10")
    add_target(con, "B", "lambda", "us-east-2", "gpu_1x_a10", gpu_model="A10")
    add_target(con, "C", "nowhere", "r", "unpriced", gpu_model="A10")
    add_env(con, "env0")
    add_price(con, "lambda", "us-east-1", "gpu_1x_a10", 0.75, seen=T0)
    add_price(con, "lambda", "us-east-2", "gpu_1x_a10", 0.75, seen=END)
    for i in range(3):
        for t, x in (("A", 1000.0 + i), ("B", 900.0 + i), ("C", 800.0 + i)):
            add_run(con, f"{t}{i}", t, END - timedelta(days=3 - i), x)
    con.close()


def _cli(*args: str):
    got = CliRunner().invoke(app, list(args))
    assert got.exit_code == 0, got.output
    return got.output


def test_price_ages_are_judged_at_the_window_end_and_today():
    opts = CostOptions()
    got = rules.price_ages(T0, END, T0, END + timedelta(days=5), opts)
    assert got["price_age_days_at_window_end"] == 40 and got["price_stale_at_window_end"] is True
    assert got["price_age_days_today"] == 45 and got["price_stale_today"] is True
    fresh = rules.price_ages(END + timedelta(days=2), END, END, END + timedelta(days=3), opts)
    assert fresh["price_age_days_at_window_end"] == 0 and fresh["price_stale_at_window_end"] is False
    none = rules.price_ages(None, END, None, END, opts)
    assert all(none[k] is None for k in STALE_KEYS)


def test_targets_flags_the_cost_line_and_json_names_both_ages(tmp_path):
    wh = tmp_path / "w.duckdb"
    _world(wh)
    rows = {r["target"]: r for r in json.loads(_cli("targets", "--json", "--as-of", END.isoformat(),
                                                    "--warehouse", str(wh)))}
    a, b, c = rows["A"], rows["B"], rows["C"]
    assert (a["price_age_days_at_window_end"], a["price_stale_at_window_end"]) == (40, True)
    assert (b["price_age_days_at_window_end"], b["price_stale_at_window_end"]) == (0, False)
    assert a["price_stale_today"] is True and a["price_age_days_today"] == a["price_age_days"]
    assert all(c[k] is None for k in STALE_KEYS), c  # no price at all: null, not false
    text = _cli("targets", "--as-of", END.isoformat(), "--warehouse", str(wh)).splitlines()
    cost_line = {ln.split()[0]: ln for ln in text if ln.split() and ln.split()[0] in "ABC"}
    assert "STALE price: confirmed 40 d before the window's end" in cost_line["A"]
    assert "STALE" not in cost_line["B"] and "STALE" not in cost_line["C"]


def test_gap_and_tiers_flag_the_line_that_shows_the_cost(tmp_path):
    wh = tmp_path / "w.duckdb"
    _world(wh)
    out = _cli("gap", "A", "B", "--as-of", END.isoformat(), "--warehouse", str(wh)).splitlines()
    a_line = next(ln for ln in out if ln.startswith("  A: "))
    b_line = next(ln for ln in out if ln.startswith("  B: "))
    assert "USD/1M tokens" in a_line and "STALE price: confirmed 40 d before the window's end" in a_line
    assert "STALE" not in b_line
    res = json.loads(_cli("gap", "A", "B", "--json", "--as-of", END.isoformat(), "--warehouse", str(wh)))
    assert res["stale_at_window_end"] is True
    assert res["components"]["a"]["price_age_days_at_window_end"] == 40
    assert res["components"]["b"]["price_stale_at_window_end"] is False
    tiers = json.loads(_cli("tiers", "--json", "--window", "3650d", "--warehouse", str(wh)))["tiers"]
    by = {r["target"]: r for r in tiers}
    assert by["A"]["price_stale_at_window_end"] is True and by["C"]["price_stale"] is None
    assert all(by["C"][k] is None for k in STALE_KEYS)
    lines = _cli("tiers", "--window", "3650d", "--warehouse", str(wh)).splitlines()
    for ln in (ln for ln in lines if " A " in ln and "1M tokens" in ln):
        assert "STALE price: confirmed 39 d before the window's end" in ln  # ends at the newest run


def test_tiers_flags_every_line_and_row_whose_cost_comes_from_a_stale_price(tmp_path):
    """Tier lines (cost per 1M tokens at the tier's size) and derived lines (cost to train N tokens) alike:
    A's window price is stale, B's is not, C has none."""
    wh = tmp_path / "w.duckdb"
    _world(wh)
    shown = 0
    for ln in _cli("tiers", "--window", "3650d", "--warehouse", str(wh)).splitlines():
        words = ln.replace("/", " ").split()
        who = next((w for w in words[:4] if w in ("A", "B", "C")), None)
        costs = "USD/1M tokens" in ln or re.search(r"\d h +[0-9][0-9,.]* USD", ln)  # a tier's cost, a cost to train
        if who is None or not costs:
            continue
        shown += 1
        assert ("STALE price: confirmed 39 d before the window's end" in ln) == (who == "A"), ln
    assert shown == 4  # A and B in the <=7B LoRA tier (a 7B full fine-tune and anything 13B+ fits no A10 alone),
    #   and each one's cost to train
    got = json.loads(_cli("tiers", "--json", "--window", "3650d", "--warehouse", str(wh)))
    rows = [(r, r["cost_per_mtok"]) for r in got["tiers"]] + [(r, r["cost_to_train"]) for r in got["derived"]]
    priced = [r for r, c in rows if c is not None]
    assert len(priced) == 4
    for r in priced:
        assert r["price_stale_at_window_end"] is (r["target"] == "A"), r
        assert r["price_age_days_at_window_end"] == (39 if r["target"] == "A" else 0)
    assert all(r["price_stale_at_window_end"] is None for r, _ in rows if r["target"] == "C")


def test_table_rows_equal_the_rule(tmp_path):
    """One source of truth: the cost table's age fields are rules.price_ages of its own inputs."""
    wh = tmp_path / "w.duckdb"
    _world(wh)
    con = warehouse(wh)
    today = END + timedelta(days=1)
    rows = cost.cost_table(con, as_of=END, today=today).to_dicts()
    for r in rows:
        want = rules.price_ages(r["price_last_seen_at"] if r["price_per_hour"] is not None else None,
                                r["window_end"], None, today, CostOptions())
        assert (r["price_age_days_at_window_end"], r["price_stale_at_window_end"]) == (
            want["price_age_days_at_window_end"], want["price_stale_at_window_end"])
    con.close()
