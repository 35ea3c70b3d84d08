"""Staging: a fresh workspace for one run of a suite's system, clean or with one declared mutation.

A staged workspace is a directory with two children (harness.md A.7):

* ``system/`` — a copy of the suite's ``system/``, with at most one mutation from ``mutations/``
  applied to its target file. The system lives beside the working directory, never inside it, so
  a run cannot read its own source (the ``source-code`` forbidden input).
* ``work/``   — the working directory of every command, staged from the suite's fixture sets as
  ``suite.toml`` places them. The suite's evaluation folder (contract, probes, mutations, evidence,
  trials) is never copied, so a target cannot read which defect was planted.

Every workspace is new: two legs never share one, because a leg would read the other's artifacts.
The pre-flight flow stages one per leg with :func:`stage_for_leg`; the reference evaluator and the
generator stage one per trial with :func:`stage_workspace`.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalquality_core.canonical import digest_bytes, digest_directory

#: The corpus root: ``corpus/suites`` in this checkout.
SUITES_ROOT = Path(__file__).resolve().parent.parent / "suites"


class StagingError(Exception):
    """A suite or mutation that cannot be staged faithfully; the message names the file and why."""


#: The keys of ``mutations/<name>.json``: every one required except ``naiveCheck`` (gameability only).
MUTATION_KEYS: frozenset[str] = frozenset({"probeId", "operator", "target", "description", "find", "replace"})
#: The keys of ``suite.toml``.
SUITE_SETTINGS_KEYS: frozenset[str] = frozenset({"system-id", "fixtures"})
#: Optional keys of ``suite.toml``: ``[floors]`` (per-class strength floors, read by the contract-strength
#: flow) and ``probes-from`` (the suite whose probes this one reuses byte for byte; see generate.py).
SUITE_OPTIONAL_KEYS: frozenset[str] = frozenset({"floors", "probes-from"})


def read_suite_text(path: Path) -> str:
    """The UTF-8 text of a suite file; a missing, unreadable or undecodable file is a StagingError naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StagingError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise StagingError(f"{path}: is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise StagingError(f"{path}: not UTF-8 at byte {exc.start}") from None
    except OSError as exc:
        raise StagingError(f"{path}: cannot be read: {exc.strerror or exc}") from None


def read_suite_json(path: Path) -> Any:
    """The JSON value of a suite file (:func:`read_suite_text`); malformed JSON names the file, line and column."""
    text = read_suite_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StagingError(f"{path}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def check_keys(path: Path, value: Any, required: frozenset[str], optional: frozenset[str] = frozenset()) -> None:
    """Refuse a suite declaration that is not an object, lacks a required key or has an unknown one.

    Unknown keys are refused rather than ignored because a misspelt key (``naivecheck``) would
    otherwise silently change what the tools do.
    """
    if not isinstance(value, dict):
        raise StagingError(f"{path}: expected an object, got {type(value).__name__}")
    missing = sorted(required - set(value))
    if missing:
        raise StagingError(f"{path}: missing key(s) {', '.join(missing)}")
    unknown = sorted(set(value) - required - optional)
    if unknown:
        raise StagingError(f"{path}: unknown key(s) {', '.join(unknown)}")


@dataclass(frozen=True)
class Mutation:
    """One controlled mutation declared as data in ``mutations/<name>.json``.

    ``find`` must occur exactly once in the target file; applying the mutation replaces it with
    ``replace``. ``naive_check`` is set on gameability variants only: the naive oracle (an
    Expression) the degenerate response satisfies.
    """

    mutation_id: str
    probe_id: str
    operator: str
    target: str
    description: str
    find: str
    replace: str
    naive_check: dict[str, Any] | None
    source_path: Path

    def apply(self, text: str) -> str:
        """The target file's text with this mutation applied; refuses a find that is absent or repeated."""
        count = text.count(self.find)
        if count != 1:
            raise StagingError(
                f"{self.source_path}: the text to replace occurs {count} times in {self.target}, not exactly once"
            )
        return text.replace(self.find, self.replace)


@dataclass(frozen=True)
class StagedWorkspace:
    """A staged workspace: its root, the two children, and digests that identify what was staged."""

    root: Path
    system_dir: Path
    work_dir: Path
    mutation_id: str | None
    system_digest: str
    work_digest: str


def suite_dir(suite: str | Path) -> Path:
    """The directory of a suite given its name (under :data:`SUITES_ROOT`) or its path."""
    path = Path(suite)
    if not path.is_absolute() and not path.exists():
        path = SUITES_ROOT / str(suite)
    if not (path / "contract.json").is_file():
        raise StagingError(f"{path}: not a suite (no contract.json)")
    return path


def suite_names() -> list[str]:
    """The names of every suite under :data:`SUITES_ROOT`, sorted."""
    return sorted(p.name for p in SUITES_ROOT.iterdir() if (p / "contract.json").is_file())


def read_suite_settings(suite: str | Path) -> dict[str, Any]:
    """The suite's ``suite.toml``: ``system-id`` and the ``fixtures`` table (fixture set → path under work/)."""
    path = suite_dir(suite) / "suite.toml"
    try:
        settings = tomllib.loads(read_suite_text(path))
    except tomllib.TOMLDecodeError as problem:
        raise StagingError(f"{path}: not TOML: {problem}") from None
    check_keys(path, settings, SUITE_SETTINGS_KEYS, SUITE_OPTIONAL_KEYS)
    if not isinstance(settings["system-id"], str) or not settings["system-id"]:
        raise StagingError(f"{path}: system-id must be a non-empty string")
    if not isinstance(settings["fixtures"], dict) or not settings["fixtures"]:
        raise StagingError(f"{path}: a [fixtures] table naming at least one fixture set is required")
    for fixture_set, place in settings["fixtures"].items():
        if not isinstance(place, str):
            raise StagingError(f"{path}: fixtures.{fixture_set} must be a path under work/ (a string)")
    return settings


def load_mutations(suite: str | Path) -> dict[str, Mutation]:
    """Every mutation of the suite, keyed by the probe id it serves (one mutation per probe)."""
    mutations: dict[str, Mutation] = {}
    for path in sorted((suite_dir(suite) / "mutations").glob("*.json")):
        data = read_suite_json(path)
        check_keys(path, data, MUTATION_KEYS, frozenset({"naiveCheck"}))
        texts = sorted(key for key in MUTATION_KEYS if not isinstance(data[key], str))
        if texts:
            raise StagingError(f"{path}: {', '.join(texts)} must be string(s)")
        if data.get("naiveCheck") is not None and not isinstance(data["naiveCheck"], dict):
            raise StagingError(f"{path}: naiveCheck must be an Expression object or null")
        mutation = Mutation(
            mutation_id=path.stem,
            probe_id=data["probeId"],
            operator=data["operator"],
            target=data["target"],
            description=data["description"],
            find=data["find"],
            replace=data["replace"],
            naive_check=data.get("naiveCheck"),
            source_path=path,
        )
        if not mutation.target.startswith("system/"):
            raise StagingError(f"{path}: a mutation's target must be a file under system/")
        if mutation.probe_id in mutations:
            raise StagingError(f"{path}: probe {mutation.probe_id} already has a mutation")
        mutations[mutation.probe_id] = mutation
    return mutations


def mutation_for_probe(suite: str | Path, probe_id: str) -> Mutation | None:
    """The mutation a probe plants, or None (a clean control plants nothing)."""
    return load_mutations(suite).get(probe_id)


def fault_leg_ids(probe: dict[str, Any]) -> set[str]:
    """The leg ids of a probe's manifestation witnesses: the legs that run against its mutation."""
    return {
        defect["manifestationWitness"]["legId"]
        for defect in probe.get("defects", [])
        if defect.get("manifestationWitness") is not None
    }


def mutation_for_leg(suite: str | Path, probe: dict[str, Any], leg_id: str) -> Mutation | None:
    """Which mutation a pre-flight leg of ``probe`` runs against.

    A seeded-fault leg (a manifestation witness of one of the probe's defects) runs against the
    probe's mutation; every other leg (sensitivity, control) runs against the clean system, which is
    what makes those legs clean for ``seeded-faults-scoped`` (preflight-adapter.md §2.4).
    """
    if leg_id in fault_leg_ids(probe):
        mutation = mutation_for_probe(suite, probe["probeId"])
        if mutation is None:
            raise StagingError(f"probe {probe['probeId']} has a fault leg {leg_id!r} but no declared mutation")
        return mutation
    return None


def tree_digest(directory: Path) -> str:
    """Directory digest of every file under ``directory`` (relative '/' paths → raw-bytes digests)."""
    members = {
        path.relative_to(directory).as_posix(): digest_bytes(path.read_bytes())
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }
    if not members:
        raise StagingError(f"{directory}: nothing to digest")
    return digest_directory(members)


def stage_workspace(
    suite: str | Path, destination: Path, mutation: Mutation | None = None, *, system_source: Path | None = None
) -> StagedWorkspace:
    """Stage a fresh workspace for ``suite`` at ``destination`` (which must not exist or be empty).

    Copies the suite's ``system/`` (or ``system_source``, a disposable copy the generator mutates
    and restores in place) applying ``mutation`` to its target, and every fixture set into
    ``work/``. Raises :class:`StagingError` on anything it cannot stage faithfully.
    """
    source = suite_dir(suite)
    settings = read_suite_settings(source)
    destination = Path(destination)
    if destination.exists() and any(destination.iterdir()):
        raise StagingError(f"{destination}: a workspace must be staged into a new, empty directory")
    system_dir = destination / "system"
    work_dir = destination / "work"
    if not (system_source or source / "system").is_dir():
        raise StagingError(f"{system_source or source / 'system'}: the system to stage is not a directory")
    shutil.copytree(system_source or source / "system", system_dir, symlinks=False)
    if mutation is not None:
        target = destination / mutation.target
        if not target.is_file():
            raise StagingError(f"{mutation.source_path}: target {mutation.target} is not a file of the system")
        target.write_text(mutation.apply(target.read_text(encoding="utf-8")), encoding="utf-8")
    work_dir.mkdir(parents=True, exist_ok=True)
    for fixture_set, place in sorted(settings["fixtures"].items()):
        fixture = source / "fixtures" / fixture_set
        if not fixture.is_dir():
            raise StagingError(f"{source / 'suite.toml'}: fixture set {fixture_set!r} is not a directory")
        shutil.copytree(fixture, (work_dir / place).resolve(), dirs_exist_ok=True, symlinks=False)
    return StagedWorkspace(
        root=destination,
        system_dir=system_dir,
        work_dir=work_dir,
        mutation_id=None if mutation is None else mutation.mutation_id,
        system_digest=tree_digest(system_dir),
        work_digest=tree_digest(work_dir),
    )


def stage_for_leg(suite: str | Path, probe: dict[str, Any], leg_id: str, destination: Path) -> StagedWorkspace:
    """Stage the workspace one pre-flight leg of ``probe`` runs in (see :func:`mutation_for_leg`)."""
    return stage_workspace(suite, destination, mutation_for_leg(suite, probe, leg_id))
