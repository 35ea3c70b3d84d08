"""The import rules of the layers (00-overview.md; style.md §1.1), checked by walking the AST.

- ``evalquality_core`` never imports ``prefect``, ``tasks`` or ``flows``;
- ``tasks`` never imports ``flows``; ``flows`` never imports ``deployments`` (flows -> tasks -> core, and the
  deployments schedule the flows);
- inside the core, only the adapters, the suite package and the CLI may touch the world (``subprocess``, ``os``,
  ``time``, ``random``, ``signal``, ``shutil``, ``tempfile``, ``pathlib``, ``socket``...).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORLD_MODULES = {
    "subprocess",
    "os",
    "time",
    "random",
    "signal",
    "shutil",
    "tempfile",
    "pathlib",
    "socket",
    "httpx",
    "httpcore",
    "select",
    "selectors",
    "threading",
    "asyncio",
    "datetime",
    "uuid",
}
#: Sub-packages of the core allowed to touch processes and files: the probe adapters, the CLI, and the
#: suite reader/stager/evaluator/generator (an adapter between a suite folder on disk and the pure stages).
WORLD_TOUCHING = ("evalquality_core/adapters/", "evalquality_core/cli/", "evalquality_core/suite/")


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_core_never_imports_prefect_tasks_or_flows() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in _python_files("evalquality_core")
        for line, name in _imports(path)
        if name.split(".")[0] in {"prefect", "tasks", "flows", "deployments"}
    ]
    assert bad == []


def test_tasks_never_import_flows() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in _python_files("tasks")
        for line, name in _imports(path)
        if name.split(".")[0] in {"flows", "deployments"}
    ]
    assert bad == []


def test_flows_never_import_deployments() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in _python_files("flows")
        for line, name in _imports(path)
        if name.split(".")[0] == "deployments"
    ]
    assert bad == []


def test_only_adapters_and_cli_touch_the_world() -> None:
    bad = []
    for path in _python_files("evalquality_core"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(WORLD_TOUCHING):
            continue
        for line, name in _imports(path):
            if name.split(".")[0] in WORLD_MODULES:
                bad.append(f"{rel}:{line} imports {name}")
    assert bad == []


def test_the_walk_sees_the_core() -> None:
    # Non-vacuity: the rules above must actually have files to look at.
    assert len(_python_files("evalquality_core")) >= 5
