"""Canonical JSON and content addresses for bundles (stdlib only: the probe imports this).

    python -c "from tasks.canonical import content_id; print(content_id({'a': 1}))"

A bundle's `bundle_id` is the sha256 of the canonical JSON of the document *without* its
`bundle_id` key. Canonical means: keys sorted, no whitespace, UTF-8, NaN/Inf refused.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

SCHEMA_VERSION = 1  # the bundle contract version; bump only with a migration path for old bundles


def canonical_json(doc: Any) -> bytes:
    """Serialise `doc` deterministically. Raises ValueError on NaN/Inf (they are not JSON)."""
    return json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def content_id(doc: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of `doc` minus its `bundle_id` key."""
    body = {k: v for k, v in doc.items() if k != "bundle_id"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def seal(doc: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of `doc` with `bundle_id` set to its content address."""
    out = {k: v for k, v in doc.items() if k != "bundle_id"}
    out["bundle_id"] = content_id(out)
    return out
