"""Change detection: did tokens/s shift when the environment changed (driver, CUDA, cuDNN, torch, image)?

    costgap gap A B          # lists significant shifts for both targets under "changes"

For each (target, preset), successful runs are ordered in time and cut where any of ENV_FIELDS changes.
At each cut, the runs before it (since the previous cut, at most `max_side` of them) are compared with
the runs after it (until the next cut) by a two-sided permutation test on the mean of log tokens/s.
A shift is significant when its p-value is below `alpha` AND its size is at least `min_shift` (a 0.5%
shift can be "significant" over enough runs and still not matter for cost). The size is the ratio of
geometric means minus one, with a 90% bootstrap interval. Level: alpha = 0.01 per cut by default;
tests/test_changepoint.py checks the false-alarm rate on pure noise over many seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np

from flows.errors import UserError
from tasks.stats import fetch_frame
from warehouse.sql import load_query

ENV_FIELDS = ("driver", "cuda_driver", "cuda_runtime", "cudnn", "torch", "container_image")


@dataclass(frozen=True)
class DetectConfig:
    alpha: float = 0.01  # per-cut false-alarm level of the permutation test
    min_shift: float = 0.02  # smallest |shift| worth reporting: 2% of tokens/s moves cost by 2%
    min_runs: int = 3  # fewer runs on either side of a cut cannot support a test
    max_side: int = 30  # runs used on each side: the nearest ones, so old drift does not leak in
    permutations: int = 4000  # resolution of the p-value: the smallest is 1/4001
    boot: int = 2000  # bootstrap draws for the shift's 90% interval
    seed: int = 0  # fixed: the same history always gives the same findings

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise UserError(f"alpha = {self.alpha!r}: expected a level in (0, 1)")
        if self.min_shift < 0:
            raise UserError(f"min_shift = {self.min_shift!r}: expected >= 0")
        if self.min_runs < 2:
            raise UserError(f"min_runs = {self.min_runs!r}: expected >= 2")
        if self.permutations < 100 or self.boot < 100:
            raise UserError("permutations and boot: expected >= 100 each")


def permutation_test(before: np.ndarray, after: np.ndarray, cfg: DetectConfig, rng: np.random.Generator) -> dict:
    """Two-sided permutation test of mean log tokens/s; size = ratio of geometric means - 1."""
    lb, la = np.log(before), np.log(after)
    observed = la.mean() - lb.mean()
    pooled = np.concatenate([lb, la])
    perms = rng.permuted(np.broadcast_to(pooled, (cfg.permutations, pooled.size)), axis=1)
    diffs = perms[:, lb.size:].mean(axis=1) - perms[:, : lb.size].mean(axis=1)
    p_value = (1 + np.count_nonzero(np.abs(diffs) >= abs(observed) - 1e-12)) / (cfg.permutations + 1)
    bb = lb[rng.integers(0, lb.size, (cfg.boot, lb.size))].mean(axis=1)
    ba = la[rng.integers(0, la.size, (cfg.boot, la.size))].mean(axis=1)
    lo, hi = np.quantile(np.exp(ba - bb) - 1.0, [0.05, 0.95])
    shift = float(np.exp(observed) - 1.0)
    return {"shift": shift, "shift_lo": float(lo), "shift_hi": float(hi), "p_value": float(p_value),
            "confidence": float(1.0 - p_value),
            "significant": bool(p_value < cfg.alpha and abs(shift) >= cfg.min_shift)}


def _fmt(v) -> str:
    return "unknown" if v is None else str(v)


def scan(rows: list[dict], cfg: DetectConfig, rng: np.random.Generator) -> list[dict]:
    """Test every environment change in one (target, preset) history (rows in time order)."""
    sig = [tuple(r[f] for f in ENV_FIELDS) for r in rows]
    cuts = [i for i in range(1, len(rows)) if sig[i] != sig[i - 1]]
    bounds = [0, *cuts, len(rows)]
    found = []
    for j, cut in enumerate(cuts):
        lo_start = max(bounds[j], cut - cfg.max_side)
        hi_end = min(bounds[j + 2], cut + cfg.max_side)
        before = np.array([r["tokens_per_s"] for r in rows[lo_start:cut]], dtype=float)
        after = np.array([r["tokens_per_s"] for r in rows[cut:hi_end]], dtype=float)
        if before.size < cfg.min_runs or after.size < cfg.min_runs:
            continue
        res = permutation_test(before, after, cfg, rng)
        prev, nxt = rows[cut - 1], rows[cut]
        changed = [{"field": f, "before": prev[f], "after": nxt[f]} for f in ENV_FIELDS if prev[f] != nxt[f]]
        what = ", ".join(f"{c['field']} {_fmt(c['before'])} -> {_fmt(c['after'])}" for c in changed)
        found.append({
            "target": nxt["target"], "preset": nxt["preset"], "at": nxt["started_at"].isoformat(),
            "run_before": prev["run_id"], "run_after": nxt["run_id"],
            "runs_before": int(before.size), "runs_after": int(after.size),
            "tokens_per_s_before": float(np.median(before)), "tokens_per_s_after": float(np.median(after)),
            **res, "changed": changed,
            "summary": (f"{nxt['target']}/{nxt['preset']} at {nxt['started_at']:%Y-%m-%d}: {what}: tokens/s "
                        f"{res['shift']:+.1%} (90% CI {res['shift_lo']:+.1%}..{res['shift_hi']:+.1%}), "
                        f"p = {res['p_value']:.4f}"),
        })
    return found


def detect(con: duckdb.DuckDBPyConnection, *, targets: list[str] | None = None, preset: str | None = None,
           since: datetime | None = None, until: datetime | None = None, only_significant: bool = True,
           config: DetectConfig | None = None) -> list[dict]:
    """Findings for every (target, preset) in range, oldest first; significant ones only by default.

    Each finding: target, preset, at, run_before, run_after, runs_before, runs_after, tokens_per_s_before,
    tokens_per_s_after, shift, shift_lo, shift_hi, p_value, confidence, significant, changed
    ([{field, before, after}]), summary (one line for a report or an artifact).
    """
    cfg = config or DetectConfig()
    rng = np.random.default_rng(cfg.seed)
    frame = fetch_frame(con, load_query("cost_env_history"),
                        {"since": since, "until": until, "targets": targets, "preset": preset})
    found: list[dict] = []
    for _, group in frame.group_by(["target", "preset"], maintain_order=True):
        found.extend(scan(group.to_dicts(), cfg, rng))
    if only_significant:
        found = [x for x in found if x["significant"]]
    return sorted(found, key=lambda x: (x["at"], x["target"], x["preset"]))
