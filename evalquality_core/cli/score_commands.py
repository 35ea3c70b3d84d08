"""``eval-quality score`` and ``eval-quality aggregate-strength`` (scoring.md §9.2, §5.5; preflight-adapter.md §7).

``score``: read every input (stamp before shape), validate ``--designated-oracle`` (64), resolve and
verify private references under ``--corpus-root`` (``digest-mismatch`` 5; ``--corpus-root`` missing when
needed 64), then one call, ``pipeline.run_score``. Qualification failures go to stderr on every rung.
The Invalid rung exits 3, writes NOTHING, and prints one ``eval-quality: invalid: <reason>`` line per
basis entry; otherwise the artifact is written and the exit is the ladder's, except a promotable
CONCERNS under ``--strict`` exits 1 (the artifact still says 0).
``aggregate-strength``: one call, ``aggregate_strength``; exits 0 whatever the floor decisions, 4 when
refused, 5 for malformed floors.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import click

from evalquality_core.adapters.local_corpus import LocalCorpusAdapter
from evalquality_core.artifacts.base import check_stamp, read_artifact, to_wire
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.references import PrivateArtifactManifest
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.scoring_policy import ScoringPolicy
from evalquality_core.cli.exit_codes import CommandOutcome, exit_code_of
from evalquality_core.cli.flags import FlagGrammarCommand
from evalquality_core.cli.io import (
    UsageError,
    check_out_not_input,
    out_path,
    read_json,
    write_artifact,
)
from evalquality_core.cli.main import cli, package_version, say
from evalquality_core.faults import RuntimeFault
from evalquality_core.pipeline import CorpusRootRequired, private_references, run_score
from evalquality_core.registries import DIGEST_PATTERN, EXIT_INVALID
from evalquality_core.score.score import DesignatedOracleError, designate_oracle


def probe_root(value: Any) -> str:
    """``Probe[probeId=P-…]`` when the document names its probe, else ``Probe`` (a fault path root)."""
    probe_id = value.get("probeId") if isinstance(value, dict) else None
    return f"Probe[probeId={probe_id}]" if isinstance(probe_id, str) else "Probe"


def check_stamps_first(inputs: Sequence[tuple[type[Any], Any, str]]) -> None:
    """7.0.0: the stamp of every given input, in order, before any shape (``None`` = not given).

    A number we do not read is ``schema-version-mismatch`` at ``<root>.schemaVersion`` (e.g.
    ``IsolationManifest.schemaVersion``, ``Probe[probeId=P-001].schemaVersion``); a missing or
    non-numeric stamp is ``schema-parse-failure`` at the root.
    """
    for model, value, root in inputs:
        if value is not None:
            check_stamp(model, value, root)


def _one(flag: str, values: Sequence[str]) -> str | None:
    """A value flag given once, or repeated with the identical value (§7.2 flag grammar)."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) > 1:
        raise UsageError(f'--{flag} given twice with different values, "{distinct[0]}" and "{distinct[1]}"')
    for value in distinct:
        if value == "":
            raise UsageError(f"--{flag} needs a non-empty value")
    return distinct[0] if distinct else None


def _require(command: str, given: dict[str, Any]) -> None:
    missing = [f"--{flag}" for flag, value in given.items() if not value]
    if missing:
        raise UsageError(f"{command} requires {', '.join(missing)}")


def _check_inputs(named: Sequence[tuple[str, str | None]], target: Any) -> None:
    """At most one input reads stdin; ``--out`` never resolves to an input (§7.3)."""
    dashes = [flag for flag, value in named if value == "-"]
    if len(dashes) > 1:
        raise UsageError(f'only one input may read stdin, but --{dashes[0]} and --{dashes[1]} both name "-"')
    for flag, value in named:
        check_out_not_input(target, {flag: value})


_MANY = {"multiple": True, "default": ()}


@cli.command("score", cls=FlagGrammarCommand)
@click.option("--record", "records", multiple=True, help="Sealed run record (repeat once per trial).")
@click.option("--contract", **_MANY, help="Compiled eval contract.")
@click.option("--probe", **_MANY, help="The probe scored.")
@click.option("--preflight-verdict", "preflight_verdict", **_MANY, help="The run's pre-flight verdict.")
@click.option("--policy", **_MANY, help="Scoring policy.")
@click.option("--corpus-digest", "corpus_digest", **_MANY, help="Caller-attested corpus digest (sha256:…).")
@click.option("--isolation-manifest", "isolation_manifest", **_MANY, help="Isolation manifest (absent → Invalid).")
@click.option("--evaluator-configuration", "evaluator_configuration", **_MANY, help="Evaluator configuration.")
@click.option("--private-manifest", "private_manifest", **_MANY, help="Private artifact manifest.")
@click.option("--corpus-root", "corpus_root", **_MANY, help="Directory private references resolve under.")
@click.option("--designated-oracle", "designated_oracle", **_MANY, help="The AD-40 designated oracle (O-nnn).")
@click.option("--out", **_MANY, help="File (*.json) or directory for evidence-artifact.json; absent → stdout.")
@click.option("--strict", is_flag=True, default=False, help="Exit 1 for a promotable CONCERNS.")
def score_command(
    records: tuple[str, ...],
    contract: tuple[str, ...],
    probe: tuple[str, ...],
    preflight_verdict: tuple[str, ...],
    policy: tuple[str, ...],
    corpus_digest: tuple[str, ...],
    isolation_manifest: tuple[str, ...],
    evaluator_configuration: tuple[str, ...],
    private_manifest: tuple[str, ...],
    corpus_root: tuple[str, ...],
    designated_oracle: tuple[str, ...],
    out: tuple[str, ...],
    strict: bool,
) -> None:
    """Score sealed run records (one per trial) of one probe into an EvidenceArtifact."""
    flags = {
        "contract": _one("contract", contract),
        "probe": _one("probe", probe),
        "preflight-verdict": _one("preflight-verdict", preflight_verdict),
        "policy": _one("policy", policy),
        "corpus-digest": _one("corpus-digest", corpus_digest),
    }
    if any(r == "" for r in records):
        raise UsageError("--record needs a non-empty value")
    _require("score", {"record": records, **flags})
    manifest_path = _one("isolation-manifest", isolation_manifest)
    configuration_path = _one("evaluator-configuration", evaluator_configuration)
    private_path = _one("private-manifest", private_manifest)
    root = _one("corpus-root", corpus_root)
    if len(designated_oracle) > 1:  # §7.2: the designated oracle may be given once only
        raise UsageError("--designated-oracle given twice; it names one oracle")
    designated = _one("designated-oracle", designated_oracle)
    target = out_path(_one("out", out), "evidence-artifact")
    named: list[tuple[str, str | None]] = [("record", r) for r in records] + list(flags.items()) + [
        ("isolation-manifest", manifest_path),
        ("evaluator-configuration", configuration_path),
        ("private-manifest", private_path),
    ]
    _check_inputs(named, target)

    # 7.0.0: every input's stamp is checked before any input's shape.
    policy_value = read_json("policy", flags["policy"], "ScoringPolicy")
    contract_value = read_json("contract", flags["contract"], "EvalContract")
    probe_value = read_json("probe", flags["probe"], "Probe")
    verdict_value = read_json("preflight-verdict", flags["preflight-verdict"], "PreflightVerdict")
    record_values = [read_json("record", path, "SealedRunRecord") for path in records]
    manifest_value = None if manifest_path is None else read_json("isolation-manifest", manifest_path, "IsolationManifest")
    configuration_value = (
        None
        if configuration_path is None
        else read_json("evaluator-configuration", configuration_path, "EvaluatorConfiguration")
    )
    private_value = (
        None if private_path is None else read_json("private-manifest", private_path, "PrivateArtifactManifest")
    )
    inputs: list[tuple[type[Any], Any, str]] = [
        (EvalContract, contract_value, "EvalContract"),
        (Probe, probe_value, probe_root(probe_value)),
        *[(SealedRunRecord, value, f"SealedRunRecord[{i}]") for i, value in enumerate(record_values)],
        (PreflightVerdict, verdict_value, "PreflightVerdict"),
        (ScoringPolicy, policy_value, "ScoringPolicy"),
        (IsolationManifest, manifest_value, "IsolationManifest"),
        (EvaluatorConfiguration, configuration_value, "EvaluatorConfiguration"),
        (PrivateArtifactManifest, private_value, "PrivateArtifactManifest"),
    ]
    check_stamps_first(inputs)
    contract_model = read_artifact(EvalContract, contract_value, "EvalContract")
    probe_model = read_artifact(Probe, probe_value, "Probe")
    verdict_model = read_artifact(PreflightVerdict, verdict_value, "PreflightVerdict")
    policy_model = read_artifact(ScoringPolicy, policy_value, "ScoringPolicy")
    record_models = [
        read_artifact(SealedRunRecord, value, f"SealedRunRecord[{i}]") for i, value in enumerate(record_values)
    ]
    manifest_model = None if manifest_value is None else read_artifact(IsolationManifest, manifest_value)
    configuration_model = (
        None if configuration_value is None else read_artifact(EvaluatorConfiguration, configuration_value)
    )
    private_model = None if private_value is None else read_artifact(PrivateArtifactManifest, private_value)
    digest = flags["corpus-digest"]
    assert digest is not None
    if not re.match(DIGEST_PATTERN, digest):
        raise RuntimeFault("schema-parse-failure", "corpusDigest", f'--corpus-digest "{digest}" is not a sha256 digest')
    try:
        designate_oracle(contract_model, probe_model, designated)
    except DesignatedOracleError as exc:
        raise UsageError(str(exc)) from None
    needed = private_references(record_models, private_model)
    if needed and root is None:
        raise UsageError(f'--corpus-root is required to resolve private reference "{needed[0][0]}"')
    try:
        run = run_score(
            contract_model,
            probe_model,
            record_models,
            policy_model,
            verdict_model,
            corpus_digest=digest,
            isolation_manifest=manifest_model,
            evaluator_configuration=configuration_model,
            private_manifest=private_model,
            corpus=None if root is None else LocalCorpusAdapter(root),
            designated_oracle=designated,
        )
    except CorpusRootRequired as exc:  # unreachable after the check above; kept as a usage error
        raise UsageError(str(exc)) from None
    for failure in run.qualification.failures:
        say(f"{failure.code}: {failure.artifact_path}: {failure.detail}")
    if run.artifact is None:
        for reason in run.ladder.basis:
            say(f"invalid: {reason}")
        raise click.exceptions.Exit(EXIT_INVALID)
    write_artifact(to_wire(run.artifact), target)
    code = exit_code_of(
        CommandOutcome(
            kind="verdict",
            verdict=run.ladder.verdict,
            exit_code=run.ladder.exit_code,
            strict_promotable=run.ladder.strict_promotable,
        ),
        strict=strict,
    )
    if code:
        raise click.exceptions.Exit(code)


@cli.command("aggregate-strength", cls=FlagGrammarCommand)
@click.option("--evidence", "evidence", multiple=True, help="Evidence artifact (repeat once per probe).")
@click.option("--floors", **_MANY, help='Per-class floors, e.g. {"defect": 0.8}.')
@click.option("--policy", **_MANY, help="The scoring policy the run was scored under.")
@click.option("--out", **_MANY, help="File (*.json) or directory for strength-aggregate.json; absent → stdout.")
@click.option("--strict", is_flag=True, default=False, help="Accepted; changes nothing here.")
def aggregate_strength_command(
    evidence: tuple[str, ...], floors: tuple[str, ...], policy: tuple[str, ...], out: tuple[str, ...], strict: bool
) -> None:
    """Aggregate one run's per-probe evidence artifacts into a StrengthAggregate (exit 0; 4 if refused)."""
    from evalquality_core.aggregate.aggregate import aggregate_strength, check_floors
    from evalquality_core.artifacts.evidence import EvidenceArtifact

    floors_path, policy_path = _one("floors", floors), _one("policy", policy)
    if any(e == "" for e in evidence):
        raise UsageError("--evidence needs a non-empty value")
    _require("aggregate-strength", {"evidence": evidence, "floors": floors_path, "policy": policy_path})
    target = out_path(_one("out", out), "strength-aggregate")
    _check_inputs([("evidence", e) for e in evidence] + [("floors", floors_path), ("policy", policy_path)], target)
    floors_value = read_json("floors", floors_path, "StrengthFloors")
    policy_value = read_json("policy", policy_path, "ScoringPolicy")
    evidence_values = [read_json("evidence", path, "EvidenceArtifact") for path in evidence]
    # 7.0.0: every input's stamp is checked before any input's shape.
    check_stamps_first(
        [(ScoringPolicy, policy_value, "ScoringPolicy")]
        + [(EvidenceArtifact, value, f"EvidenceArtifact[{i}]") for i, value in enumerate(evidence_values)]
    )
    floor_values = check_floors(floors_value)
    policy_model = read_artifact(ScoringPolicy, policy_value, "ScoringPolicy")
    artifacts = [read_artifact(EvidenceArtifact, value, f"EvidenceArtifact[{i}]") for i, value in enumerate(evidence_values)]
    aggregate = aggregate_strength(artifacts, floor_values, policy_model, engine_version=package_version())
    write_artifact(to_wire(aggregate), target)
