"""The bundle contract: valid bundles read back; every kind of bad bundle names its field."""

from __future__ import annotations

import json

import pytest

from tasks.bundle import Bundle, BundleError, parse_bundle, read_bundle
from tasks.canonical import canonical_json, content_id, seal
from tests.factories import bundle_doc, write_bundle


def test_valid_bundle_reads_back(tmp_path):
    doc = bundle_doc()
    b = read_bundle(write_bundle(tmp_path, doc))
    assert isinstance(b, Bundle)
    assert b.bundle_id == doc["bundle_id"] == content_id(doc)
    assert b.finetune[0].tokens_per_s == 1000.0
    assert b.environment.gpu_name is None


def test_canonical_json_is_order_independent():
    assert canonical_json({"b": 1, "a": [1, 2]}) == canonical_json({"a": [1, 2], "b": 1})
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def _broken(**changes):
    doc = bundle_doc()
    doc.update(changes)
    return seal(doc)


@pytest.mark.parametrize(
    "doc, field",
    [
        (_broken(schema_version=2), "schema_version"),
        (_broken(schema_version="1"), "schema_version"),
        ({k: v for k, v in bundle_doc().items() if k != "target"}, "target"),
        (_broken(surprise=1), "surprise"),
        (_broken(target="x'); drop table runs;--"), "target"),
        (_broken(target="../../etc"), "target"),
        (_broken(started_at="2026-11-02T12:00:00"), "started_at"),
        (_broken(finished_at="2026-11-02T11:00:00Z"), "<root>"),
        (_broken(started_at="2999-01-01T00:00:00Z", finished_at="2999-01-01T00:01:00Z"), "started_at"),
    ],
)
def test_bad_bundles_name_the_field(doc, field):
    raw = json.dumps(doc).encode()
    with pytest.raises(BundleError) as e:
        parse_bundle(raw, file="b.json")
    assert e.value.field.split(".")[0] == field
    assert "b.json" in str(e.value)


def test_wrong_type_names_nested_field():
    doc = bundle_doc()
    doc["finetune"][0]["tokens_per_s"] = "fast"
    with pytest.raises(BundleError) as e:
        parse_bundle(json.dumps(seal(doc)).encode())
    assert e.value.field == "finetune.0.tokens_per_s"


def test_non_finite_numbers_rejected():
    raw = canonical_json(bundle_doc()).replace(b'"value":10.0', b'"value":NaN')
    assert b"NaN" in raw
    with pytest.raises(BundleError):
        parse_bundle(raw)


def test_tampered_content_fails_the_content_address():
    doc = bundle_doc()
    doc["finetune"][0]["tokens_per_s"] = 2000.0
    with pytest.raises(BundleError) as e:
        parse_bundle(json.dumps(doc).encode())
    assert e.value.field == "bundle_id"


@pytest.mark.parametrize("raw", [b"", b"   ", b"{\"schema_version\": 1", b"\xff\xfe\x00", b"[1,2]"])
def test_unparseable_input(raw):
    with pytest.raises(BundleError):
        parse_bundle(raw)


def test_deep_nesting_refused():
    with pytest.raises(BundleError) as e:
        parse_bundle(b"[" * 100_000 + b"]" * 100_000)
    assert "nested" in e.value.reason
