"""The probe image (deploy/image/Dockerfile), checked offline: no container engine here, so it is never
built by the suite. What can be checked without one is: the base is an official PyTorch CUDA runtime
image, the packages are pyproject's probe and stores extras plus the probe flow's core dependencies, every
module the probe and the probe flow import comes from those packages, the user is the non-root uid the
Kubernetes pools run as, and the entry points and copied files exist.

    .venv/bin/python -m pytest -q tests/test_probe_image.py
"""

from __future__ import annotations

import importlib.metadata as md
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from deploy import pools
from deploy.image.requirements import name_of, requirements

DOCKERFILE = Path("deploy/image/Dockerfile")
PYPROJECT = tomllib.loads(Path("pyproject.toml").read_text())


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def one(name: str) -> str:
    found = [rest for word, rest in instructions() if word == name]
    assert len(found) == 1, f"{DOCKERFILE}: expected one {name}, found {found}"
    return found[0]


def test_base_is_an_official_pytorch_cuda_runtime_image():
    args = dict(rest.split("=", 1) for word, rest in instructions() if word == "ARG" and "=" in rest)
    assert one("FROM") == "${BASE}"
    assert re.fullmatch(r"pytorch/pytorch:\d+\.\d+\.\d+-cuda\d+\.\d+-cudnn\d+-runtime", args["BASE"]), args["BASE"]
    torch_floor = next(r for r in PYPROJECT["project"]["optional-dependencies"]["probe"] if name_of(r) == "torch")
    base_torch = tuple(int(x) for x in args["BASE"].split(":")[1].split("-")[0].split("."))
    assert base_torch >= tuple(int(x) for x in torch_floor.split(">=")[1].split(".")), "base torch below the probe extra"


def test_packages_are_the_probe_extras_and_the_probe_flows_core_dependencies():
    extras = PYPROJECT["project"]["optional-dependencies"]
    core = {name_of(r): r for r in PYPROJECT["project"]["dependencies"]}
    got = requirements(PYPROJECT)
    assert got == extras["probe"] + extras["stores"] + [core["prefect"], core["fsspec"], core["pydantic"]]
    assert not {"duckdb", "great-expectations", "altair", "polars"} & {name_of(r) for r in got}
    runs = [rest for word, rest in instructions() if word == "RUN"]
    assert any("requirements.py" in r and "pip install -r" in r and "-c " in r for r in runs), \
        "the image installs requirements.py's list, torch held to the base image's build"
    # the fsspec backends register the results store's protocols
    stores = {name_of(r) for r in extras["stores"]}
    assert {"s3fs", "ossfs", "cosfs", "gcsfs"} <= stores


def _distributions_needed(requirement_strings: list[str]) -> set[str]:
    """The installed distributions these requirements pull in, transitively, with the extras they ask
    for (e.g. prefect's httpx[http2]), read from this venv's metadata."""
    from packaging.requirements import Requirement

    seen: set[tuple[str, str]] = set()
    todo = [(Requirement(r), "") for r in requirement_strings]
    while todo:
        req, parent_extra = todo.pop()
        if req.marker and not req.marker.evaluate({"extra": parent_extra}):
            continue
        name = name_of(req.name)
        for extra in {""} | set(req.extras):
            if (name, extra) in seen:
                continue
            seen.add((name, extra))
            try:
                todo += [(Requirement(r), extra) for r in md.requires(name) or []]
            except md.PackageNotFoundError:
                pass
    return {name for name, _ in seen}


PROBE_IMPORTS = "flows.probe, tasks.probe.__main__, tasks.probe.runner, tasks.dispatch.child"


def _imported(what: str) -> str:
    code = f"import sys, json, {PROBE_IMPORTS}; print(json.dumps({what}))"
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                     check=True).stdout)


@pytest.mark.slow  # imports the probe in subprocesses
def test_every_costgap_module_the_probe_imports_is_copied_into_the_image():
    repo = Path.cwd().resolve()
    files = _imported("sorted(getattr(m, '__file__', None) or '' for m in list(sys.modules.values()))")
    ours = {Path(f).resolve().relative_to(repo).as_posix() for f in files
            if Path(f).is_absolute() and Path(f).is_relative_to(repo) and ".venv" not in Path(f).parts}
    copied = [src.rstrip("/") for word, rest in instructions() if word == "COPY" for src in rest.split()[:-1]]
    missing = sorted(f for f in ours if not any(f == c or f.startswith(c + "/") for c in copied))
    assert ours and missing == [], f"{DOCKERFILE}: the probe imports these, the image does not copy them"


@pytest.mark.slow  # imports the probe in subprocesses
def test_everything_the_probe_and_its_flow_import_is_installed_by_the_image():
    top = _imported("sorted({m.split('.')[0] for m in list(sys.modules)})")
    assert not {"warehouse", "reports", "duckdb", "great_expectations", "altair", "polars"} & set(top)
    owners = md.packages_distributions()
    imported = {name_of(d) for m in top for d in owners.get(m, []) if name_of(d) != "costgap"}
    allowed = _distributions_needed(requirements(PYPROJECT))
    assert imported - allowed == set(), "imported by the probe but not installed in the image"


def test_user_workdir_and_entry_points():
    user = one("USER")
    assert user == f"{pools.IMAGE_UID}:{pools.IMAGE_UID}" and pools.IMAGE_UID != 0
    assert any(f"--uid {pools.IMAGE_UID}" in rest for word, rest in instructions() if word == "RUN")
    assert one("WORKDIR") == pools.IMAGE_WORKDIR
    assert not [w for w, _ in instructions() if w == "ENTRYPOINT"], "Prefect's worker passes the command as args"
    cmd = json.loads(one("CMD"))
    assert cmd[:3] == ["python", "-m", "tasks.probe"] and Path("tasks/probe/__main__.py").is_file()
    deployments = Path("deploy/prefect.yaml").read_text()
    assert "entrypoint: flows/probe.py:probe" in deployments  # the flow `prefect flow-run execute` loads
    for word, rest in instructions():
        if word == "COPY":
            *sources, _dest = rest.split()
            for src in sources:
                assert Path(src).exists(), f"{DOCKERFILE}: COPY {src}: no such path in the checkout"
    assert "flows/probe.py" in one_copy_of("flows")
    env = " ".join(rest for word, rest in instructions() if word == "ENV")
    assert "HF_HUB_OFFLINE=1" in env and f"PYTHONPATH={pools.IMAGE_WORKDIR}" in env


def one_copy_of(prefix: str) -> str:
    return next(rest for word, rest in instructions() if word == "COPY" and rest.startswith(prefix))


def test_the_build_context_is_only_what_the_image_copies():
    lines = [x.strip() for x in (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines()]
    patterns = [x for x in lines if x and not x.startswith("#")]
    kept = {x[1:].rstrip("/") for x in patterns if x.startswith("!")}
    copied = {src.rstrip("/") for word, rest in instructions() if word == "COPY" for src in rest.split()[:-1]}
    assert patterns[0] == "*" and copied == kept, (copied, kept)  # everything ignored but what is copied
