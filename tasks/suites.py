"""Finds the suites under ``corpus/suites/`` (or a user-given folder) and loads each into artifacts.

A suite is a folder holding ``contract.json``, its probes (``probes/*.json``, or one ``probes.json``
array), ``targets.toml`` (the target registry, harness.md A.1), ``suite.toml`` with its ``system/`` and
``fixtures/`` (staged by :mod:`evalquality_core.suite.staging`), and optionally ``mutations/`` (one declared
mutation per defect probe; a seeded-fault leg runs against it, every other leg against the clean
system). A folder that cannot be loaded becomes a ``SuiteProblem`` naming the file and why, so the run
reports it instead of crashing, and the baseline gate exits 2 for it. Every suite file is read under the
input size cap (``EVALQUALITY_MAX_INPUT_BYTES``, 64 MiB by default, as the CLI's inputs are): a larger one
is such a problem, refused before it is parsed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.probe import Probe
from evalquality_core.canonical.digest import digest_composite
from evalquality_core.canonical.nesting import TooDeep, json_too_deep
from evalquality_core.faults import EvalQualityFault
from evalquality_core.probe.mcp_policy import McpTargetPolicy
from evalquality_core.probe.policy import CommandTargetPolicy
from evalquality_core.probe.targets import TargetRegistry, parse_targets
from evalquality_core.suite import load as suite_load
from evalquality_core.suite import staging
from evalquality_core.suite.layers import LayerStore
from tasks.preflight import interpreter_substitutions, key_entry, key_from_entry


def _substitutions() -> dict[str, str]:
    """Values for the ``{placeholder}`` templates a registry may use (targets.toml); the leg key puts
    them back as authored (tasks/preflight.py ``portable_entry``), so they never make it machine-bound."""
    return interpreter_substitutions()


@dataclass(frozen=True, eq=False)
class Suite:
    """A loaded suite: its contract (as authored), probes, target policy, and staged-tree digests."""

    name: str
    directory: Path
    contract: Mapping[str, Any]
    probes: tuple[Mapping[str, Any], ...]
    policy: CommandTargetPolicy
    #: mutation id (None for the clean system) → digest of the staged system and fixtures.
    staged_digests: Mapping[str | None, str] = field(default_factory=dict)
    #: The registry's tool servers (``kind = "mcp"`` entries); ``None`` when it registers none.
    mcp_policy: McpTargetPolicy | None = None
    #: The whole target registry (api entries and the ``[service]`` that answers them included).
    targets: TargetRegistry | None = None
    #: What ``leg_key_of`` and ``mutation_of_leg`` worked out already (derived from the fields above).
    _memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def probe_ids(self) -> list[str]:
        """The probe ids in load order."""
        return [probe["probeId"] for probe in self.probes]

    def mutation_of_leg(self, probe: Mapping[str, Any], leg_id: str) -> str | None:
        """The mutation a leg of ``probe`` runs against (None: the clean system); read from the suite's
        mutations once per (probe, leg)."""
        which = ("mutation", probe.get("probeId"), leg_id)
        if which not in self._memo:
            mutation = staging.mutation_for_leg(self.directory, dict(probe), leg_id)
            self._memo[which] = None if mutation is None else mutation.mutation_id
        return self._memo[which]  # type: ignore[no-any-return]

    def staged_digest_of_leg(self, probe: Mapping[str, Any], leg_id: str) -> str:
        """The digest of what a leg's workspace will hold (part of its leg cache key)."""
        return self.staged_digests[self.mutation_of_leg(probe, leg_id)]

    def leg_key_of(self, probe: Mapping[str, Any], leg: Any) -> str:
        """The leg cache key of a planned leg of ``probe`` (tasks/preflight.py ``leg_key``): its request,
        this suite's registry entry for it, and what its workspace will hold.

        The entry is worked out once per (kind, interface, executable) and a leg's mutation once per
        (probe, leg): the flow asks for every leg's key on every run, cached legs included."""
        request = leg.request
        which = (request.get("kind"), request.get("interfaceId"), request.get("executable"))
        entry = self._memo.get(("entry", which))
        if entry is None:
            entry = key_entry(request, self.policy, mcp_policy=self.mcp_policy, targets=self.targets)
            self._memo[("entry", which)] = entry
        return key_from_entry(request, entry, self.staged_digest_of_leg(probe, leg.leg_id))

    def owner_of_leg(self, probes: Sequence[Mapping[str, Any]], leg_id: str) -> dict[str, Any]:
        """Of ``probes``, the one whose manifestation witness ``leg_id`` is, else the first.

        In a suite-wide plan every leg but a seeded-fault leg runs against the clean system, whichever
        probe is named, so the first stands for them; a fault leg stages its own probe's mutation.
        """
        fault_legs = staging.fault_leg_ids
        for probe in probes:
            if leg_id in fault_legs(dict(probe)):
                return dict(probe)
        return dict(probes[0])

    def stager(self, probe: Mapping[str, Any], leg_id: str, layers_dir: str | None = None) -> functools.partial[Any]:
        """Stages this leg's workspace (clean, or the probe's mutation for a seeded-fault leg); with
        ``layers_dir`` the system's dependency layers are linked from that store, not copied."""
        return functools.partial(_stage_leg, self.directory, dict(probe), leg_id, layers_dir)


def _stage_leg(directory: Path, probe: dict[str, Any], leg_id: str, layers_dir: str | None, destination: Path) -> Any:
    store = None if layers_dir is None else LayerStore(Path(layers_dir))
    return staging.stage_for_leg(directory, probe, leg_id, destination, layers=store)


@dataclass(frozen=True)
class SuiteProblem:
    """A folder that looked like a suite but could not be loaded."""

    name: str
    directory: Path
    message: str


class SuiteLoadError(Exception):
    """Why a suite could not be loaded (one line naming the file)."""


#: Every suite folder directly under a root (which may itself be one suite), sorted by name.
find_suites = suite_load.find_suites


def _read_json(path: Path) -> Any:
    """A suite file's JSON, read under the input size cap (``suite_load.read_suite_bytes``)."""
    try:
        data = suite_load.read_suite_bytes(path)
        if json_too_deep(data):  # refused before json.loads could recurse that deep
            raise SuiteLoadError(f"{path}: {TooDeep()}")
        return json.loads(data)
    except suite_load.SuiteError as problem:
        raise SuiteLoadError(str(problem)) from None
    except ValueError as problem:
        raise SuiteLoadError(f"{path}: {problem}") from None


def _probe_files(directory: Path) -> list[tuple[Path, Any]]:
    folder = directory / "probes"
    if folder.is_dir():
        return [(path, _read_json(path)) for path in sorted(folder.glob("*.json"))]
    single = directory / "probes.json"
    if single.is_file():
        values = _read_json(single)
        if not isinstance(values, list):
            raise SuiteLoadError(f"{single}: expected a JSON array of probes")
        return [(single, value) for value in values]
    raise SuiteLoadError(f"{directory}: no probes/ folder and no probes.json")


def _staged_digests(directory: Path, probes: tuple[Mapping[str, Any], ...]) -> dict[str | None, str]:
    """What every leg will see, digested without staging: the clean system and each probe's mutation."""
    mutations = suite_load.load_mutations(directory)
    wanted = [None] + [mutations[p["probeId"]] for p in probes if p["probeId"] in mutations]
    return {
        key: digest_composite({"system": system, "work": work})
        for key, (system, work) in staging.staged_digests(directory, wanted).items()
    }


def load_suite(directory: Path) -> Suite:
    """Load one suite folder (module docstring); raise ``SuiteLoadError`` naming what is wrong."""
    try:
        contract = to_wire(read_artifact(EvalContract, _read_json(directory / "contract.json"), "EvalContract"))
        probes = tuple(
            to_wire(read_artifact(Probe, value, f"Probe({path.name})")) for path, value in _probe_files(directory)
        )
        targets_path = directory / "targets.toml"
        try:
            text = suite_load.read_suite_text(targets_path)
        except suite_load.SuiteError as problem:
            raise SuiteLoadError(str(problem)) from None
        registry = parse_targets(text, str(targets_path))
        policy = registry.to_policy(_substitutions())
        mcp_policy = registry.to_mcp_policy(_substitutions()) if registry.mcp_entries else None
        staged = _staged_digests(directory, probes)
    except EvalQualityFault as fault:
        raise SuiteLoadError(f"{directory.name}: {fault.code}: {fault.artifact_path}: {fault.detail}") from None
    except SuiteLoadError:
        raise
    except Exception as problem:  # a staging refusal or a malformed declaration: report, never crash
        raise SuiteLoadError(f"{directory.name}: {type(problem).__name__}: {problem}") from None
    return Suite(directory.name, directory, contract, probes, policy, staged, mcp_policy, targets=registry)


def load_suites(root: Path, only: Sequence[str] | None = None) -> tuple[list[Suite], list[SuiteProblem]]:
    """Every suite under ``root`` (or only those named in ``only``: a batch of a fanned-out night), and a
    problem for each folder that could not be loaded and each named suite that is not there."""
    suites: list[Suite] = []
    problems: list[SuiteProblem] = []
    found = find_suites(root)
    if only is not None:
        names = {directory.name for directory in found}
        problems.extend(
            SuiteProblem(name, root / name, f"{root / name}: no such suite (no contract.json)")
            for name in sorted(set(only) - names)
        )
        found = [directory for directory in found if directory.name in set(only)]
    for directory in found:
        try:
            suites.append(load_suite(directory))
        except SuiteLoadError as problem:
            problems.append(SuiteProblem(directory.name, directory, str(problem)))
    return suites, problems
