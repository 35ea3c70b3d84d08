"""The application layer of one suite's run: the per-suite plumbing the strength and mutants flows share.

It prepares a suite (compile and seal through the cached tasks, its scoring policy, floors and corpus
digest), builds what every live trial of the suite shares, reads stored trials and writes sealed ones.
The layering rule it lives by: code that touches files or runs Prefect tasks but decides nothing
belongs here, in ``tasks/``, below the flows (which only compose) and above the pure core stages (which
touch nothing); it imports ``evalquality_core`` and other ``tasks`` modules, never ``flows``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect.utilities.annotations import quote

from evalquality_core.aggregate.aggregate import check_floors
from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.scoring_policy import ScoringPolicy
from evalquality_core.canonical import digest_artifact, digest_bytes, scan_json
from evalquality_core.suite.load import corpus_digest as suite_corpus_digest
from evalquality_core.suite.load import read_suite_bytes, read_suite_toml, suite_file_or_fallback
from evalquality_core.suite.staging import staged_digests
from tasks.caching import stored_result
from tasks.contract import compile_task, seal_task
from tasks.output import write_artifact, write_atomically
from tasks.suites import Suite
from tasks.trials import SealedTrial

POLICY_FILE = "scoring-policy.json"


SUITE_SETTINGS_FILE = "suite.toml"


@dataclass(frozen=True)
class Answered:
    """A stage answered from its stored result before submission (``tasks.caching.stored_result``): no task run."""

    value: Any


def read_artifact_file(model: type, path: Path) -> Any:
    """A strict read of one JSON artifact under the input size cap; a fault or refusal names the file."""
    return read_artifact(model, scan_json(read_suite_bytes(path), str(path)), str(path))


def corpus_digest_of(directory: Path) -> str:
    """The directory digest of a suite's evaluation corpus (``evalquality_core.suite.load.CORPUS_MEMBERS``; ``eval-quality suite digest``)."""
    return suite_corpus_digest(directory)


def policy_of(suite: Suite, suites_dir: Path) -> Any:
    """The suite's own ``scoring-policy.json``, else the corpus-wide one beside the suites folder."""
    path = suite_file_or_fallback(suite.directory, POLICY_FILE, suites_dir.parent)
    if path is None:
        raise ValueError(
            f"no scoring policy: put one at {suite.directory / POLICY_FILE} (the suite's own; "
            f"`eval-quality suite init` writes one) or a corpus-wide one at {suites_dir.parent / POLICY_FILE}"
        )
    return read_artifact_file(ScoringPolicy, path)


def floors_of(directory: Path) -> dict[str, float]:
    """The suite's strength floors: ``suite.toml``'s ``[floors]`` table (``defect``, ``gameability``,
    ``zero-action``; numbers in [0, 1]), ``{}`` when the suite declares none (every decision ``undeclared``).

    A malformed table raises ``RuntimeFault`` naming ``suite.toml`` and the key, so the suite is reported
    as could-not-run (exit 2) rather than measured against a floor nobody meant.
    """
    path = directory / SUITE_SETTINGS_FILE
    if not path.is_file():
        return {}
    settings = read_suite_toml(path)  # parsed once per run, nesting bounded; a refusal is a SuiteError
    return check_floors(settings.get("floors", {}), f"{path}[floors]")


@dataclass(frozen=True)
class TrialSet:
    """One probe's stored trials: the sealed run records in trial order, and the first trial's
    isolation manifest and evaluator configuration (one of each per call, as the ``score`` CLI takes)."""

    records: tuple[Any, ...]
    isolation_manifest: Any | None
    evaluator_configuration: Any | None


def load_trials(directory: Path) -> TrialSet:
    """``trials/<probe>/trial-N/`` in N order; ``ValueError`` when there is none."""
    trial_dirs = sorted(
        (p for p in directory.glob("trial-*") if p.is_dir() and p.name[6:].isdigit()), key=lambda p: int(p.name[6:])
    )
    if not trial_dirs:
        raise ValueError(f"{directory}: no stored trial (trial-N/sealed-run-record.json)")
    records = tuple(read_artifact_file(SealedRunRecord, d / "sealed-run-record.json") for d in trial_dirs)
    first = trial_dirs[0]
    manifest = first / "isolation-manifest.json"
    configuration = first / "evaluator-configuration.json"
    return TrialSet(
        records,
        read_artifact_file(IsolationManifest, manifest) if manifest.is_file() else None,
        read_artifact_file(EvaluatorConfiguration, configuration) if configuration.is_file() else None,
    )


@dataclass(frozen=True)
class PreparedSuite:
    """A suite's compiled contract, sealed brief, scoring policy, corpus digest and floors."""

    contract: Any
    brief: Any
    policy: Any
    corpus_digest: str
    floors: Mapping[str, float]
    #: The compiled contract's wire JSON: what the ``score`` tasks receive (on any task runner).
    contract_wire: Mapping[str, Any] = field(default_factory=dict)


def prepare_suite(suite: Suite, suites_root: Path) -> PreparedSuite:
    """Compile and seal the contract (cached tasks), find the policy and floors, digest the evaluation corpus.

    The strength flow's task runs carry no tags (the flow run carries ``suite:<name>``): Prefect spends a
    concurrency-slot round trip on every tagged task run, as the pre-flight flow found too.
    """
    floors = floors_of(suite.directory)
    # An answered stage is read back without a task run (``stored_result``: same key, same checks).
    # Looked up through the very task copy that would run (its storage is where it would look).
    compiling = compile_task.with_options(task_run_name=f"compile/{suite.name}")
    hit, contract = stored_result(compiling, authored=suite.contract)
    if not hit:
        contract = compiling(suite.contract)
    sealing = seal_task.with_options(task_run_name=f"seal/{suite.name}")
    hit, brief = stored_result(sealing, contract=contract)
    if not hit:
        # quote(): Prefect must not walk the compiled contract's fields; ``dict(model)`` calls a
        # field named ``keys`` (a reference set's) and fails. The task still receives the model
        # (a direct call runs in this process: nothing is pickled).
        brief = sealing(quote(contract))
    return PreparedSuite(
        contract, brief, policy_of(suite, suites_root), corpus_digest_of(suite.directory), floors, to_wire(contract)
    )


@dataclass(frozen=True)
class TrialContext:
    """What every live trial of a suite shares: the evaluator command, the contract and sealed brief (wire)
    and the digests a trial key holds, and the policy's ``minimumTrialCount`` (trials per probe)."""

    command: Any
    contract: Mapping[str, Any]
    brief: Mapping[str, Any]
    brief_digest: str
    contract_digest: str
    choices_digest: str
    minimum: int


def trial_context(suite: Suite, prepared: PreparedSuite) -> TrialContext:
    """The suite's :class:`TrialContext` (its ``suite.toml`` ``[evaluator]``, ``evaluator.json``, the policy)."""
    from evalquality_core.suite.evaluator_protocol import evaluator_command_of

    settings_path = suite.directory / SUITE_SETTINGS_FILE
    settings = read_suite_toml(settings_path) if settings_path.is_file() else {}
    command = evaluator_command_of(settings, str(settings_path))
    contract = dict(suite.contract)
    brief = to_wire(prepared.brief)
    choices = suite.directory / "evaluator.json"
    return TrialContext(
        command, contract, brief, digest_artifact(brief), digest_artifact(contract),
        digest_bytes(read_suite_bytes(choices) if choices.is_file() else b""),
        int(to_wire(prepared.policy)["minimumTrialCount"]),
    )


def write_sealed_trial(target: Path, trial: SealedTrial) -> None:
    """Write one sealed trial's folder: actions, isolation manifest, evaluator configuration, run record."""
    from evalquality_core.canonical import serialize_artifact

    target.mkdir(parents=True, exist_ok=True)
    write_atomically(target / "actions.jsonl", trial.actions)
    write_atomically(target / "isolation-manifest.json", serialize_artifact(trial.isolation_manifest))
    write_artifact(target / "evaluator-configuration.json", trial.evaluator_configuration)
    write_artifact(target / "sealed-run-record.json", trial.record)


def work_digest_of(directory: Path) -> str:
    """The digest of the staged ``work/`` (the fixtures), computed in place without staging."""
    return staged_digests(directory, [None])[None][1]


__all__ = [
    "POLICY_FILE",
    "SUITE_SETTINGS_FILE",
    "Answered",
    "PreparedSuite",
    "TrialContext",
    "TrialSet",
    "corpus_digest_of",
    "floors_of",
    "load_trials",
    "policy_of",
    "prepare_suite",
    "read_artifact_file",
    "trial_context",
    "work_digest_of",
    "write_sealed_trial",
]
