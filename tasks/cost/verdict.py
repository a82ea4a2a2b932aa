"""The verdict beside every gap, computed here once: the site's answer table, `costgap gap`, `targets` and `run`.

    costgap gap h100-sxm-1x h200-sxm-1x --warehouse .costgap/demo.duckdb    # "... : clear"

A gap between two costed targets on one preset is "clear" when its 90% interval excludes 0: these runs tell
the two apart. It is "within noise" when the interval holds 0: as far as these runs can tell, the two cost the
same. A preset that only one target has a cost for has no gap: "only target measured". The gap is always taken
the site's way round, the dearer target against the cheaper one (tasks.cost.table.cheapest_first), so the word
is the same whichever order a command names the two in.
"""

from __future__ import annotations

CLEAR = "clear"
WITHIN_NOISE = "within noise"
ONLY_ONE = "only target measured"
# What each word means, for the legends of the command line and the site.
MEANING = {
    CLEAR: "the gap's 90% interval excludes 0",
    WITHIN_NOISE: "the gap's 90% interval holds 0: these runs cannot tell the two apart",
    ONLY_ONE: "no other target has a cost for this preset, so there is no gap",
}


def gap_verdict(gap_lo: float, gap_hi: float) -> str:
    """'clear' when the interval [gap_lo, gap_hi] excludes 0, else 'within noise'."""
    return CLEAR if gap_lo > 0 or gap_hi < 0 else WITHIN_NOISE


def verdict(row: dict) -> str:
    """A leaders row (tasks.cost.table.leaders: cheapest, runner_up, gap_lo, gap_hi): its verdict word."""
    if row.get("runner_up") is None:
        return ONLY_ONE
    return gap_verdict(row["gap_lo"], row["gap_hi"])
