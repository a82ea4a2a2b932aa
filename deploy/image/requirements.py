"""The probe image's Python packages, read from pyproject.toml, one per line for pip.

    python deploy/image/requirements.py pyproject.toml > /tmp/requirements.txt

The image (deploy/image/Dockerfile) holds the probe (`python -m tasks.probe`) and the probe flow
(flows/probe.py) only: the `probe` extra (torch, transformers, peft, nvidia-ml-py), the `stores` extra
(the results store's fsspec backends: S3, OSS, COS, GCS) and the core dependencies the probe flow
imports, with pyproject's own bounds. Not DuckDB, Great Expectations or Altair: the warehouse and the
report run beside the control pool, never on a GPU node. pyproject.toml stays the one place a bound is
written. Standard library only: it runs in the base image before anything is installed.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

EXTRAS = ("probe", "stores")  # pyproject optional-dependencies the image installs whole
CORE = ("prefect", "fsspec", "pydantic")  # the core dependencies flows/probe.py and tasks/probe import


def name_of(requirement: str) -> str:
    """The distribution name of a PEP 508 requirement, normalised (PEP 503)."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not m:
        raise ValueError(f"requirement {requirement!r}: no distribution name")
    return re.sub(r"[-_.]+", "-", m.group(1)).lower()


def requirements(pyproject: dict) -> list[str]:
    """The image's requirement strings: EXTRAS whole, then CORE as pyproject bounds them."""
    project = pyproject["project"]
    extras = project.get("optional-dependencies", {})
    out: list[str] = []
    for extra in EXTRAS:
        if extra not in extras:
            raise ValueError(f"pyproject.toml: [project.optional-dependencies] has no '{extra}' extra")
        out += extras[extra]
    core = {name_of(r): r for r in project["dependencies"]}
    for name in CORE:
        if name not in core:
            raise ValueError(f"pyproject.toml: [project] dependencies has no '{name}'")
        out.append(core[name])
    return out


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "pyproject.toml")
    sys.stdout.write("".join(f"{r}\n" for r in requirements(tomllib.loads(path.read_text(encoding="utf-8")))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
