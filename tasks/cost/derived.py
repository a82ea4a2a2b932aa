"""Derived cost figures from the measurements, and the tier recommendation's assumptions (DESIGN.md "Cost model").

    costgap tiers --tokens 1e10 --kwh-price 0.12

derived(): per (target, preset): tokens per GPU-day, hours and cost to train N tokens (reruns included:
C * N / 1e6), kWh and electricity cost per 1M tokens at a price per kWh (measured NVML energy; NULL
when not measured), MFU and multi-GPU scaling efficiency where measured. Every figure here is measured: the
instance's own tokens/s, on all its GPUs.
TierConfig: what the tier recommendation (tasks/estimate/tiers.py, above this room: it predicts) assumes.
repeatability(): run-to-run CV per (target, environment, figure) (issue 10.4).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from tasks.cost.table import cost_table
from tasks.errors import UserError
from warehouse import sql

FLOPS_PER_TOKEN = {"full": 6.0, "lora": 4.0, "qlora": 4.0}  # x params: fwd 2N + bwd 4N (LoRA: no weight grads)


@dataclass(frozen=True)
class TierConfig:
    """What the tier recommendation assumes; each assumption is named so a row can say which it used.
    Memory itself is the one memory model (tasks/probe/finetune/memory.py); multi-GPU scaling is measured or
    predicted from the interconnect (tasks/estimate/scaling.py), never assumed here."""

    # (tier name, representative size in parameters): the tier's upper bound, and 70B for the open tier
    tiers: tuple[tuple[str, float], ...] = (("<=7B", 7e9), ("7-13B", 13e9), (">13B", 70e9))
    modes: tuple[str, ...] = ("full", "lora")  # compared within a mode: full against full, LoRA against LoRA
    seq_len: int = 2048  # ASSUMED: the tokens of one sequence, as the probe's presets
    micro_batch: int = 1  # ASSUMED: sequences per GPU and micro-step (what the memory must hold)
    grad_accumulation: int = 1  # ASSUMED: micro-steps per optimizer step (gradients synchronised once per step)
    memory_headroom: float = 0.9  # usable share of GPU memory (allocator, CUDA context)

    def __post_init__(self) -> None:
        if not 0 < self.memory_headroom <= 1:
            raise UserError(f"memory_headroom = {self.memory_headroom!r}: expected (0, 1]")
        for name in ("seq_len", "micro_batch", "grad_accumulation"):
            if getattr(self, name) < 1:
                raise UserError(f"{name} = {getattr(self, name)!r}: expected an integer >= 1")
        if not self.modes or set(self.modes) - set(FLOPS_PER_TOKEN):
            raise UserError(f"modes = {self.modes!r}: expected some of {sorted(FLOPS_PER_TOKEN)}")


def derived(con: duckdb.DuckDBPyConnection, *, train_tokens: float = 1e9, price_per_kwh: float = 0.15,
            **cost_kwargs) -> pl.DataFrame:
    """cost_table plus tokens/GPU-day, hours and cost for `train_tokens`, kWh and electricity per 1M tokens.

    price_per_kwh is in the reporting currency (default 0.15: an ASSUMED round industrial tariff).
    """
    if train_tokens <= 0 or price_per_kwh < 0:
        raise UserError(f"train_tokens = {train_tokens!r} (> 0), price_per_kwh = {price_per_kwh!r} (>= 0)")
    t = cost_table(con, **cost_kwargs)
    gpus = pl.max_horizontal(pl.col("gpu_count").fill_null(0), pl.lit(1))
    return t.with_columns(
        tokens_per_gpu_day=pl.col("tokens_per_s") * 86400.0 / gpus,
        hours_to_train=pl.lit(train_tokens) / (3600.0 * pl.col("tokens_per_s")) * pl.col("R"),
        cost_to_train=pl.col("cost_per_mtok") * (train_tokens / 1e6),  # C * (N/1e6): one multiply, as the site does
        electricity_cost_per_mtok=pl.col("kwh_per_mtok") * price_per_kwh,
        train_tokens=pl.lit(train_tokens),
    )


# the price-age fields a tier row carries from its cost row (tasks.cost.rules.price_ages)
STALE_KEYS = ("price_stale", "price_age_days_at_window_end", "price_stale_at_window_end", "price_age_days_today",
              "price_stale_today")
# ... and the unstable flag of the fine-tunes its cost rests on (issue 37.5: tasks.cost.table), with their types
UNSTABLE_KEYS = {"unstable": pl.Boolean, "unstable_runs": pl.Int64, "window_spread": pl.Float64, "runs": pl.Int64}


def repeatability(con: duckdb.DuckDBPyConnection, *, target: str | None = None) -> pl.DataFrame:
    """Run-to-run CV per (target, environment, figure): tokens/s per preset and each hardware metric."""
    return sql.frame(con, "cost_repeatability", {"target": target})
