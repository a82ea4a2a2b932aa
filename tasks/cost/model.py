"""The cost model (DESIGN.md "Cost model"): every formula, written once. Numbers in, numbers out.

    .venv/bin/pytest -q tests/test_cost_model.py tests/test_cost_properties.py

For one (target, preset) over a window, from its inputs (tasks.cost.inputs: SQL returns inputs only):
  P   price per instance-hour in the reporting currency: the mean of the runs' as-of prices;
  X   median tokens/s over the window's successful runs;
  p   = k / n, failed fine-tune attempts over counted attempts (0 when none were recorded);
  R   = 1 + f p / (1 - p), the rerun factor; f = F_LOST unless checkpoints say otherwise (c / 2);
  C   = P / (3600 X) * 1e6 * R, the effective cost per 1M tokens.
Between two targets on one preset: gap = C_A / C_B - 1, and exactly
  ln(C_A / C_B) = ln(P_A / P_B) - ln(X_A / X_B) + ln(R_A / R_B)   (price, throughput, reliability).
90% intervals: draws of X (the exact bootstrap of the median over runs, smoothed by the run-to-run
CV and widened by the window spread of runs whose steady-state rule did not converge: tasks.cost.stats),
draws of p (Beta posterior, Jeffreys prior; none when n = 0), and C through
the same formula; the gap's from the paired draws. Each (target, preset) draws from a generator of
its own, seeded by (seed, target, preset), so a figure is the same whether it is computed alone
(`costgap gap`) or beside every other target (the overview).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from tasks.cost import stats
from tasks.errors import UserError
from tasks.pricing.base import BILLING_MODES, CURRENCIES

F_LOST = 0.5  # fraction of an attempt's work lost per failure: half, on average, without checkpoints
LEVEL = 0.90  # every interval is a central 90% interval
DEFAULT_DRAWS = 2000  # bootstrap/posterior draws: the 5% and 95% points settle to ~1% of their width
STALE_AFTER_DAYS = 30.0  # a price last confirmed longer ago than this is flagged stale


@dataclass(frozen=True)
class CostOptions:
    """What a cost figure depends on besides the data; bad values fail naming the option."""

    billing: str | None = "on_demand"  # which price row applies; None = each target's own billing_mode
    currency: str = "USD"  # reporting currency; every price is converted at dated rates
    f: float = F_LOST  # fraction of an attempt's work lost per failure (checkpoints every c: f = c/2)
    stale_after_days: float = STALE_AFTER_DAYS  # a price not confirmed for longer is flagged stale
    draws: int = DEFAULT_DRAWS  # bootstrap / posterior draws for the 90% intervals
    seed: int = 0  # fixed so a figure can be reproduced exactly

    def __post_init__(self) -> None:
        if self.billing is not None and self.billing not in BILLING_MODES:
            raise UserError(f"billing = {self.billing!r}: expected one of {BILLING_MODES}")
        if self.currency not in CURRENCIES:
            raise UserError(f"currency = {self.currency!r}: unknown currency (ISO 4217)")
        if not 0.0 <= self.f <= 1.0:
            raise UserError(f"f = {self.f!r}: the fraction of work lost per failure must be in [0, 1]")
        if self.stale_after_days < 0:
            raise UserError(f"stale_after_days = {self.stale_after_days!r}: expected >= 0")
        if self.draws < 100:
            raise UserError(f"draws = {self.draws!r}: expected >= 100 for a 90% interval")


def lost_fraction(checkpoint_every: float | None, default_f: float = F_LOST) -> float:
    """f from the checkpoint interval c (the fraction of the job between checkpoints): f = c / 2."""
    if checkpoint_every is None:
        return default_f
    if not 0.0 < checkpoint_every <= 1.0:
        raise ValueError(f"checkpoint_every = {checkpoint_every!r}: expected a fraction of the job in (0, 1]")
    return checkpoint_every / 2.0


def failure_rate(failed: int, attempts: int) -> float:
    """p = k / n; no attempt records at all means nothing failed that we know of (p = 0, R = 1)."""
    return failed / attempts if attempts else 0.0


def failure_rate_interval(failed: int, attempts: int, level: float = LEVEL) -> tuple[float | None, float | None]:
    """The central `level` interval of p's posterior, Beta(k + 1/2, n - k + 1/2) (Jeffreys), the one the
    cost interval draws from; (None, None) without attempts."""
    if not attempts:
        return None, None
    from scipy.stats import beta

    a, b = failed + stats.PRIOR_FAILED, attempts - failed + stats.PRIOR_OK
    return float(beta.ppf((1 - level) / 2, a, b)), float(beta.ppf(1 - (1 - level) / 2, a, b))


def rerun_factor(p, f: float):
    """R = 1 + f p / (1 - p), for a rate or an array of rate draws. p in [0, 1); f in [0, 1]."""
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"f = {f!r}: the fraction of work lost per failure must be in [0, 1]")
    if np.ndim(p) == 0 and not 0.0 <= p < 1.0:
        raise ValueError(f"p = {p!r}: the failed-attempt rate must be in [0, 1) for a finite rerun factor")
    return 1.0 + f * p / (1.0 - p)


def effective_cost(price_per_hour, tokens_per_s, rerun):
    """C = P / (3600 X) * 1e6 * R: cost per 1M tokens (scalars or arrays)."""
    return price_per_hour / (3600.0 * tokens_per_s) * 1e6 * rerun


def gap(cost_a: float, cost_b: float) -> float:
    """gap(A, B) = C_A / C_B - 1."""
    return cost_a / cost_b - 1.0


def decompose(a: tuple[float, float, float], b: tuple[float, float, float]) -> tuple[float, dict]:
    """ln(C_A/C_B) and its price, throughput and reliability terms, for (P, X, R) of A and of B."""
    (pa, xa, ra), (pb, xb, rb) = a, b
    terms = {"price": math.log(pa / pb), "throughput": -math.log(xa / xb), "reliability": math.log(ra / rb)}
    return math.log(effective_cost(pa, xa, ra) / effective_cost(pb, xb, rb)), terms


def is_stale(age_days: float | None, opts: CostOptions) -> bool | None:
    """A price last confirmed more than stale_after_days before the moment it is shown for."""
    return None if age_days is None else age_days > opts.stale_after_days


def row_rng(opts: CostOptions, *key: str) -> np.random.Generator:
    """A generator of one figure's own: the same draws for the same (seed, key) wherever it is computed."""
    digest = hashlib.sha256("\x00".join(map(str, key)).encode()).digest()
    return np.random.default_rng([opts.seed, int.from_bytes(digest[:8], "little")])


@dataclass
class Figure:
    """One (target, preset)'s cost over a window: the point figures, their draws and the interval."""

    price_per_hour: float | None
    tokens_per_s: float
    failed_attempts: int
    attempts: int
    p: float
    R: float | None  # None when every attempt failed (p = 1): no finite cost
    cost_per_mtok: float | None
    cost_lo: float | None
    cost_hi: float | None
    draws: np.ndarray = field(repr=False)  # cost draws (NaN where there is no cost)


def figure(price_per_hour: float | None, samples: np.ndarray, failed: int, attempts: int, cv_within: float | None,
           opts: CostOptions, rng: np.random.Generator, spreads=()) -> Figure:
    """P, X, p, R, C and C's 90% interval from one (target, preset)'s inputs; `samples` = each run's tokens/s;
    `spreads` = the window spread of each run whose steady-state rule did not converge (stats.unsteady)."""
    x = np.sort(np.asarray(samples, dtype=float))
    n_runs = x.size
    tokens_per_s = float(np.median(x))
    x_draws = stats.bootstrap_medians(x, np.array([0, n_runs]), opts.draws, rng)
    cv = np.array([cv_within if cv_within is not None else np.nan], dtype=float)
    x_draws = stats.smooth(x_draws, cv, np.array([n_runs]), rng)[0]
    p = failure_rate(failed, attempts)
    p_draws = (stats.failure_rate_draws(np.array([float(failed)]), np.array([float(attempts)]), opts.draws, rng)[0]
               if attempts else np.zeros(opts.draws))
    if len(spreads):  # drawn after p's draws: a figure without unsteady runs keeps its draws exactly
        x_draws = stats.unsteady(x_draws, np.asarray(spreads, dtype=float), n_runs, rng)
    r = rerun_factor(p, opts.f) if p < 1.0 else None
    if price_per_hour is None or r is None:
        return Figure(price_per_hour, tokens_per_s, failed, attempts, p, r, None, None, None,
                      np.full(opts.draws, np.nan))
    cost = float(effective_cost(price_per_hour, tokens_per_s, r))
    draws = effective_cost(price_per_hour, x_draws, rerun_factor(p_draws, opts.f))
    lo, hi = stats.interval(draws[None, :], np.array([cost]), LEVEL)
    return Figure(price_per_hour, tokens_per_s, failed, attempts, p, r, cost, float(lo[0]), float(hi[0]), draws)


@dataclass
class Gap:
    """gap(A, B) on one preset, its 90% interval and the exact decomposition of ln(C_A / C_B)."""

    gap: float
    gap_lo: float
    gap_hi: float
    ln_ratio: float
    terms: dict  # price, throughput, reliability: they add up to ln_ratio


def gap_figure(a: Figure, b: Figure) -> Gap:
    """The gap of A against B from two costed figures (same preset, same window)."""
    point = gap(a.cost_per_mtok, b.cost_per_mtok)
    lo, hi = stats.interval((a.draws / b.draws - 1.0)[None, :], np.array([point]), LEVEL)
    ln_ratio, terms = decompose((a.price_per_hour, a.tokens_per_s, a.R), (b.price_per_hour, b.tokens_per_s, b.R))
    return Gap(point, float(lo[0]), float(hi[0]), ln_ratio, terms)
