"""Benchmark: pricing and costing 1,000 targets x 2 years of daily runs (~730k runs) in <= 10 s.

    .venv/bin/python -m tests.bench cost

Data is generated directly in DuckDB (not timed): 1,000 targets, 730 daily successful fine-tune runs
each, ~2% failed attempts, three price periods per target (a third of them in CNY, converted at
daily-dated FX rates), and an environment change half way. Timed, on a warm connection:
  cost_table over the full two years (every run ASOF-priced and FX-converted, medians, p, R, C, and
  the 90% interval from 2,000 bootstrap/posterior draws per target), the default 30-day cost_table,
  and the weekly cost_history over all runs. Target: the full two-year cost_table + cost_history <= 10 s.
Also printed (not in the target): change detection over every (target, preset) history.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

TARGETS = 1000  # the scale: 1,000 instance types
DAYS = 730  # two years of daily runs
TARGET_S = 10.0  # issue 6 acceptance, on this 2-core box
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def generate(con) -> None:
    values = {"start": START, "days": DAYS, "n": TARGETS}

    def run(sql: str, _unused=None) -> None:
        con.execute(sql, {k: v for k, v in values.items() if f"${k}" in sql})

    run("""
        insert into targets (target, provider, region, instance_type, gpu_model, gpu_count, billing_mode, dispatch,
                             first_seen, updated_at)
        select 't' || i, case when i % 3 = 0 then 'alibaba' else 'lambda' end, 'r' || (i % 7), 'it' || i, 'H100', 1,
               'on_demand', 'import', $start, $start
        from range($n) t(i)""")
    run("""
        insert into environments (environment_id, gpu_name, gpu_count, driver, cuda_driver, cuda_runtime, cudnn, torch)
        values ('e0', 'GPU', 1, '550.54', '12.4', '12.4', '9.1', '2.5.1'),
               ('e1', 'GPU', 1, '560.35', '12.6', '12.6', '9.5', '2.6.0')""")
    run("""
        insert into runs (run_id, target, profile, probe_version, environment_id, started_at, finished_at, status,
                          landed_at)
        select 'r' || i || '_' || d, 't' || i, 'standard', '0.1.0', case when d < $days // 2 then 'e0' else 'e1' end,
               $start + to_days(d) + to_minutes((hash(i, d) % 600)::int),
               $start + to_days(d) + to_minutes((hash(i, d) % 600)::int + 20), 'ok', $start + to_days(d)
        from range($n) t(i), range($days) s(d)""")
    run("""
        insert into finetunes (run_id, seq, preset, status, mode, precision, n_gpus, params_total, tokens_per_s, mfu,
                               kwh_per_mtok)
        select 'r' || i || '_' || d, 0, '1b', 'ok', 'full', 'bf16', 1, 1000000000,
               (20000 + 300 * (i % 100)) * (case when d < $days // 2 then 1.0 else 0.95 end)
                   * (1 + 0.02 * ((hash(d, i) % 1000) / 1000.0 - 0.5)),
               0.4, 0.01
        from range($n) t(i), range($days) s(d)""")
    run("""
        insert into attempts
        select run_id, target, 'finetune', 1, 'completed', null, null, 600.0, started_at, 'bundle', null from runs""")
    run("""
        insert into attempts
        select run_id, target, 'finetune', 2, 'failed', 'oom', 'synthetic', 30.0, started_at, 'bundle', null
        from runs where hash(run_id) % 50 = 0""")
    run("""
        insert into prices
        select case when i % 3 = 0 then 'alibaba' else 'lambda' end, 'r' || (i % 7), 'it' || i, 'on_demand',
               case when i % 3 = 0 then 'CNY' else 'USD' end,
               amount, amount, 'hour', $start - to_days(30) + to_days(240 * k),
               case when k < 2 then $start - to_days(30) + to_days(240 * (k + 1)) end,
               'bench: synthetic price', $start, $start, 'bench'
        from (select i, k, (case when i % 3 = 0 then 14.0 else 2.0 end) * (1 + (i % 13) / 10.0) * (1 - 0.05 * k)
                  as amount from range($n) t(i), range(3) s(k))""")
    run("""
        insert into fx_rates
        select 'CNY', ($start - to_days(1) + to_days(d))::date, 7.1 + 0.2 * ((d % 90) / 90.0), 'bench: synthetic rate'
        from range($days + 2) s(d)""")


def main() -> int:
    from tasks.cost.changepoint import detect
    from tasks.cost.table import cost_history, cost_table
    from warehouse.db import connect

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.duckdb"
        con = connect(str(path))
        t0 = time.perf_counter()
        generate(con)
        runs = con.execute("select count(*) from runs").fetchall()[0][0]
        print(f"generated {runs:,} runs for {TARGETS:,} targets in {time.perf_counter() - t0:.1f} s (not timed)")
        as_of = START + timedelta(days=DAYS)
        cost_table(con, as_of=as_of, window_days=7)  # warm the connection (catalog, query cache)

        c1, t1 = time.process_time(), time.perf_counter()
        full = cost_table(con, as_of=as_of, window_days=DAYS + 1)
        full_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        hist = cost_history(con, bucket="week", until=as_of)
        hist_s = time.perf_counter() - t2
        cpu_s = time.process_time() - c1
        t3 = time.perf_counter()
        recent = cost_table(con, as_of=as_of, window_days=30)
        recent_s = time.perf_counter() - t3
        t4 = time.perf_counter()
        found = detect(con, only_significant=False)
        detect_s = time.perf_counter() - t4
        con.close()

    priced = full["cost_per_mtok"].drop_nulls().len()
    print(f"cost_table, 2 years ({full['runs'].sum():,} runs, {full.height} targets, {priced} priced): {full_s:.2f} s")
    print(f"cost_history, weekly ({hist.height:,} target-weeks): {hist_s:.2f} s")
    print(f"cost_table, 30 days ({recent['runs'].sum():,} runs): {recent_s:.2f} s")
    print(f"change detection over all 730k runs ({len(found)} environment changes tested, "
          f"{sum(f['significant'] for f in found)} significant; planted -5%): {detect_s:.2f} s (not in the target)")
    total = full_s + hist_s
    print(f"pricing + costing 730k runs (2-year cost_table + weekly history): {total:.2f} s wall, {cpu_s:.2f} s CPU"
          f" (all threads); target <= {TARGET_S:.0f} s wall; ratio {total / TARGET_S:.2f}")
    print(f"load average while it ran: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other jobs slow it down)")
    ok = total <= TARGET_S and priced == TARGETS and full["runs"].sum() == TARGETS * DAYS
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
