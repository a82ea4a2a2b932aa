"""The results store: where probe workers put bundles and the compare flow reads them (fsspec).

    python -c "from tasks.dispatch.results import ResultsStore; print(ResultsStore('results').list_bundles())"

A store is a URL: a local or shared directory by default (`results`, `/mnt/shared/results`),
`s3://bucket/prefix` with the `s3` extra (s3fs), or any other fsspec protocol. Layout:

    <store>/<target>/<run_key>/<bundle_id>.json

`run_key` is the Prefect flow run id of the probe run (or "cli"/"import-<ts>"), so the compare
flow finds exactly the bundle of the flow run it dispatched. Writes go to a temporary name and are
moved into place, so a reader never sees half a bundle.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import fsspec

from tasks.errors import UserError

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")  # target ids and run keys only


class ResultsStoreError(UserError):
    """The results store cannot be reached or a key is not usable as a path part."""


def _part(name: str, what: str) -> str:
    if not _SAFE.match(name):
        raise ResultsStoreError(f"results store: {what} {name!r} is not a safe path part")
    return name


class ResultsStore:
    """A results store at `url`. The filesystem is opened once; pass a store, not a global."""

    def __init__(self, url: str | Path):
        self.url = str(url).rstrip("/") or "."
        try:
            self.fs, root = fsspec.core.url_to_fs(self.url)
        except (ImportError, ValueError) as e:
            raise ResultsStoreError(
                f"results store {self.url!r}: {e} (for s3:// install the s3 extra: pip install 'costgap[s3]')"
            ) from None
        self.root = root.rstrip("/") or "/"
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))

    def _join(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def uri(self, path: str) -> str:
        """A full URL for a path inside this store (what lands as runs.source_uri)."""
        return path if self.local else self.fs.unstrip_protocol(path)

    def put_bundle(self, target: str, run_key: str, local_path: str | Path) -> str:
        """Copy a bundle file into <target>/<run_key>/ atomically; returns its URI."""
        src = Path(local_path)
        folder = self._join(_part(target, "target"), _part(run_key, "run key"))
        final = f"{folder}/{_part(src.name, 'file name')}"
        tmp = f"{folder}/.{src.name}.{uuid.uuid4().hex}.part"
        self.fs.makedirs(folder, exist_ok=True)
        self.fs.put_file(str(src), tmp)
        self.fs.mv(tmp, final)
        return self.uri(final)

    def list_bundles(self, target: str | None = None, run_key: str | None = None) -> list[str]:
        """Bundle URIs under the store, one target, or one target's run; sorted, no temp files."""
        if run_key is not None and target is None:
            raise ValueError("run_key needs a target")
        parts = [_part(p, "key") for p in (target, run_key) if p is not None]
        base = self._join(*parts)
        if not self.fs.exists(base):
            return []
        depth = 3 - len(parts)
        found = self.fs.find(base, maxdepth=depth)
        return sorted(
            self.uri(p) for p in found if p.endswith(".json") and not Path(p).name.startswith(".")
        )
