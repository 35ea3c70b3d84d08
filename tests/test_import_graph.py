"""The import graph of ``evalquality_core``, ``tasks``, ``flows`` and ``deployments`` as a tested rule (issue 35).

Three rules, checked by walking every module with ``ast`` (``tests/core/test_layers.py`` holds the
direction of the layers: flows -> tasks -> evalquality_core, no Prefect in the core):

1. **No import cycle between modules.** Every import counts, the ones inside a function too: a lazy
   import hides a cycle from the interpreter, not from a reader, who still cannot understand one module
   without the other. A package's ``__init__`` re-exporting its modules is an edge like any other, so the
   modules of a package import each other directly, never through their own ``__init__``.
2. **No import of another module's ``_private`` name.** A name needed elsewhere is public (renamed, and
   documented) or lives where both users can import it.
3. **No class defined twice.** Two top-level classes with one name in two modules make every
   ``grep``/import ambiguous; when they are two concepts they get two names, when they are one concept
   one module holds it.

No allow-list: the walk fails on any breach anywhere in the four packages.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("evalquality_core", "tasks", "flows", "deployments")


@dataclass(frozen=True)
class Module:
    """One module of the walk: its dotted name, file, and whether it is a package's ``__init__``."""

    name: str
    path: Path
    is_package: bool


@dataclass(frozen=True)
class Import:
    """One imported name: the importing module, its line, the module it resolves to and the name taken."""

    importer: str
    line: int
    target: str
    name: str | None


def modules_of(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Module]:
    """Every module under the given top-level packages of ``root``, by dotted name."""
    found: dict[str, Module] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def _known(name: str, modules: dict[str, Module]) -> str | None:
    """The longest prefix of ``name`` that is a walked module (None: a third-party or stdlib import)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The module a (possibly relative) ``from ... import`` names."""
    if node.level == 0:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(modules: dict[str, Module]) -> list[Import]:
    """Every import of a walked module by a walked module, function-level imports included."""
    found: list[Import] = []
    for module in modules.values():
        tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = _known(alias.name, modules)
                    if target is not None and target != module.name:
                        found.append(Import(module.name, node.lineno, target, None))
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(module, node)
                for alias in node.names:
                    # ``from pkg import mod`` imports the module ``pkg.mod``; ``from mod import name`` a name.
                    submodule = f"{source}.{alias.name}"
                    target = submodule if submodule in modules else _known(source, modules)
                    if target is not None and target != module.name:
                        name = None if submodule in modules else alias.name
                        found.append(Import(module.name, node.lineno, target, name))
    return found


def import_cycles(modules: dict[str, Module], imports: list[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for edge in imports:
        graph[edge.importer].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return sorted(cycles)


def private_imports(imports: list[Import]) -> list[str]:
    """``module:line imports _name from other.module`` for every cross-module import of a private name."""
    return [
        f"{edge.importer}:{edge.line} imports {edge.name} from {edge.target}"
        for edge in imports
        if edge.name is not None and edge.name.startswith("_") and not edge.name.startswith("__")
    ]


def classes_defined_twice(modules: dict[str, Module]) -> dict[str, list[str]]:
    """Top-level class names defined in more than one module, with the modules."""
    where: dict[str, list[str]] = defaultdict(list)
    for module in modules.values():
        tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(module.name)
    return {name: sorted(owners) for name, owners in sorted(where.items()) if len(owners) > 1}


@pytest.fixture(scope="module")
def project() -> tuple[dict[str, Module], list[Import]]:
    modules = modules_of(ROOT)
    return modules, imports_of(modules)


def test_no_import_cycle_between_modules(project: tuple[dict[str, Module], list[Import]]) -> None:
    modules, imports = project
    assert import_cycles(modules, imports) == []


def test_no_module_imports_another_modules_private_name(project: tuple[dict[str, Module], list[Import]]) -> None:
    _, imports = project
    assert private_imports(imports) == []


def test_no_class_is_defined_in_two_modules(project: tuple[dict[str, Module], list[Import]]) -> None:
    modules, _ = project
    assert classes_defined_twice(modules) == {}


def test_the_walk_sees_every_package_and_their_imports(project: tuple[dict[str, Module], list[Import]]) -> None:
    """Non-vacuity: each package has modules, and the walk resolves imports between them (absolute,
    relative and function-level alike), so an empty graph cannot pass the rules above."""
    modules, imports = project
    for package in PACKAGES:
        assert any(name.split(".")[0] == package for name in modules), package
    edges = {(edge.importer, edge.target) for edge in imports}
    assert ("flows.contract_strength", "tasks.suite_run") in edges
    assert ("tasks.leg_cache.cache", "tasks.leg_cache.postgres") in edges  # a function-level import
    assert len(edges) > 300


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_each_rule_fires_on_a_tree_that_breaks_it(tmp_path: Path) -> None:
    """The checks themselves: a two-module cycle through a lazy import and a relative import, a private
    name taken across modules, and one class name in two modules are each reported, and nothing else."""
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import shown\nclass Twice: ...\n",
        "pkg/b.py": "def shown():\n    from . import a\n    return a\n_hidden = 1\n",
        "pkg/c.py": "from pkg.b import _hidden\nclass Twice: ...\nclass _Private: ...\n",
        "pkg/d.py": "from pkg import c\nclass _Private: ...\n",
    })
    modules = modules_of(tmp_path, ("pkg",))
    imports = imports_of(modules)
    assert import_cycles(modules, imports) == [["pkg.a", "pkg.b"]]
    assert private_imports(imports) == ["pkg.c:1 imports _hidden from pkg.b"]
    assert classes_defined_twice(modules) == {"Twice": ["pkg.a", "pkg.c"], "_Private": ["pkg.c", "pkg.d"]}
