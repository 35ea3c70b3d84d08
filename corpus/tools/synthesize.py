"""Synthetic suites for benchmarks: ``python -m corpus.tools.synthesize --suites N --out DIR``.

Each synthetic suite is a copy of one corpus suite (the templates, taken in turn in name order; a
suite that borrows its probes from a sibling with ``probes-from`` is not a template) named ``<template>-<NNN>``, holding what a pre-flight needs: the contract, probes,
mutations (the seeded defects), ``suite.toml``, ``targets.toml``, the fixtures and the system under
test. The system is a real one: the template's program with one comment line added (after the
interpreter line), ``# SYNTHETIC_SUITE: <name>``, so every suite has its own system digest and its legs never collapse
into another suite's in the leg cache (identical requests *within* a suite still collapse, as in the
corpus). The seeded defects are the template's mutations; each still applies exactly once, since the
added line is above every ``find`` text.

Beside the suites, ``DIR/expected-preflight.json`` is the pre-flight baseline the templates' own rows
predict (a synthetic probe must reach its template probe's outcome with the same planned legs), so
``python -m flows.preflight --suites DIR --baseline DIR/expected-preflight.json`` gates a synthetic run
exactly as the corpus run is gated. Stored trials and evidence are not copied (scoring is not what
these suites measure). The output is never committed as corpus: it is regenerated on demand.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from corpus.tools import SUITES_ROOT
from evalquality_core.suite.load import StagingError, load_mutations, suite_names

#: What a pre-flight of a suite reads; evidence/ and trials/ stay behind.
COPIED: tuple[str, ...] = ("contract.json", "probes", "mutations", "suite.toml", "targets.toml", "fixtures", "system")
BASELINE = "expected-preflight.json"
MARKER = "SYNTHETIC_SUITE"


def synthetic_name(template: str, index: int) -> str:
    """The name of the ``index``-th synthetic suite drawn from ``template``."""
    return f"{template}-{index:03d}"


def _mark_system(system_dir: Path, name: str) -> None:
    """Give every program of the system its own bytes (and so the suite its own system digest)."""
    for program in sorted(system_dir.rglob("*.py")):
        text = program.read_text(encoding="utf-8")
        marker = f"# {MARKER}: {name}\n"
        if text.startswith("#!"):  # the interpreter line stays first
            first, _, rest = text.partition("\n")
            program.write_text(f"{first}\n{marker}{rest}", encoding="utf-8")
        else:
            program.write_text(marker + text, encoding="utf-8")


def _self_contained(suite: Path) -> bool:
    """A template must not borrow its probes or its system from a sibling (``probes-from``,
    ``system-from``): the copy has no such sibling."""
    settings = tomllib.loads((suite / "suite.toml").read_text(encoding="utf-8"))
    return "probes-from" not in settings and "system-from" not in settings


def synthesize(count: int, out: Path, templates: Sequence[str] | None = None, source: Path = SUITES_ROOT) -> list[Path]:
    """Write ``count`` synthetic suites under ``out`` (emptied of earlier synthetic suites first) and the
    baseline beside them; return the suite folders."""
    if count < 1:
        raise ValueError("--suites must be at least 1")
    names = list(templates or [name for name in suite_names(source) if _self_contained(source / name)])
    if not names:
        raise StagingError(f"{source}: no template suite")
    recorded = json.loads((source.parent / BASELINE).read_text(encoding="utf-8"))["probes"]
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.iterdir():  # a smaller N after a larger one must not leave extra suites behind
        if stale.is_dir() and (stale / "contract.json").is_file() and any(stale.name.startswith(f"{t}-") for t in names):
            shutil.rmtree(stale)
    written: list[Path] = []
    baseline: dict[str, object] = {}
    for index in range(count):
        template = names[index % len(names)]
        origin = source / template
        name = synthetic_name(template, index)
        suite = out / name
        for member in COPIED:
            path = origin / member
            if path.is_dir():
                shutil.copytree(path, suite / member, symlinks=False)
            elif path.is_file():
                suite.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, suite / member)
        _mark_system(suite / "system", name)
        for mutation in load_mutations(suite).values():  # every seeded defect still plants exactly once
            mutation.apply((suite / mutation.target).read_text(encoding="utf-8"))
        for probe_path in sorted((suite / "probes").glob("*.json")):
            probe_id = json.loads(probe_path.read_text(encoding="utf-8"))["probeId"]
            baseline[f"{name}/{probe_id}"] = recorded[f"{template}/{probe_id}"]
        written.append(suite)
    document = {
        "about": f"Pre-flight baseline of {count} synthetic suites, predicted from the templates' rows "
        "(python -m corpus.tools.synthesize).",
        "probes": dict(sorted(baseline.items())),
    }
    (out / BASELINE).write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags and write the suites; a bad template or flag is one line and exit 2."""
    parser = argparse.ArgumentParser(prog="python -m corpus.tools.synthesize", description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, required=True, metavar="N", help="how many suites to write")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the suites go")
    parser.add_argument("--template", action="append", help="template suite name (repeatable; default: all)")
    args = parser.parse_args(argv)
    try:
        suites = synthesize(args.suites, args.out.resolve(), args.template)
    except (StagingError, ValueError, KeyError, OSError) as problem:
        print(f"python -m corpus.tools.synthesize: {type(problem).__name__}: {problem}", file=sys.stderr)
        return 2
    print(f"{len(suites)} synthetic suites under {args.out} (baseline: {args.out / BASELINE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
