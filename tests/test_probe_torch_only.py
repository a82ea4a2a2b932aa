"""The probe where it runs today: a GPU host with torch alone. A venv holding only torch (and what
torch itself pulls in) runs `python -m tasks.probe --profile quick` from this checkout.

    .venv/bin/pytest -q tests/test_probe_torch_only.py

The venv is built once under $COSTGAP_TEST_CACHE (default ~/.cache/costgap), one per Python version
and torch pin, and reused while its torch imports; uv (the Makefile's installer, whose cache already
holds torch) builds it in about a second, pip (with its own cache) where there is no uv. When the
installer cannot fetch torch the test fails with its last lines: it is never skipped. The pin is the
Makefile's; TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" (pip arguments)
fetches the CPU build where the pip config does not point at it.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.bundle import read_bundle

ROOT = Path(__file__).resolve().parents[1]
TORCH = os.environ.get("TORCH", "torch==2.13.0")
ABSENT = ("duckdb", "polars", "prefect", "great_expectations", "pydantic", "pandas", "transformers")
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")}


def _torch_only_python() -> Path:
    cache = Path(os.environ.get("COSTGAP_TEST_CACHE") or Path.home() / ".cache" / "costgap")
    pin = re.sub(r"[^A-Za-z0-9.]+", "-", TORCH).strip("-")[:80]
    venv = cache / f"probe-torch-only-py{sys.version_info[0]}{sys.version_info[1]}-{pin}"
    python, ready = venv / "bin" / "python", venv / ".ready"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{venv.name}.lock", "w") as lock:  # two test runs build it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists() and subprocess.run([python, "-c", "import torch"], env=CLEAN_ENV).returncode == 0:
            return python
        ready.unlink(missing_ok=True)
        uv, links = Path(sys.executable).with_name("uv"), os.environ.get("PIP_FIND_LINKS")
        if uv.exists() and links:  # the Makefile's installer: torch comes from its cache (~1 s, not ~25 s)
            subprocess.run([uv, "venv", "-q", "--clear", "-p", sys.executable, venv], check=True, env=CLEAN_ENV)
            install = [uv, "pip", "install", "-q", "--python", python, "--find-links", links]
        else:
            subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True, env=CLEAN_ENV)
            install = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        pip = subprocess.run([*install, *shlex.split(TORCH)], capture_output=True, text=True, env=CLEAN_ENV,
                             timeout=900)
        if pip.returncode != 0:
            pytest.fail(f"{install[0]} could not install {TORCH} into {venv}:\n{(pip.stdout + pip.stderr)[-2000:]}")
        ready.write_text(TORCH + "\n")
    return python


@pytest.mark.slow
def test_quick_probe_runs_with_torch_alone(tmp_path):
    python = _torch_only_python()
    find = "import importlib.util, sys; print(*(m for m in sys.argv[1:] if importlib.util.find_spec(m)))"
    present = subprocess.run([python, "-c", find, *ABSENT], cwd=tmp_path, capture_output=True, text=True,
                             env=CLEAN_ENV)
    assert present.returncode == 0 and present.stdout.split() == [], present.stdout + present.stderr
    run = subprocess.run([python, "-m", "tasks.probe", "--profile", "quick", "--target", "torch-only",
                          "--out", tmp_path / "out", "--data-dir", tmp_path / "data"],
                         cwd=ROOT, capture_output=True, text=True, env=CLEAN_ENV, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    bundle = read_bundle(Path(run.stdout.strip().splitlines()[-1]))
    assert bundle.target == "torch-only" and bundle.schema_version == 1
    assert {(m.benchmark, m.metric) for m in bundle.measurements} >= {("gemm", "fp32_tflops"),
                                                                     ("memory", "copy_gbps")}
    (ft,) = bundle.finetune  # the model library is missing: the host's fact, not a crash
    assert ft.status == "not_applicable" and "needs transformers" in ft.message, ft.message
    assert all(a.state != "crashed" for a in bundle.attempts), [a.task for a in bundle.attempts]
