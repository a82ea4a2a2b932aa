"""Fuzz the bundle reader: whatever the bytes, parse_bundle returns a Bundle or raises BundleError.

    .venv/bin/pytest -q tests/test_fuzz_bundle.py
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.bundle import Bundle, BundleError, parse_bundle
from tasks.canonical import seal
from tests.factories import bundle_doc

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _only_bundle_error(raw: bytes) -> None:
    try:
        assert isinstance(parse_bundle(raw, file="fuzz.json"), Bundle)
    except BundleError as e:
        assert e.field and str(e).startswith("fuzz.json: field ")


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(raw):
    _only_bundle_error(raw)


@FUZZ
@given(st.text(alphabet='{}[]":,0123456789.eE-+ \ntrufalsnNaIiy\\u', max_size=200))
def test_json_shaped_text(text):
    _only_bundle_error(text.encode("utf-8"))


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


BASE = bundle_doc(telemetry={"t": [0.0, 1.0], "gpu": [0, 0], "util": [1.0, 2.0], "mem_util": [1.0, 1.0],
                             "power_w": [9.0, 9.0], "sm_clock_mhz": [1.0, 1.0], "temp_c": [40.0, 41.0]})
PATHS = [p for p in _paths(BASE) if p and p[0] != "bundle_id"]


@FUZZ
@given(st.sampled_from(PATHS), json_values, st.booleans(), st.booleans())
def test_one_field_replaced(path, value, reseal, drop):
    """A valid bundle with one field replaced (or removed), re-sealed or not."""
    doc = json.loads(json.dumps(BASE))
    node = doc
    for key in path[:-1]:
        node = node[key]
    if drop and isinstance(node, dict):
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    if reseal:
        try:
            doc = seal(doc)
        except ValueError:  # NaN/Inf cannot be sealed; send it unsealed
            pass
    raw = json.dumps(doc, allow_nan=True).encode("utf-8")
    _only_bundle_error(raw)


@FUZZ
@given(st.integers(min_value=1, max_value=4000), st.sampled_from(["[", '{"a":', '{"schema_version":1,"x":[']))
def test_truncation_and_nesting(cut, opener):
    full = json.dumps(BASE).encode()
    _only_bundle_error(full[:cut % len(full)])
    _only_bundle_error((opener * (cut // 4 + 1)).encode())



LAND = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def fuzz_warehouse(tmp_path_factory):
    from warehouse.db import connect

    folder = tmp_path_factory.mktemp("fuzzland")
    con = connect(str(folder / "wh.duckdb"))
    yield folder, con
    con.close()


def test_landing_never_crashes(fuzz_warehouse):
    """Through the whole landing (parse, range check, GX, DuckDB insert): refused or landed,
    never an exception, and a refused bundle leaves no fact row."""
    from tasks.landing.land import land_paths

    folder, con = fuzz_warehouse

    @LAND
    @given(st.sampled_from(PATHS), json_values)
    def one(path, value):
        doc = json.loads(json.dumps(BASE))
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        try:
            doc = seal(doc)
        except ValueError:
            return
        (folder / "b.json").write_text(json.dumps(doc))
        before = con.execute("select count(*) from runs").fetchall()[0][0]
        s = land_paths(con, [str(folder / "b.json")])
        runs = con.execute("select count(*) from runs").fetchall()[0][0]
        assert len(s.landed) + len(s.duplicates) + len(s.quarantined) + len(s.rejected) == 1
        assert runs == before + len(s.landed)

    one()
