"""A suite's generated mutants on disk: read the system's sources, write and read ``mutants/``.

``eval-quality mutants generate DIR`` writes one file per selected mutant, ``DIR/mutants/<mutant id>.json``,
in the suite's mutation shape plus the ``generated`` marker (evalquality_core/mutants/generate.py), and
``DIR/mutants/generated.json``: the settings, the candidates per operator, and every rejected candidate
with its status (Invalid, Duplicate) and reason. ``mutants/`` is not part of the suite's corpus digest
(load.CORPUS_MEMBERS): generating mutants never moves a stored verdict. A re-generation removes the
generated files it no longer selects (a hand-written file there, one without the marker, is kept).

A generated mutation can be copied into ``mutations/`` as it is: the loader accepts its ``generated`` key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalquality_core.canonical import digest_bytes, digest_composite, digest_directory
from evalquality_core.mutants.catalogue import OPERATOR_NAMES
from evalquality_core.mutants.generate import GENERATOR, GeneratedMutant, Generation, Progress, generate
from evalquality_core.suite.load import (
    Mutation,
    StagingError,
    read_suite_json,
    suite_dir,
    system_dir_of,
    tree_digest,
)
from evalquality_core.suite.staging import layer_paths, refuse_links_outside_layers
from evalquality_core.suite.staging import system_members as staged_members

#: Where generated mutants live in a suite folder.
MUTANTS_DIR = "mutants"
MANIFEST = "generated.json"


def system_sources(suite: str | Path) -> dict[str, str]:
    """Every Python source of the suite's ``system/`` outside its dependency layers (``node_modules/``,
    ``layers = [...]``: dependencies, not the system's own code) as ``system/<relative path>`` → text.
    Links are refused as staging refuses them (one confined to its layer is kept)."""
    root = system_dir_of(suite)  # its own system/, or a sibling's (system-from)
    if not root.is_dir():
        raise StagingError(f"{root}: the suite has no system/ folder")
    layers = refuse_links_outside_layers(suite)
    sources = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if any(relative.startswith(layer + "/") for layer in layers):
            continue
        try:
            sources["system/" + path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise StagingError(f"{path}: not UTF-8 at byte {exc.start}") from None
    if not sources:
        raise StagingError(f"{root}: no Python source to mutate (*.py)")
    return sources


def generate_for_suite(
    suite: str | Path,
    *,
    operators: Sequence[str] = OPERATOR_NAMES,
    sample_size: int | None = None,
    seed: int = 0,
    per_line_limit: int | None = None,
    max_candidates: int | None = None,
    stop: Callable[[], str | None] | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Generation:
    """The generation of the suite's system (read from disk; nothing written); the bounds and progress
    as :func:`evalquality_core.mutants.generate.generate` takes them."""
    return generate(system_sources(suite), operators=operators, sample_size=sample_size, seed=seed,
                    per_line_limit=per_line_limit, max_candidates=max_candidates, stop=stop, progress=progress)


def _pretty(value: Any) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _write(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def write_generation(suite: str | Path, generation: Generation) -> list[Path]:
    """Write ``mutants/`` (module docstring); returns the mutant files written."""
    folder = suite_dir(suite) / MUTANTS_DIR
    folder.mkdir(exist_ok=True)
    wanted = {f"{m.mutant_id}.json": m for m in generation.kept}
    for path in folder.glob("*.json"):
        if path.name == MANIFEST or path.name in wanted:
            continue
        try:
            marker = json.loads(path.read_text(encoding="utf-8")).get("generated", {}).get("by")
        except (ValueError, AttributeError, OSError):
            continue
        if marker == GENERATOR:
            path.unlink()
    written = []
    for name, mutant in wanted.items():
        data = _pretty(mutant.to_mutation())
        path = folder / name
        if not path.is_file() or path.read_bytes() != data:
            _write(path, data)
        written.append(path)
    _write(folder / MANIFEST, _pretty(generation.manifest()))
    return written


def as_mutation(mutant: GeneratedMutant, suite: str | Path) -> Mutation:
    """A generated mutant as the stager's :class:`Mutation` (applied exactly like a hand-written one)."""
    return Mutation(
        mutation_id=mutant.mutant_id, probe_id=mutant.probe_id, operator=mutant.operator, target=mutant.target,
        description=mutant.description(), find=mutant.find, replace=mutant.replace, naive_check=None,
        source_path=suite_dir(suite) / MUTANTS_DIR / f"{mutant.mutant_id}.json",
    )


def load_generated(suite: str | Path) -> list[dict[str, Any]]:
    """Every generated mutation file of ``mutants/`` (its JSON), sorted by target and position."""
    folder = suite_dir(suite) / MUTANTS_DIR
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.name == MANIFEST:
            continue
        value = read_suite_json(path)
        if not isinstance(value, dict) or not isinstance(value.get("generated"), dict):
            continue
        found.append(value)
    return sorted(found, key=lambda m: (m["target"], m["generated"]["location"]["start"]["line"],
                                        m["generated"]["location"]["start"]["column"], m["generated"]["mutantId"]))


def system_members(suite: str | Path) -> dict[str, str]:
    """The clean system's members as staging digests them (relative path → raw-bytes digest; a link
    confined to its layer digested as a link): :func:`tree_digest`'s for a system without links."""
    from evalquality_core.suite.load import read_suite_settings

    root = system_dir_of(suite)
    return staged_members(root, layer_paths(root, read_suite_settings(suite), suite_dir(suite) / "suite.toml"))


def mutant_staged_digest(members: dict[str, str], work_digest: str, mutant: GeneratedMutant) -> str:
    """The staged digest (system + work, as tasks/suites.py keys legs) of a workspace holding ``mutant``,
    computed without staging: the clean members with the target file's digest replaced."""
    relative = mutant.target.removeprefix("system/")
    changed = dict(members)
    changed[relative] = digest_bytes(mutant.mutated_text.encode("utf-8"))
    return digest_composite({"system": digest_directory(changed), "work": work_digest})


__all__ = [
    "MANIFEST", "MUTANTS_DIR", "as_mutation", "generate_for_suite", "load_generated", "mutant_staged_digest",
    "system_members", "system_sources", "tree_digest", "write_generation",
]


def qualify_derived(suite: str | Path, probe: dict[str, Any], mutation: dict[str, Any]) -> tuple[bool, str, bytes | None]:
    """Qualify a derived probe with the suite's generator cycle (clean → mutate → mutated → restore →
    clean) in a disposable copy of the suite (its trials and evidence left out): ``(admitted, why,
    the generated probe's bytes)``. A probe the cycle refuses, or the AD-9 gate refuses, says why.
    The cycle runs through the suite's own adapter (``adapter_for``), so an api suite's service and an
    mcp suite's tool server are started as real child processes for every arm, as for a command."""
    import shutil
    import tempfile

    from evalquality_core.suite.generate import GenerationError, Output, generate_probe
    from evalquality_core.suite.load import (
        TOOL_PROBLEMS,
        adapter_for,
        load_mutations,
        load_suite,
        problem_line,
    )

    source = suite_dir(suite)
    scratch = Path(tempfile.mkdtemp(prefix="eq-derive-"))
    try:
        copy = scratch / source.name
        # Links copied as links: the copy's staging keeps those confined to a layer and refuses any other.
        shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns("trials", "evidence", MUTANTS_DIR))
        if not (copy / "system").exists():  # system-from: the copy holds the sibling's system itself
            shutil.copytree(system_dir_of(source), copy / "system", symlinks=True)
            settings = copy / "suite.toml"
            settings.write_text("".join(line for line in settings.read_text(encoding="utf-8").splitlines(keepends=True)
                                        if not line.lstrip().startswith("system-from")), encoding="utf-8")
        mutation_path = copy / "mutations" / f"{mutation['generated']['mutantId']}.json"
        mutation_path.parent.mkdir(exist_ok=True)
        mutation_path.write_bytes(_pretty(mutation))
        probe_path = copy / "probes" / f"{probe['probeId']}.json"
        probe_path.write_bytes(_pretty(probe))
        loaded = load_suite(copy, probes=False)
        out = Output()
        try:
            generate_probe(loaded, probe_path, load_mutations(copy), adapter_for(loaded), out)
        except (GenerationError, *TOOL_PROBLEMS) as problem:
            return False, f"the generator cycle refuses it: {problem_line(problem)}", None
        gate = next((note for note in out.notes if ": qualification " in note), "")
        admitted = "admits it" in gate
        return admitted, gate.split(": qualification ", 1)[-1] or "qualified", out.files.get(probe_path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


#: The keys of ``suite.toml``'s ``[mutants]`` table (the nightly opt-in): ``nightly`` (bool, required),
#: ``sample`` (N valid mutants, default 50), ``seed`` (default 0), ``per-line``, ``operators`` and
#: ``trials-sample`` (N Killed/Survived mutants put through live evaluator trials; default none).
MUTANTS_SETTINGS_KEYS: frozenset[str] = frozenset({"nightly", "sample", "seed", "per-line", "operators", "trials-sample"})
#: The nightly's default sample: enough for an interval of about ±0.13 at a score near 0.5.
NIGHTLY_SAMPLE = 50


def nightly_settings(suite: str | Path) -> dict[str, Any] | None:
    """The suite's ``[mutants]`` opt-in when ``nightly = true`` (else None), defaults filled; a malformed
    table is a StagingError naming suite.toml."""
    from evalquality_core.mutants.catalogue import UnknownOperator, parse_operator_names
    from evalquality_core.suite.load import read_suite_settings

    table = read_suite_settings(suite).get("mutants")
    if table is None:
        return None
    where = suite_dir(suite) / "suite.toml"
    if not isinstance(table, dict) or set(table) - MUTANTS_SETTINGS_KEYS or not isinstance(table.get("nightly"), bool):
        raise StagingError(f"{where}: [mutants] takes nightly = true|false and optionally "
                           f"sample, seed, per-line, operators, trials-sample")
    if not table["nightly"]:
        return None
    for key in ("sample", "seed", "per-line", "trials-sample"):
        if key in table and (not isinstance(table[key], int) or isinstance(table[key], bool) or table[key] < (0 if key == "seed" else 1)):
            raise StagingError(f"{where}: [mutants] {key} must be a {'non-negative' if key == 'seed' else 'positive'} integer")
    try:
        operators = parse_operator_names(list(table.get("operators", [])))
    except (UnknownOperator, TypeError) as problem:
        raise StagingError(f"{where}: [mutants] operators: {problem}") from None
    return {"sample": table.get("sample", NIGHTLY_SAMPLE), "seed": table.get("seed", 0),
            "per_line": table.get("per-line"), "operators": list(operators), "trials_sample": table.get("trials-sample")}
