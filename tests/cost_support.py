"""Test helpers for the pricing and cost tests: a migrated warehouse and facts inserted directly.

    .venv/bin/pytest -q tests/test_cost_model.py

Rows go straight into the core tables (targets, environments, runs, finetunes, attempts) the way
landing would write them, so a test states exactly the tokens/s, prices and failures it reasons about.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import duckdb

from warehouse.db import connect

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def warehouse(path) -> duckdb.DuckDBPyConnection:
    return connect(str(path))


def add_target(con, target: str, provider: str, region: str, instance_type: str, *,
               billing_mode: str = "on_demand", gpu_count: int = 1, gpu_model: str | None = "H100") -> None:
    con.execute("insert into targets (target, provider, region, instance_type, gpu_model, gpu_count, billing_mode,"
                " dispatch, first_seen, updated_at) values (?, ?, ?, ?, ?, ?, ?, 'import', ?, ?)",
                [target, provider, region, instance_type, gpu_model, gpu_count, billing_mode, T0, T0])


def add_env(con, environment_id: str, *, driver: str = "550.54", cuda_runtime: str = "12.4",
            torch: str = "2.5.1", cudnn: str = "9.1", container_image: str | None = None,
            gpu_memory_gib: float = 80.0, gpu_count: int = 1) -> None:
    con.execute("insert or ignore into environments (environment_id, gpu_name, gpu_count, gpu_memory_gib, driver,"
                " cuda_driver, cuda_runtime, cudnn, torch, container_image) values (?, 'GPU', ?, ?, ?, ?, ?, ?, ?, ?)",
                [environment_id, gpu_count, gpu_memory_gib, driver, cuda_runtime, cuda_runtime, cudnn, torch,
                 container_image])


def add_run(con, run_id: str, target: str, started_at: datetime, tokens_per_s: float | None, *,
            preset: str = "1b", environment_id: str = "env0", status: str = "ok", failed: int = 0,
            completed: int = 1, mfu: float | None = None, kwh_per_mtok: float | None = None,
            scaling_efficiency: float | None = None, params_total: int | None = 1_000_000_000,
            mode: str = "full", peak_mem_gib: float | None = None) -> None:
    con.execute("insert into runs (run_id, target, profile, probe_version, environment_id, started_at, finished_at,"
                " status, landed_at) values (?, ?, 'standard', '0.1.0', ?, ?, ?, 'ok', ?)",
                [run_id, target, environment_id, started_at, started_at + timedelta(minutes=5), started_at])
    con.execute("insert into finetunes (run_id, seq, preset, status, mode, precision, n_gpus, params_total,"
                " tokens_per_s, mfu, kwh_per_mtok, scaling_efficiency, peak_mem_allocated_gib)"
                " values (?, 0, ?, ?, ?, 'bf16', 1, ?, ?, ?, ?, ?, ?)",
                [run_id, preset, status, mode, params_total, tokens_per_s, mfu, kwh_per_mtok, scaling_efficiency,
                 peak_mem_gib])
    for i in range(failed):
        con.execute("insert into attempts values (?, ?, 'finetune', ?, 'failed', 'oom', 'injected', 1.0, ?, 'bundle',"
                    " null)", [run_id, target, i + 1, started_at])
    for i in range(completed):
        con.execute("insert into attempts values (?, ?, 'finetune', ?, 'completed', null, null, 9.0, ?, 'bundle',"
                    " null)", [run_id, target, failed + i + 1, started_at])


def add_price(con, provider: str, region: str, instance_type: str, amount: float, *, currency: str = "USD",
              billing_mode: str = "on_demand", period: str = "hour", effective_from: datetime = T0 - timedelta(days=60),
              seen: datetime | None = None, source: str = "test: price stated in the test") -> None:
    from tasks.pricing import PriceRow, import_rows

    row = PriceRow(provider, region, instance_type, billing_mode, currency, amount, period, effective_from,
                   source=source, fetched_at=seen or effective_from)
    import_rows(con, [row], source_kind="test", source=source, fetched_at=row.fetched_at)
