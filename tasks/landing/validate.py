"""Great Expectations suites over each landing batch: a bundle that fails any expectation is
quarantined, never landed. Every result (pass or fail, per run and per batch) is kept.

    .venv/bin/pytest -q tests/test_validate.py tests/test_corpus.py

One GX ephemeral context per process; one suite per fact table, run over the batch's pandas
frame from tasks.landing.frames (GX takes pandas, not polars; duckdb-engine SQL fails silently).
Failures are mapped back to bundles through GX's unexpected_index_list on the `run_id` column.
Thresholds below are physical limits, not tuning: a value outside them is broken telemetry or a
broken probe.
"""

from __future__ import annotations

import os
import uuid
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

import pandas as pd

EFFICIENCY_MAX = 1.05  # achieved / theoretical peak; >5% over a datasheet peak is a wrong number
UTIL_RANGE = (0.0, 100.0)  # NVML utilisation is a percentage
TEMP_C_RANGE = (-40.0, 130.0)  # NVML temperature; GPUs throttle/shut down near 90-100 C
MEM_FRACTION_MAX = 1.05  # peak reserved memory / device memory (GiB rounding tolerance)
# NVML product names ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "AMD Instinct MI300X"):
# letters, digits, spaces and . _ - ( ) +. Quotes, ;, <, >, / or \ mean SQL/HTML/path injection.
GPU_NAME_REGEX = r"^[A-Za-z0-9][A-Za-z0-9 ._()+-]{0,127}$"


def _suites() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """table -> [(GX expectation class name, kwargs)]. The one place the rules live."""
    between = "ExpectColumnValuesToBeBetween"
    pair_ge = "ExpectColumnPairValuesAToBeGreaterThanB"
    skip_null = {"or_equal": True, "ignore_row_if": "either_value_is_missing"}
    return {
        "runs": [
            ("ExpectColumnValuesToBeUnique", {"column": "run_id"}),
            ("ExpectColumnValuesToNotBeNull", {"column": "environment_id"}),
            (pair_ge, {"column_A": "finished_at", "column_B": "started_at", **skip_null}),
        ],
        "environments": [
            (between, {"column": "gpu_count", "min_value": 0}),
            (between, {"column": "cpu_cores", "min_value": 1}),
            ("ExpectColumnValuesToMatchRegex", {"column": "gpu_name", "regex": GPU_NAME_REGEX}),
        ],
        "attempts": [
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["run_id", "task", "attempt"]}),
            (between, {"column": "duration_s", "min_value": 0}),
            (pair_ge, {"column_A": "started_at", "column_B": "run_earliest_ok", **skip_null}),
            (pair_ge, {"column_A": "run_latest_ok", "column_B": "started_at", **skip_null}),
        ],
        "measurements": [
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["run_id", "seq"]}),
            (between, {"column": "efficiency", "min_value": 0, "max_value": EFFICIENCY_MAX}),
            (between, {"column": "rate_value", "min_value": 0, "strict_min": True}),
            (between, {"column": "spread", "min_value": 0}),
            # issue 45's figures, by unit (frames.bounded_values): shares, utilization, latencies, yes/no, gains
            (between, {"column": "share_value", "min_value": 0, "max_value": 1}),
            (between, {"column": "pct_value", "min_value": UTIL_RANGE[0], "max_value": UTIL_RANGE[1]}),
            (between, {"column": "ms_value", "min_value": 0, "strict_min": True}),
            ("ExpectColumnValuesToBeInSet", {"column": "bool_value", "value_set": [0.0, 1.0]}),
            (between, {"column": "gain_value", "min_value": -1, "strict_min": True}),
        ],
        "finetunes": [
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["run_id", "seq"]}),
            (between, {"column": "tokens_per_s", "min_value": 0, "strict_min": True}),
            (between, {"column": "mfu", "min_value": 0, "max_value": 1}),
            (between, {"column": "mem_fraction", "min_value": 0, "max_value": MEM_FRACTION_MAX}),
            (pair_ge, {"column_A": "step_time_median_s", "column_B": "step_time_p10_s", **skip_null}),
            (pair_ge, {"column_A": "step_time_p90_s", "column_B": "step_time_median_s", **skip_null}),
        ],
        "telemetry": [
            (between, {"column": "util", "min_value": UTIL_RANGE[0], "max_value": UTIL_RANGE[1]}),
            (between, {"column": "mem_util", "min_value": UTIL_RANGE[0], "max_value": UTIL_RANGE[1]}),
            (between, {"column": "power_w", "min_value": 0}),
            (between, {"column": "sm_clock_mhz", "min_value": 0}),
            (between, {"column": "temp_c", "min_value": TEMP_C_RANGE[0], "max_value": TEMP_C_RANGE[1]}),
            (between, {"column": "t", "min_value": 0}),
            (between, {"column": "t_step", "min_value": 0}),  # samples in time order
            (pair_ge, {"column_A": "duration_s", "column_B": "t", **skip_null}),
        ],
    }


@dataclass
class Outcome:
    """What one batch's validation found."""

    validation_id: str
    failed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # run_id -> failures
    rows: pd.DataFrame | None = None  # validation_results rows, one per (expectation, run) + batch


@lru_cache(maxsize=1)
def _context():
    """The process's GX ephemeral context with one suite and one dataframe asset per table."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = ctx.data_sources.add_pandas("costgap_batch")
    plan = {}
    for table, rules in _suites().items():
        suite = gx.ExpectationSuite(name=f"costgap.{table}")
        for cls_name, kwargs in rules:
            suite.add_expectation(getattr(gxe, cls_name)(**kwargs))
        suite = ctx.suites.add(suite)
        batch_def = source.add_dataframe_asset(table).add_batch_definition_whole_dataframe("batch")
        plan[table] = (suite, batch_def)
    return plan


def _column_of(config) -> str | None:
    kw = config.kwargs
    if "column" in kw:
        return kw["column"]
    if "column_list" in kw:
        return ",".join(kw["column_list"])
    if "column_A" in kw:
        return f"{kw['column_A']}>={kw['column_B']}"
    return None


def _observed(item: dict[str, Any], column: str | None) -> str:
    values = {k: v for k, v in item.items() if k != "run_id"}
    return ", ".join(f"{k}={v}" for k, v in values.items()) or str(column)


# A suite is run first for its verdict alone, and again in full only when it fails (rare: a damaged bundle).
# The full format computes every unexpected row and its run_id for each expectation, which is what maps a
# failure back to its bundles; for a batch that passes it finds nothing, at twice the cost: measured here over
# a batch of the H100 samples (11,000 telemetry rows), 1.05 CPU-s per batch in full against 0.55 for the verdict.
PASS_FORMAT = {"result_format": "BOOLEAN_ONLY"}
FAIL_FORMAT = {"result_format": "COMPLETE", "unexpected_index_column_names": ["run_id"]}


def _validate(batch_def, suite, df: pd.DataFrame, result_format: dict):
    with warnings.catch_warnings():  # GX 1.24 calls Series.values on tz-aware columns
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=DeprecationWarning)
        return batch_def.get_batch(batch_parameters={"dataframe": df}).validate(suite, result_format=result_format)


def validate_frames(frames: dict[str, pd.DataFrame], now: datetime | None = None) -> Outcome:
    """Run every suite whose table has rows; map failures to run_ids; build the result rows."""
    out = Outcome(validation_id=str(uuid.uuid4()))
    now = now or datetime.now(timezone.utc)
    plan = _context()
    rows: dict[str, list] = {k: [] for k in
                             ("run_id", "suite", "expectation", "column_name", "success", "observed")}

    def add(run_id, suite, exp, col, ok, observed):
        for k, v in zip(rows, (run_id, suite, exp, col, ok, observed)):
            rows[k].append(v)

    for table, (suite, batch_def) in plan.items():
        df = frames.get(table)
        if df is None or not len(df):
            continue
        run_ids = pd.unique(df["run_id"])
        result = _validate(batch_def, suite, df, PASS_FORMAT)
        if not result.success:  # which bundles, and what they hold: the suite again, with every unexpected row
            result = _validate(batch_def, suite, df, FAIL_FORMAT)
        for r in result.results:
            cfg = r.expectation_config
            col = _column_of(cfg)
            bad: dict[str, str] = {}
            if r.exception_info and r.exception_info.get("raised_exception"):
                # the expectation itself could not run: every bundle in the batch fails it
                msg = str(r.exception_info.get("exception_message"))[:200]
                bad = {rid: f"could not evaluate: {msg}" for rid in run_ids}
            for item in (r.result or {}).get("unexpected_index_list") or []:
                rid = item.get("run_id")
                if rid is not None and rid not in bad:
                    bad[rid] = _observed(item, col)
            if not r.success and not bad:  # a failure GX did not attribute to rows
                bad = {rid: str((r.result or {}).get("observed_value")) for rid in run_ids}
            add(None, suite.name, cfg.type, col, not bad,
                f"{len(bad)} of {len(run_ids)} bundles failed" if bad else f"{len(run_ids)} bundles")
            for rid in run_ids:
                ok = rid not in bad
                add(rid, suite.name, cfg.type, col, ok, None if ok else bad[rid][:500])
                if not ok:
                    out.failed.setdefault(rid, []).append(
                        {"suite": suite.name, "expectation": cfg.type, "column": col,
                         "kwargs": {k: v for k, v in cfg.kwargs.items() if k != "batch_id"},
                         "observed": bad[rid][:500]})
    frame = pd.DataFrame(rows)
    frame.insert(0, "validation_id", out.validation_id)
    frame["validated_at"] = now
    out.rows = frame
    return out


def describe(failures: list[dict[str, Any]]) -> str:
    """One line naming each failed rule, its column and the offending value."""
    parts = []
    for f in failures:
        rule = f["expectation"].removeprefix("expect_")
        limits = {k: f["kwargs"][k] for k in ("min_value", "max_value") if f["kwargs"].get(k) is not None}
        shown = f" {limits}" if limits else ""
        parts.append(f"{f['suite'].removeprefix('costgap.')}.{f['column']}: {rule}{shown}; got {f['observed']}")
    return "; ".join(parts)
