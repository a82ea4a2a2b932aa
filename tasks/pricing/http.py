"""HTTP for price sources: always passed in, never a global. Live (urllib) or replayed from disk.

    costgap prices refresh --source azure-gpu --replay tests/fixtures/azure

A client has two methods, `get_json(url) -> dict` and `get_bytes(url) -> bytes` (a file download, e.g.
the ECB's eurofxref-hist.zip). `ReplayClient` serves recorded responses from a directory holding
`index.json` ({url: file}) and the response files: tests and air-gapped hosts use it.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tasks.pricing.base import PriceError


class FetchError(PriceError):
    """The network or the server failed (not the request): the CLI exits 1 for it, not 2."""


class HttpClient(Protocol):
    def get_json(self, url: str) -> dict: ...

    def get_bytes(self, url: str) -> bytes: ...


@dataclass
class UrllibClient:
    """The live client: plain HTTPS GET, JSON body."""

    timeout_s: float = 60.0  # one page of the Azure API answers in ~1 s; a minute means it is down

    def get_json(self, url: str) -> dict:
        try:
            return json.loads(self._get(url, "application/json").decode("utf-8"))
        except ValueError as e:
            raise FetchError(f"{url}: not JSON: {e}") from None

    def get_bytes(self, url: str) -> bytes:
        return self._get(url, "*/*")

    def _get(self, url: str, accept: str) -> bytes:
        req = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "costgap"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 (https URL)
                return resp.read()
        except (OSError, ValueError) as e:
            raise FetchError(f"{url}: request failed: {e}") from None


@dataclass
class ReplayClient:
    """Recorded responses: `directory/index.json` maps each URL to a JSON file beside it."""

    directory: str

    def get_json(self, url: str) -> dict:
        path = self._file(url)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise PriceError(f"{path}: cannot read the recorded response: {e}") from None

    def get_bytes(self, url: str) -> bytes:
        path = self._file(url)
        try:
            return path.read_bytes()
        except OSError as e:
            raise PriceError(f"{path}: cannot read the recorded response: {e}") from None

    def _file(self, url: str) -> Path:
        return Path(self.directory) / replay_entry(self.directory, url)


def replay_entry(directory: str, key: str, error: type[Exception] = PriceError):
    """What a replay directory's index.json records for `key` (this client: a file for a URL;
    cloud.Recording: a list of files for an SDK request); `error` names the index when it cannot."""
    index_path = Path(directory) / "index.json"
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise error(f"{index_path}: cannot read the replay index: {e}") from None
    if not index.get(key):
        raise error(f"{index_path}: no recorded response for {key}")
    return index[key]
