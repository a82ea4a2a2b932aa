"""Turn parsed bundles into one pandas frame per fact table (columnar, for batch inserts and GX).

    .venv/bin/pytest -q tests/test_land.py

A batch of bundles becomes a handful of frames (runs, environments, attempts, measurements,
finetunes, telemetry), so landing is one INSERT ... SELECT per table instead of a round trip per
row, and Great Expectations validates the same frames that land. List and JSON columns travel as
JSON text and are cast in the insert SQL (warehouse/queries/land_insert_*.sql).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from datetime import datetime, timedelta

import pandas as pd

from pydantic import BaseModel

from tasks.bundle import Bundle, BundleError, Environment
from tasks.canonical import canonical_json

DONE_STATES = ("completed", "skipped", "not_applicable")  # a task whose last try ended so is fine
GOOD_FINETUNE = ("ok", "not_applicable", "skipped")  # anything else makes the run partial

ENV_COLUMNS = (
    "gpu_name", "gpu_count", "gpu_memory_gib", "driver", "cuda_driver", "cuda_runtime", "cudnn",
    "nccl", "torch", "python", "os", "kernel", "cpu_model", "cpu_cores", "ram_gib",
    "pcie_gen_current", "pcie_gen_max", "pcie_width_current", "pcie_width_max", "power_limit_w",
    "container_image",
)
FT_COLUMNS = (
    "preset", "status", "mode", "precision", "device", "n_gpus", "params_total", "params_trainable",
    "params_non_embedding", "seq_len", "micro_batch", "compile", "activation_checkpointing",
    "steps_timed", "tokens_per_s", "step_time_median_s", "step_time_p10_s", "step_time_p90_s",
    "steady", "compile_s", "mfu", "peak_mem_allocated_gib", "peak_mem_reserved_gib", "energy_j",
    "j_per_token", "kwh_per_mtok", "loss_first", "loss_last", "scaling_efficiency", "message",
    "config_search", "search_s",
)
TELEMETRY_COLUMNS = ("t", "gpu", "util", "mem_util", "power_w", "sm_clock_mhz", "temp_c")


INT32_MAX = 2**31 - 1  # DuckDB integer columns; BIGINT_FIELDS go to bigint columns
BIGINT_FIELDS = {"params_total", "params_trainable", "params_non_embedding"}


def check_ranges(b: Bundle, file: str) -> None:
    """Raise BundleError for an integer the warehouse column cannot hold (e.g. attempt 10**12):
    valid for the pydantic model, but it would abort the whole batch's INSERT."""
    stack: list[tuple[str, object]] = [("", b)]
    while stack:
        prefix, node = stack.pop()
        for name in type(node).model_fields:
            value, where = getattr(node, name), f"{prefix}{name}"
            if isinstance(value, BaseModel):
                stack.append((f"{where}.", value))
            elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
                stack.extend((f"{where}.{i}.", item) for i, item in enumerate(value))
            elif isinstance(value, list) and value and type(value[0]) is int and max(map(abs, value)) > INT32_MAX:
                i = next(i for i, v in enumerate(value) if abs(v) > INT32_MAX)
                raise BundleError(file, f"{where}.{i}", value[i], f"out of range (|value| <= {INT32_MAX})")
            elif isinstance(value, int) and not isinstance(value, bool):
                limit = 2**63 - 1 if name in BIGINT_FIELDS else INT32_MAX
                if abs(value) > limit:
                    raise BundleError(file, where, value, f"out of range (|value| <= {limit})")


def environment_id(env: Environment) -> tuple[str, str]:
    """(sha256 of the canonical environment JSON, that JSON): the environment's identity."""
    doc = canonical_json(env.model_dump(mode="json"))
    return hashlib.sha256(doc).hexdigest(), doc.decode("utf-8")


def run_status(b: Bundle) -> str:
    """ok: every task's last try finished and every fine-tune is ok; failed: nothing usable."""
    last: dict[str, tuple[int, str]] = {}
    for a in b.attempts:
        if a.task not in last or a.attempt >= last[a.task][0]:
            last[a.task] = (a.attempt, a.state)
    tasks_ok = all(state in DONE_STATES for _, state in last.values())
    ft_ok = all(f.status in GOOD_FINETUNE for f in b.finetune)
    if tasks_ok and ft_ok:
        return "ok"
    usable = (
        any(state == "completed" for _, state in last.values())
        or bool(b.measurements)
        or any(f.status in ("ok", "unstable") for f in b.finetune)
    )
    return "partial" if usable else "failed"


def bounded_values(unit: str, value: float) -> dict:
    """A measurement's value again under the column its unit bounds (validate.py's rules read them; None
    elsewhere): a share or fraction of a whole in [0, 1], a percentage in [0, 100], a latency in ms > 0, a
    yes/no as 0 or 1, and a sharing gain (aggregate / alone - 1) above -1."""
    return {"share_value": value if unit == "share" else None, "pct_value": value if unit == "%" else None,
            "ms_value": value if unit == "ms" else None, "bool_value": value if unit == "bool" else None,
            "gain_value": value if unit == "fraction" else None}


class FrameBatch:
    """Column lists for one batch of bundles; `frames()` returns pandas DataFrames."""

    def __init__(self, landed_at: datetime, skew: timedelta):
        self.landed_at, self.skew = landed_at, skew
        self.cols: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        self.raw: dict[str, str] = {}  # run_id -> raw text (for quarantine)
        self.file: dict[str, str] = {}  # run_id -> source file

    def _row(self, table: str, **values) -> None:
        cols = self.cols[table]
        for k, v in values.items():
            cols[k].append(v)

    def add(self, b: Bundle, source_uri: str, raw: str) -> None:
        rid = b.bundle_id
        self.raw[rid], self.file[rid] = raw, source_uri
        env_id, env_doc = environment_id(b.environment)
        env = b.environment
        self._row("environments", run_id=rid, environment_id=env_id, doc=env_doc,
                  **{c: getattr(env, c) for c in ENV_COLUMNS})
        self._row("targets", target=b.target, gpu_model=env.gpu_name, gpu_count=env.gpu_count,
                  dispatch=b.origin.kind if b.origin.kind != "cli" else None,
                  first_seen=b.started_at, run_id=rid)
        self._row("runs", run_id=rid, target=b.target, profile=b.profile,
                  probe_version=b.probe_version, environment_id=env_id,
                  started_at=b.started_at, finished_at=b.finished_at, status=run_status(b),
                  origin_kind=b.origin.kind, flow_run_id=b.origin.flow_run_id,
                  deployment=b.origin.deployment, source_uri=source_uri, landed_at=self.landed_at,
                  earliest_ok=b.started_at - self.skew, latest_ok=b.finished_at + self.skew)
        for a in b.attempts:
            self._row("attempts", run_id=rid, target=b.target, task=a.task, attempt=a.attempt,
                      state=a.state, error_kind=a.error_kind, message=a.message,
                      duration_s=a.duration_s, started_at=a.started_at, source="bundle",
                      source_id=None, run_earliest_ok=b.started_at - self.skew,
                      run_latest_ok=b.finished_at + self.skew)
        for i, m in enumerate(b.measurements):
            c = m.conditions
            self._row("measurements", run_id=rid, seq=i, benchmark=m.benchmark,
                      benchmark_version=m.benchmark_version, metric=m.metric, value=m.value,
                      unit=m.unit, params=json.dumps(m.params, sort_keys=True), peak=m.peak,
                      peak_source=m.peak_source,
                      efficiency=(m.value / m.peak) if m.peak else None, repeats=m.repeats,
                      statistic=m.statistic, spread=m.spread, spread_kind=m.spread_kind,
                      flags=json.dumps(m.flags),
                      throttle_reasons=json.dumps(c.throttle_reasons) if c and c.throttle_reasons is not None else None,
                      sm_clock_mhz_min=c.sm_clock_mhz_min if c else None,
                      sm_clock_mhz_median=c.sm_clock_mhz_median if c else None,
                      power_w_median=c.power_w_median if c else None,
                      power_w_max=c.power_w_max if c else None,
                      temp_c_max=c.temp_c_max if c else None,
                      rate_value=m.value if m.unit.endswith("/s") else None,
                      **bounded_values(m.unit, m.value))
        for i, f in enumerate(b.finetune):
            mem = f.peak_mem_reserved_gib
            self._row("finetunes", run_id=rid, seq=i, **{c: getattr(f, c) for c in FT_COLUMNS},
                      step_time_s=json.dumps(f.step_time_s),
                      window_tokens_per_s=json.dumps(f.window_tokens_per_s),
                      configs_tried=json.dumps([c.model_dump(mode="json") for c in f.configs_tried]),
                      mem_fraction=(mem / env.gpu_memory_gib)
                      if mem is not None and env.gpu_memory_gib and f.device != "cpu" else None)
        tel = b.telemetry
        n = len(tel.t)
        if n:
            cols = self.cols["telemetry"]
            cols["run_id"].extend([rid] * n)
            for c in TELEMETRY_COLUMNS:
                cols[c].extend(getattr(tel, c))
            cols["phase"].extend(tel.phase if tel.phase else [None] * n)
            cols["duration_s"].extend([(b.finished_at - b.started_at).total_seconds()
                                       + self.skew.total_seconds()] * n)

    def frames(self) -> dict[str, pd.DataFrame]:
        out = {name: pd.DataFrame(dict(cols)) for name, cols in self.cols.items()}
        tel = out.get("telemetry")
        if tel is not None and len(tel):
            # time step to the previous sample of the same run and GPU: < 0 means out of order
            tel["t_step"] = tel.groupby(["run_id", "gpu"], sort=False)["t"].diff()
        return out
