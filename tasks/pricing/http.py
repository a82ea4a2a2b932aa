"""HTTP for price sources: always passed in, never a global. Live (urllib) or replayed from disk.

    costgap prices refresh --source azure-gpu --replay tests/fixtures/azure

A client has one method, `get_json(url) -> dict`. `ReplayClient` serves recorded responses from a
directory holding `index.json` ({url: file}) and the response files: tests and air-gapped hosts use it.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tasks.pricing.base import PriceError


class HttpClient(Protocol):
    def get_json(self, url: str) -> dict: ...


@dataclass
class UrllibClient:
    """The live client: plain HTTPS GET, JSON body."""

    timeout_s: float = 60.0  # one page of the Azure API answers in ~1 s; a minute means it is down

    def get_json(self, url: str) -> dict:
        req = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "costgap"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 (https URL)
                return json.loads(resp.read().decode("utf-8"))
        except (OSError, ValueError) as e:
            raise PriceError(f"{url}: request failed: {e}") from None


@dataclass
class ReplayClient:
    """Recorded responses: `directory/index.json` maps each URL to a JSON file beside it."""

    directory: str

    def get_json(self, url: str) -> dict:
        base = Path(self.directory)
        index_path = base / "index.json"
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise PriceError(f"{index_path}: cannot read the replay index: {e}") from None
        if url not in index:
            raise PriceError(f"{index_path}: no recorded response for {url}")
        try:
            return json.loads((base / index[url]).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise PriceError(f"{base / index[url]}: cannot read the recorded response: {e}") from None
