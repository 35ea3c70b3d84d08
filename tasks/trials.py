"""Live trials as Prefect work: ``run-trial`` (one per suite, probe, trial index) and ``seal-record``.

``run-trial`` (run name ``trial/<suite>/<probe>/<n>``) stages a fresh workspace (the probe's mutation for a
defect or gameability probe, the clean system for a control, a generated mutant's edit for a sampled
mutant, where ``<probe>`` is the mutant id), drives the contract's interaction plan
through our command-line adapter (``evalquality_core.suite.evaluator.run_staged``), hands the sealed brief
and the observations to the suite's evaluator command (``evalquality_core.suite.evaluator_protocol``) and
returns its judgement. It is cached by :func:`trial_key`, the digests of everything that decides a trial:
the sealed brief, the contract, the staged system with its mutation and the fixtures, the evaluator's
choices, the evaluator command's identity (argv, environment keys, budgets, model), the trial index and
the tool version. A fault (the evaluator timed out, refused, answered malformed JSON, overspent; the
system could not be driven) ends the task Failed with its reason and is never cached; Prefect persists a
trial's result as soon as it completes, so a killed night resumes without re-running answered trials.

``seal-record`` (run name ``seal/<suite>/<probe>/<n>``) builds the ``SealedRunRecord``, its isolation
manifest, the evaluator configuration and the actions file from a trial's answer, every digest ours, so
ingest agrees. It is pure and cheap, so it is not cached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.states import Failed

from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.canonical import canonical_bytes, digest_bytes
from evalquality_core.canonical.digest import digest_composite
from evalquality_core.faults import EvalQualityFault
from evalquality_core.printable import printable
from evalquality_core.suite.evaluator_protocol import (
    PROTOCOL,
    EvaluatorCommand,
    TrialFault,
    evaluator_identity_digest,
    request_of,
    run_evaluator,
)
from tasks.caching import StageDigest, stage_cache, verified_stage
from tasks.preflight import tool_version

#: Version of the trial stage's cached results; bump when a trial's answer changes shape or meaning.
TRIALS_CODE_VERSION = "trials-v2"


def trial_key(
    *, brief_digest: str, contract_digest: str, staged_digest: str, choices_digest: str, command: EvaluatorCommand,
    probe_id: str, trial_index: int,
) -> str:
    """The digest of everything that decides one trial (module docstring)."""
    return digest_composite(
        {
            "brief": brief_digest,
            "contract": contract_digest,
            "staged": staged_digest,
            "choices": choices_digest,
            "evaluator": evaluator_identity_digest(command),
            "probe": probe_id,
            "trialIndex": str(trial_index),
            "tool": tool_version(),
        }
    )


@dataclass(frozen=True, eq=False)
class TrialJob:
    """What ``run-trial`` needs: the suite folder, the contract and brief (wire), the command, and the key;
    ``mutation`` stages a generated mutant (issue 18) instead of the probe's declared mutation."""

    suite_dir: str
    contract: Mapping[str, Any]
    brief: Mapping[str, Any]
    command: EvaluatorCommand
    key: str
    mutation: Any | None = None


@dataclass(frozen=True)
class TrialAnswer:
    """One answered trial: what was sent and observed, and the evaluator's judgement and spend."""

    arm: str
    requests: list[dict[str, Any]]
    observations: list[dict[str, Any]]
    dispositions: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    recommendation: str
    tool_calls: int
    evaluator_seconds: float


@dataclass(frozen=True)
class SealedTrial:
    """A trial sealed for scoring: the record, manifest and configuration (wire) and the actions file's bytes."""

    record: Mapping[str, Any]
    isolation_manifest: Mapping[str, Any]
    evaluator_configuration: Mapping[str, Any]
    actions: bytes


def _drive_and_judge(probe_id: str, trial_index: int, job: TrialJob) -> TrialAnswer:
    from evalquality_core.suite.evaluator import run_staged
    from evalquality_core.suite.load import SuiteError, load_suite, mutation_for_probe

    try:
        suite = load_suite(Path(job.suite_dir))
        mutation = job.mutation if job.mutation is not None else mutation_for_probe(suite.root, probe_id)
        requests, observations, _ = run_staged(suite, mutation)
    except (SuiteError, EvalQualityFault) as problem:
        raise TrialFault("port", f"the system could not be driven: {problem}") from None
    judgement = run_evaluator(job.command, request_of(job.command, job.brief, observations, job.contract, trial_index))
    return TrialAnswer(
        "clean" if mutation is None else "mutated",
        requests,
        observations,
        judgement.dispositions,
        judgement.findings,
        judgement.recommendation,
        judgement.tool_calls,
        judgement.seconds,
    )


@dataclass(frozen=True)
class TrialFaultNote:
    """Why a trial faulted (a :class:`TrialFault`'s reason and detail): the data of its ``Failed`` state."""

    reason: str
    detail: str


@verified_stage
@task(
    name="run-trial",
    task_run_name="trial/{suite}/{probe_id}/{trial_index}",
    **{**stage_cache("key"), "cache_policy": StageDigest(inputs=("key",), version=TRIALS_CODE_VERSION)},
)
def run_trial(suite: str, probe_id: str, trial_index: int, key: str, job: TrialJob) -> TrialAnswer | State:
    """One live trial (module docstring); a :class:`TrialFault` ends the run Failed with a
    :class:`TrialFaultNote` (never cached). Answers are stored verified (``tasks/caching.py``), like every
    digest-cached stage, so the flow can look an answered trial up before submitting it."""
    try:
        return _drive_and_judge(probe_id, trial_index, job)
    except TrialFault as fault:
        return Failed(message=printable(f"trial fault: {fault.reason}: {fault.detail}"), data=TrialFaultNote(fault.reason, fault.detail))


def evaluator_configuration_of(
    command: EvaluatorCommand, contract: Mapping[str, Any], brief_digest: str
) -> dict[str, Any]:
    """The evaluator configuration a live trial declares: the command's identity, every operation the
    contract permits (cli, api and mcp alike, named as the stored trials name them) and its budgets."""
    from evalquality_core.suite.evaluator import tool_inventory

    value = {
        "schemaVersion": EvaluatorConfiguration.WRITTEN_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "sealedBriefDigest": brief_digest,
        "evaluatorIdentity": "command:" + " ".join(command.argv),
        "modelSnapshot": command.model,
        "systemPromptDigest": digest_bytes(canonical_bytes(command.identity())),
        "decodingParameters": {},
        "toolInventory": tool_inventory(contract),
        "permissionInventory": [],
        "budgets": dict(contract["budgets"]),
        "seed": None,
        "judgeConfiguration": None,
    }
    return to_wire(read_artifact(EvaluatorConfiguration, value, "EvaluatorConfiguration"))  # type: ignore[no-any-return]


@task(name="seal-record", task_run_name="seal/{suite}/{probe_id}/{trial_index}", cache_policy=NO_CACHE, persist_result=False)
def seal_record(
    suite: str, probe_id: str, trial_index: int, answer: TrialAnswer, contract: Mapping[str, Any],
    brief_digest: str, command: EvaluatorCommand, trial_folder: str,
) -> SealedTrial:
    """Seal one answered trial (``evalquality_core.suite.evaluator.seal_trial``, as the stored trials are
    sealed); references name files under ``trial_folder`` (relative to the suite's output)."""
    from evalquality_core.suite.evaluator import seal_trial

    configuration = evaluator_configuration_of(command, contract, brief_digest)
    sealed = seal_trial(
        contract=contract,
        configuration=configuration,
        run_id=f"{suite}-{probe_id.lower()}",
        arm=answer.arm,
        trial_index=trial_index,
        requests=answer.requests,
        observations=answer.observations,
        dispositions=answer.dispositions,
        # The protocol's findings name no probe (the evaluator is never told which one is planted).
        findings=[{**finding, "probeId": probe_id} for finding in answer.findings],
        recommendation=answer.recommendation,
        folder=trial_folder,
        evaluator_tool_calls=answer.tool_calls,
    )
    return SealedTrial(sealed.record, sealed.manifest, configuration, sealed.actions)


def protocol_version() -> str:
    """The evaluator protocol version trials are run under (recorded in the cost record)."""
    return PROTOCOL


def trial_spend(answers: Sequence[tuple[TrialAnswer, bool]]) -> dict[str, Any]:
    """Trial spend for ``preflight-cost.json``: trials run vs cached, evaluator seconds and tool calls of those run."""
    ran = [answer for answer, cached in answers if not cached]
    return {
        "trialsRun": len(ran),
        "trialsCached": len(answers) - len(ran),
        "evaluatorSeconds": f"{sum(a.evaluator_seconds for a in ran):.3f}",
        "evaluatorToolCalls": sum(a.tool_calls for a in ran),
    }
