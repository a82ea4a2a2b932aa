"""Every package the code imports is declared in pyproject.toml, with bounds, and every declaration is used.

    .venv/bin/python -m pytest -q tests/test_dependencies.py

A package that arrives only through another one (numpy through Great Expectations, httpx through Prefect)
vanishes the day that one drops it. So every `import` in the project's modules (tasks/ flows/ cli/ runtime/
warehouse/ reports/ deploy/, function-level imports included) must name a distribution declared in
[project.dependencies] or one of the extras, and every import in tests/ one declared anywhere. Import names
map to distributions through importlib.metadata.packages_distributions() (yaml -> PyYAML); a package not
installed here (the GPU-only QLoRA backends) is looked up under its own name. The other way round, a
declared distribution nothing imports must be in USED_WITHOUT_IMPORT with the reason.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT_ROOMS = ("tasks", "flows", "cli", "runtime", "warehouse", "reports", "deploy")
LOCAL = {*PROJECT_ROOMS, "tests"}
# Declared, used, and never imported by name: what each is for.
USED_WITHOUT_IMPORT = {
    "s3fs": "fsspec loads it for s3:// results stores (fsspec's registry)",
    "ossfs": "fsspec loads it for oss:// results stores",
    "cosfs": "fsspec loads it for cos:// and cosn:// results stores",
    "gcsfs": "fsspec loads it for gs:// results stores",
    "prefect-redis": "Prefect loads it by module name from PREFECT_MESSAGING_BROKER (docs/deploy.md)",
    "pytest-timeout": "a pytest plugin (the suite's timeout setting)",
    "pytest-xdist": "a pytest plugin (make test's -n workers)",
}
# Imported, and deliberately not declared here: where each is installed instead.
DECLARED_ELSEWHERE = {
    "sky": "tests/skypilot_check.py runs in .venv-sky (`make sky`: skypilot pins click<8.2, this venv needs newer)",
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def _declared() -> dict[str, dict[str, str]]:
    """{group: {normalized distribution: requirement}}; group "" is [project.dependencies]."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    groups = {"": project["dependencies"], **project.get("optional-dependencies", {})}
    out: dict[str, dict[str, str]] = {}
    for group, reqs in groups.items():
        out[group] = {_norm(re.match(r"[A-Za-z0-9_.\-]+", r).group(0)): r for r in reqs}
    return out


def _imports(rooms) -> dict[str, set[str]]:
    """Top-level names of every absolute import in the .py files under `rooms` -> the files importing them."""
    found: dict[str, set[str]] = {}
    for room in rooms:
        for module, files in _room_imports(room).items():
            found.setdefault(module, set()).update(files)
    return found


@cache
def _room_imports(room: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / room).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in LOCAL and top not in sys.stdlib_module_names and top != "__future__":
                    found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


@cache
def _installed() -> dict[str, list[str]]:
    return packages_distributions()  # reads every installed distribution's file list: once per run


def _distributions(module: str) -> list[str]:
    """The distributions that provide `module` here, or its own name where none installed does."""
    return [_norm(d) for d in _installed().get(module, [])] or [_norm(module)]


def _undeclared(rooms, allowed: set[str]) -> list[str]:
    return [f"{module} (imported by {', '.join(sorted(files)[:3])}): declare one of {_distributions(module)}"
            for module, files in sorted(_imports(rooms).items())
            if not set(_distributions(module)) & allowed and module not in DECLARED_ELSEWHERE]


def test_every_import_of_the_project_is_declared():
    declared = _declared()
    allowed = {d for group in declared.values() for d in group}
    assert not _undeclared(PROJECT_ROOMS, allowed), "\n".join(_undeclared(PROJECT_ROOMS, allowed))


def test_every_import_of_the_tests_is_declared():
    declared = _declared()
    allowed = {d for group in declared.values() for d in group}
    assert not _undeclared(("tests",), allowed), "\n".join(_undeclared(("tests",), allowed))


def test_every_declaration_has_bounds_and_is_used():
    declared = _declared()
    used = {d for module in _imports((*PROJECT_ROOMS, "tests")) for d in _distributions(module)}
    unused = [d for group in declared.values() for d in group if d not in used and d not in USED_WITHOUT_IMPORT]
    assert not unused, f"declared in pyproject.toml but imported nowhere (or add it to USED_WITHOUT_IMPORT): {unused}"
    unbounded = [r for group in declared.values() for r in group.values() if not re.search(r"[<>=~]=?", r)]
    assert not unbounded, f"requirements without a version bound: {unbounded}"


def test_the_core_imports_named_in_issue_44_are_declared_in_the_core_list():
    """numpy, PyYAML, httpx and MarkupSafe are imported by modules every command loads: the core list, not an extra."""
    core = _declared()[""]
    for dist in ("numpy", "pyyaml", "httpx", "markupsafe"):
        assert dist in core, f"{dist} is imported directly but not in [project.dependencies]"
        assert "<" in core[dist] and ">=" in core[dist], f"{core[dist]}: expected a lower and an upper bound"
