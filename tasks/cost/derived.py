"""Derived cost figures and the per-model-size-tier recommendation (DESIGN.md "Cost model", Derived).

    costgap tiers --tokens 1e10 --kwh-price 0.12

derived(): per (target, preset): tokens per GPU-day, hours and cost to train N tokens (reruns included:
C * N / 1e6), kWh and electricity cost per 1M tokens at a price per kWh (measured NVML energy; NULL
when not measured), MFU and multi-GPU scaling efficiency where measured.
tier_recommendations(): for <=7B, 7-13B and >13B, whether each target fits a fine-tune of the tier's
representative size (full ~16 B/param, LoRA ~2 B/param + adapters, both + activations) and what a token
would cost there: measured tokens/s scaled by FLOPs per token (6N full, 4N LoRA) at the measured MFU,
times GPUs x scaling efficiency when the tier needs more GPUs than the measurement used. Every row says
`assumed` where a figure was not measured, and why.
repeatability(): run-to-run CV per (target, environment, figure) (issue 10.4).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from tasks.cost.model import effective_cost
from tasks.cost.table import cost_table
from tasks.errors import UserError
from warehouse import sql

# Bytes per parameter (mixed-precision Adam: bf16 weights + grads, fp32 master + 2 moments = 16 B;
# LoRA keeps frozen bf16 weights = 2 B). Source: ZeRO paper (Rajbhandari et al. 2020, sec. 3), HF PEFT docs.
FULL_BYTES_PER_PARAM = 16.0
LORA_BYTES_PER_PARAM = 2.0
FLOPS_PER_TOKEN = {"full": 6.0, "lora": 4.0, "qlora": 4.0}  # x params: fwd 2N + bwd 4N (LoRA: no weight grads)
GIB = 1024 ** 3


@dataclass(frozen=True)
class TierConfig:
    """What the tier recommendation assumes; each assumption is named so a row can say which it used."""

    # (tier name, representative size in parameters): the tier's upper bound, and 70B for the open tier
    tiers: tuple[tuple[str, float], ...] = (("<=7B", 7e9), ("7-13B", 13e9), (">13B", 70e9))
    activation_bytes_per_param: float = 2.0  # ASSUMED: seq 2k, micro-batch 1, activation checkpointing
    lora_adapter_fraction: float = 0.01  # ASSUMED: adapters ~1% of params, trained at 16 B/param
    assumed_scaling_efficiency: float = 0.9  # ASSUMED where multi-GPU scaling was not measured
    memory_headroom: float = 0.9  # usable share of GPU memory (allocator, CUDA context)

    def __post_init__(self) -> None:
        if not 0 < self.assumed_scaling_efficiency <= 1:
            raise UserError(f"assumed_scaling_efficiency = {self.assumed_scaling_efficiency!r}: expected (0, 1]")
        if not 0 < self.memory_headroom <= 1:
            raise UserError(f"memory_headroom = {self.memory_headroom!r}: expected (0, 1]")
        if self.activation_bytes_per_param < 0 or self.lora_adapter_fraction < 0:
            raise UserError("activation_bytes_per_param and lora_adapter_fraction: expected >= 0")


def memory_need_gib(params: float, mode: str, cfg: TierConfig) -> float:
    act = cfg.activation_bytes_per_param * params
    if mode == "full":
        return (FULL_BYTES_PER_PARAM * params + act) / GIB
    adapters = cfg.lora_adapter_fraction * params * FULL_BYTES_PER_PARAM
    return (LORA_BYTES_PER_PARAM * params + adapters + act) / GIB


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
        scaling_assumed=pl.col("scaling_efficiency").is_null() & (gpus > 1),
        train_tokens=pl.lit(train_tokens),
    )


# the price-age fields a tier row carries from its cost row (tasks.cost.rules.price_ages)
STALE_KEYS = ("price_stale", "price_age_days_at_window_end", "price_stale_at_window_end", "price_age_days_today",
              "price_stale_today")
# ... and the unstable flag of the fine-tunes its cost rests on (issue 37.5: tasks.cost.table), with their types
UNSTABLE_KEYS = {"unstable": pl.Boolean, "unstable_runs": pl.Int64, "window_spread": pl.Float64, "runs": pl.Int64}


def _tier_row(tier: str, size: float, r: dict, mem: dict, cfg: TierConfig) -> dict:
    per_gpu = mem.get("gpu_memory_gib")
    gpus = max(int(mem.get("gpu_count") or r.get("gpu_count") or 1), 1)
    notes: list[str] = []
    out = {"tier": tier, "tier_params": size, "target": r["target"], "preset": r["preset"], "cost_per_mtok": None,
           "fits": False, "mode": None, "assumed": False, "reason": "", "gpus": gpus,
           **{k: r.get(k) for k in STALE_KEYS}, **{k: r.get(k) for k in UNSTABLE_KEYS}}
    if per_gpu is None:
        out.update(fits=None, assumed=True,
                   reason="GPU memory unknown (no GPU in the environment): fit not assessed")
        return out
    usable = per_gpu * gpus * cfg.memory_headroom
    mode = next((m for m in ("full", "lora") if memory_need_gib(size, m, cfg) <= usable), None)
    if mode is None:
        out["reason"] = (f"does not fit: LoRA needs ~{memory_need_gib(size, 'lora', cfg):.0f} GiB, "
                         f"{gpus} x {per_gpu:.0f} GiB x {cfg.memory_headroom:g} usable = {usable:.0f} GiB")
        return out
    out.update(fits=True, mode=mode)
    need = memory_need_gib(size, mode, cfg)
    notes.append(f"{mode} fits: ~{need:.0f} GiB of {usable:.0f} GiB usable (activations assumed "
                 f"{cfg.activation_bytes_per_param:g} B/param)")
    measured_params, measured_mode = r.get("params_total"), r.get("mode") or "full"
    if not measured_params or r.get("cost_per_mtok") is None:
        why = f" ({r['no_cost_reason']})" if r.get("no_cost_reason") else ""
        out.update(assumed=True, reason="; ".join(notes + [f"no priced measurement with a parameter count to scale{why}"]))
        return out
    x = r["tokens_per_s"] * (FLOPS_PER_TOKEN.get(measured_mode, 6.0) * measured_params) / (
        FLOPS_PER_TOKEN[mode] * size)
    assumed = r.get("mfu") is None
    notes.append(f"tokens/s scaled from {measured_params / 1e9:.2g}B {measured_mode} at "
                 + (f"measured MFU {r['mfu']:.0%}" if r.get("mfu") is not None else "unmeasured MFU (ASSUMED equal)"))
    used = max(int(r.get("n_gpus") or 1), 1)
    if gpus > used:
        eff = r.get("scaling_efficiency")
        if eff is None:
            eff, assumed = cfg.assumed_scaling_efficiency, True
            notes.append(f"{gpus} GPUs at ASSUMED scaling efficiency {eff:g}")
        else:
            notes.append(f"{gpus} GPUs at measured scaling efficiency {eff:.2f}")
        x *= gpus / used * eff
    out.update(cost_per_mtok=effective_cost(r["price_per_hour"], x, r["R"]), assumed=assumed,
               reason="; ".join(notes), tokens_per_s=x)
    return out


def tier_recommendations(con: duckdb.DuckDBPyConnection, *, config: TierConfig | None = None,
                         **cost_kwargs) -> pl.DataFrame:
    """One row per (tier, target): fits, mode, cost per 1M tokens at the tier size, assumed, reason;
    `recommended` marks the cheapest fitting target of each tier."""
    cfg = config or TierConfig()
    table = cost_table(con, **cost_kwargs)
    mem = {r["target"]: r for r in sql.frame(con, "cost_target_memory").to_dicts()}
    best: dict[str, dict] = {}
    for r in table.to_dicts():  # per target, the priced preset with the largest model: closest to the tiers
        key = (r["cost_per_mtok"] is not None, r.get("params_total") or 0)
        if r["target"] not in best or key > best[r["target"]]["_key"]:
            best[r["target"]] = {**r, "_key": key}
    rows = [_tier_row(tier, size, r, mem.get(t, {}), cfg) for tier, size in cfg.tiers for t, r in sorted(best.items())]
    schema = {"tier": pl.String, "tier_params": pl.Float64, "target": pl.String, "preset": pl.String,
              "cost_per_mtok": pl.Float64, "fits": pl.Boolean, "mode": pl.String, "assumed": pl.Boolean,
              "reason": pl.String, "gpus": pl.Int64, "tokens_per_s": pl.Float64,
              **{k: pl.Int64 if "age" in k else pl.Boolean for k in STALE_KEYS}, **UNSTABLE_KEYS}
    frame = pl.DataFrame([{k: row.get(k) for k in schema} for row in rows], schema=schema)
    order = {name: i for i, (name, _) in enumerate(cfg.tiers)}
    frame = frame.with_columns(_o=pl.col("tier").replace_strict(order, return_dtype=pl.Int64)).sort(
        ["_o", "cost_per_mtok", "target"], nulls_last=True).drop("_o")
    first = frame.filter(pl.col("fits") & pl.col("cost_per_mtok").is_not_null()).group_by("tier").agg(
        pl.col("target").first().alias("_best"))
    return frame.join(first, on="tier", how="left").with_columns(
        recommended=(pl.col("target") == pl.col("_best")).fill_null(False)).drop("_best")


def repeatability(con: duckdb.DuckDBPyConnection, *, target: str | None = None) -> pl.DataFrame:
    """Run-to-run CV per (target, environment, figure): tokens/s per preset and each hardware metric."""
    return sql.frame(con, "cost_repeatability", {"target": target})
