"""A synthetic warehouse for the report's tests and benchmark, generated directly in DuckDB with SQL.

    .venv/bin/python -c "from tests.report_world import make_world; make_world('/tmp/w.duckdb', runs=1000, telemetry=100000)"

Shape: `targets` instance types, runs spread evenly over `weeks`, an environment change (torch and
CUDA) half way, a price change at two thirds, ~6% failed fine-tune attempts, power-capped GEMM
measurements, telemetry samples spread over the runs, validation results and a few quarantined
bundles. Not measured data: for tests and benchmarks only.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from warehouse.db import connect

END = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def make_world(path: str, *, runs: int = 240, telemetry: int = 2400, targets: int = 4, weeks: int = 12,
               target_names: list[str] | None = None, prices: bool = True) -> str:
    names = target_names or [f"gpu-{i}" for i in range(targets)]
    start = END - timedelta(weeks=weeks)
    span_s = (END - start).total_seconds()
    con = connect(path)
    try:
        con.execute("set TimeZone = 'UTC'")
        con.execute("create temp table names as select unnest($n) as target, generate_subscripts($n, 1) - 1 as ti",
                    {"n": names})
        p = {"start": start, "span": span_s, "runs": runs, "nt": len(names)}
        con.execute("""
            insert into targets
            select target, 'democloud', 'eu-1', 'inst.' || ti, case when ti % 2 = 0 then 'NVIDIA H200' else 'NVIDIA A10' end,
                   1, 'on_demand', 'pool-' || ti, 'pool', $start, $start
            from names""", {"start": start})
        con.execute("""
            insert into environments (environment_id, gpu_name, gpu_count, driver, cuda_runtime, torch, python, os, cpu_model,
                                      pcie_gen_current, power_limit_w, doc)
            select md5(n.target || '/' || k), case when ti % 2 = 0 then 'NVIDIA H200' else 'NVIDIA A10' end, 1,
                   '580.' || k, case when k = 0 then '12.8' else '13.0' end, case when k = 0 then '2.12.0' else '2.13.0' end,
                   '3.11', 'Linux', 'Xeon', 5, 700, '{}'
            from names n, range(2) r(k)""")
        con.execute("""
            insert into runs
            select md5('run' || i), n.target, 'quick', '0.1.0',
                   md5(n.target || '/' || case when i * 2 >= $runs then 1 else 0 end),
                   $start + to_microseconds(cast(i * $span / $runs * 1e6 as bigint)),
                   $start + to_microseconds(cast(i * $span / $runs * 1e6 as bigint)) + interval 90 second,
                   'ok', 'pool', null, null, 'memory://results/' || i, $start
            from range($runs) r(i) join names n on n.ti = i % $nt""", p)
        con.execute("create temp table rr as select run_id, target, started_at, row_number() over (order by started_at) - 1 as i from runs")
        con.execute("""
            insert into attempts
            select run_id, target, 'gemm', 1, 'completed', null, null, 2.0, started_at, 'bundle', null from rr
            union all
            select run_id, target, 'finetune', 1, 'failed', case when i % 3 = 0 then 'oom' else 'cuda_error' end,
                   'CUDA out of memory (synthetic)', 4.0, started_at, 'bundle', null from rr where hash(i) % 16 = 0
            union all
            select run_id, target, 'finetune', case when hash(i) % 16 = 0 then 2 else 1 end, 'completed', null, null, 9.0,
                   started_at, 'bundle', null from rr""")
        con.execute("""
            insert into measurements (run_id, seq, benchmark, benchmark_version, metric, value, unit, params, peak, peak_source,
                                      efficiency, repeats, statistic, spread, spread_kind, flags, throttle_reasons,
                                      sm_clock_mhz_min, sm_clock_mhz_median, power_w_median)
            select run_id, s, b, '1', m, v, u, '{}', pk, 'datasheet (synthetic)', v / pk, 5, 'median', 0.01, 'iqr',
                   []::varchar[], case when s = 0 and i % 5 = 0 then ['sw_power_cap'] else []::varchar[] end,
                   1575, 1700, 690
            from (
                select rr.*, s,
                       ['gemm', 'memory', 'pcie', 'dataloader'][s + 1] as b,
                       ['bf16_tflops', 'hbm_copy_gbps', 'h2d_pinned_gbps', 'next_latency_ms'][s + 1] as m,
                       [700.0, 4200.0, 52.0, 1.5][s + 1] * (0.95 + (hash(i * 7 + s) % 100) / 1000.0) as v,
                       ['TFLOP/s', 'GB/s', 'GB/s', 'ms'][s + 1] as u,
                       [989.0, 4800.0, 64.0, null][s + 1] as pk
                from rr, range(4) t(s)
            )""")
        con.execute("""
            insert into finetunes (run_id, seq, preset, status, mode, precision, n_gpus, seq_len, micro_batch, steps_timed,
                                   tokens_per_s, step_time_median_s, steady, mfu)
            select run_id, 0, 'tiny', 'ok', 'full', 'bf16', 1, 2048, 8, 20,
                   (case when target = $first then 60000 else 30000 end) * (case when i * 2 >= $runs then 0.9 else 1.0 end)
                     * (0.98 + (hash(i) % 40) / 1000.0), 0.25, true, 0.45
            from rr""", {"first": names[0], "runs": runs})
        per_run = max(1, telemetry // max(runs, 1))
        con.execute("""
            insert into telemetry
            select md5('run' || (j // $per)), (j % $per) * 0.5, 0, 90 + j % 10, 50, 650 + j % 50, 1500 + j % 300, 55 + j % 10, 'finetune'
            from range($n) r(j) where j // $per < $runs""", {"per": per_run, "n": telemetry, "runs": runs})
        con.execute("""
            insert into validation_results
            select 'batch-' || (i // 10), run_id, 'bundle_facts', e, c, true, null, started_at + interval 2 minute
            from rr, (values ('expect_column_values_to_be_between', 'tokens_per_s'),
                             ('expect_column_values_to_be_unique', 'run_id')) v(e, c)""")
        con.execute("""
            insert into quarantine (bundle_id, source_uri, target, reason, failed, raw, quarantined_at)
            select md5('bad' || k), 'memory://results/bad' || k, $t, 'tokens_per_s <= 0 (expectation failed)',
                   '{"expectation": "expect_column_values_to_be_between"}', '{}', $end
            from range(3) r(k)""", {"t": names[-1], "end": END})
        con.execute("""
            insert into validation_results
            select 'batch-bad', md5('bad' || k), 'bundle_facts', 'expect_column_values_to_be_between', 'tokens_per_s', false,
                   '-5.0', $end from range(3) r(k)""", {"end": END})
        if prices:
            con.execute("""
                insert into price_imports values ('imp-1', 'csv', 'synthetic.csv', $start, $start, 1, 1, 0, 0)""",
                        {"start": start})
            con.execute("""
                insert into prices
                select 'democloud', 'eu-1', 'inst.' || ti, 'on_demand', 'USD', pr, pr, 'hour', f, t, 'synthetic.csv:' || ti,
                       f, $end, 'imp-1'
                from (
                    select ti, $start - interval 30 day as f, $change as t, 2.0 + ti * 1.1 as pr from names
                    union all
                    select ti, $change, null, (2.0 + ti * 1.1) * 0.85 from names
                )""", {"start": start, "change": start + (END - start) * 2 / 3, "end": END})
        con.execute("checkpoint")
    finally:
        con.close()
    return path
