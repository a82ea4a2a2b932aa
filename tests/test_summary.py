"""The terminal headline: fixed-width table plus a hint for targets that have no price."""

import polars as pl

from reports.text import HEADLINE_COLUMNS, frame_text, headline_text, unpriced_note


def test_unpriced_targets_are_named():
    df = pl.DataFrame({"target": ["local", "h200", "a10"], "price_per_hour": [None, 3.29, None],
                       "cost_per_mtok": [None, 0.014, None]})
    note = unpriced_note(df)
    assert note.startswith("no price for: a10, local")
    assert "costgap prices import" in note
    assert headline_text(df).endswith(note)


def test_all_priced_adds_no_note():
    df = pl.DataFrame({"target": ["h200"], "price_per_hour": [3.29], "cost_per_mtok": [0.014]})
    assert unpriced_note(df) == ""
    assert headline_text(df) == frame_text(df, HEADLINE_COLUMNS)
