"""Give a tests/report_world.py warehouse what the overview's picker offers a choice of: dated FX rates
(EUR, GBP), a second billing mode (monthly prices) and a second preset that only one target ran.

    .venv/bin/python -c "from tests.report_world import make_world; from tests.report_options import add_options; add_options(make_world('/tmp/w.duckdb'))"

Synthetic figures for tests only (not rates or quotes from anywhere).
"""

from __future__ import annotations

from datetime import timedelta

from tests.report_world import END
from warehouse.db import connect

# (currency, days before END the rate starts, units per USD): two EUR rates inside the cost window, so a
# converted price is a blend of dated rates, not one factor
RATES = (("EUR", 200, 0.91), ("EUR", 12, 0.87), ("GBP", 200, 0.79))
MONTHLY_FACTOR = 0.7  # a monthly commitment at 70% of on-demand, quoted per month (/730 h)


def add_options(path: str, *, second_preset: str = "1b") -> str:
    con = connect(path)
    try:
        con.execute("set TimeZone = 'UTC'")
        for cur, days, rate in RATES:
            con.execute("insert into fx_rates values (?, ?, ?, 'synthetic (tests/report_options.py)')",
                        [cur, (END - timedelta(days=days)).date(), rate])
        con.execute("""
            insert into prices
            select provider, region, instance_type, 'monthly', currency, price_per_hour * $k,
                   price_per_hour * $k * 730, 'month', effective_from, effective_to, source || ' (monthly)',
                   fetched_at, last_seen_at, import_id
            from prices where billing_mode = 'on_demand'""", {"k": MONTHLY_FACTOR})
        first = con.execute("select min(target) from runs").fetchone()[0]
        con.execute("""
            insert into finetunes (run_id, seq, preset, status, mode, precision, n_gpus, seq_len, micro_batch,
                                   steps_timed, tokens_per_s, step_time_median_s, steady, mfu)
            select run_id, 1, $preset, 'ok', 'full', 'bf16', 1, 2048, 8, 20, 9000.0 * (0.97 + (hash(run_id) % 60) / 1000.0),
                   1.8, true, 0.4
            from runs where target = $first""", {"preset": second_preset, "first": first})
        con.execute("checkpoint")
    finally:
        con.close()
    return path
