"""The reference evaluator: a deterministic script standing where an evaluating agent would.

It runs one probe's trial the way a harness drives an agent (harness.md A.4, A.7):

1. **harness half** — stage a fresh workspace (clean, or with the probe's mutation applied) and send
   every step of the contract's interaction plan through OUR command-line adapter
   (``evalquality_core.adapters.command_line``), in plan order, filling each open value (a matcher)
   from the suite's ``evaluator.json``. Each answer becomes a sealed-run-record observation.
2. **evaluator half** (:func:`judge`) — sees only the contract and those observations (never the
   probe's mutation, the system's source or the fixtures' ground truth: the seven forbidden inputs
   stay withheld). It resolves every oracle's check with our evaluator
   (``evalquality_core.evaluate``) and reports a disposition per oracle and a defect finding per
   violated oracle, citing the observations of the steps the oracle addresses and quoting them
   verbatim.
3. **sealing** — the record, its isolation manifest and the evaluator configuration are written
   beside each other under ``trials/<probe>/trial-<n>/``, every digest computed with our canonical
   digest functions so ingest agrees. A real pre-flight of the probe (one fresh workspace per leg,
   :func:`evalquality_core.suite.staging.stage_for_leg`) is stored as ``trials/<probe>/preflight-verdict.json``.

The reference evaluator measures no time and spends no tokens: ``resourceUse`` records the commands
it ran, and zero for wall clock, tokens and cost, so regenerated trials are byte-identical.

Every artifact reference a trial stores is relative to the suite folder (``trials/P-001/trial-1/actions.jsonl``).
``eval-quality suite trials DIR`` rewrites a suite's trials (:func:`regenerate`); ``python -m
corpus.tools.evaluator --regenerate`` is the same for our corpus.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalquality_core.adapters.command_line import CommandLineAdapter
from evalquality_core.artifacts.base import read_artifact, to_wire
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.canonical import canonical_bytes, digest_artifact, digest_bytes, serialize_artifact
from evalquality_core.evaluate import resolution_context, resolve_check, select_for_oracle, select_plan
from evalquality_core.evaluate.pointers import (
    ABSENT,
    as_wire,
    channel_root,
    parse_evidence_pointer,
    walk,
)
from evalquality_core.pipeline import run_preflight
from evalquality_core.registries import FORBIDDEN_INPUT_FLOOR
from evalquality_core.suite.load import (
    TOOL_PROBLEMS,
    EvaluatorError,
    Mutation,
    Suite,
    adapter_for,
    load_mutations,
    load_suite,
    mutation_for_probe,
    problem_line,
    public_reference,
    read_suite_settings,
)
from evalquality_core.suite.staging import stage_for_leg, stage_workspace

#: How many trials the corpus stores per probe (the scoring policy's minimum).
DEFAULT_TRIALS = 3
#: The regex step budget the evaluator resolves checks under (the corpus policy's value).
REGEX_STEP_BUDGET = 1_000_000
#: The evaluator's fixed instructions; its digest stands for the system prompt an agent would get.
INSTRUCTIONS = (
    "corpus reference evaluator: run the interaction plan once in order, resolve every oracle's check "
    "over the observations, report held or violated, and cite and quote the observations behind a violation."
)
MODEL_SNAPSHOT = "corpus-reference-evaluator-1"
EVALUATOR_IDENTITY = "opaque:corpus-reference-evaluator"
_CHANNELS = ("path", "query", "header", "body", "argument", "option", "environment", "stdin", "arguments")


def _operations(contract: Mapping[str, Any]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            found[operation["operationId"]] = (interface["logicalId"], operation)
    return found


def _bound_value(suite_name: str, step: Mapping[str, Any], channel: str, key: str, binding: Mapping[str, Any], choices: Any) -> Any:
    if "literal" in binding:
        return binding["literal"]
    if "matcher" in binding:
        try:
            return choices[step["stepId"]][channel][key]
        except (KeyError, TypeError):
            raise EvaluatorError(
                f'{suite_name}: step "{step["stepId"]}" leaves {channel}.{key} open ({binding["matcher"]}) '
                "and evaluator.json chooses no value for it"
            ) from None
    raise EvaluatorError(f'{suite_name}: step "{step["stepId"]}" binds {channel}.{key} in a form this evaluator does not send')


def requests_for_plan(suite: Suite) -> list[tuple[Mapping[str, Any], dict[str, Any]]]:
    """One cli request per plan step, in plan order: ``[(step, request wire), ...]``."""
    operations = _operations(suite.contract)
    seen: set[str] = set()
    out: list[tuple[Mapping[str, Any], dict[str, Any]]] = []
    for number, step in enumerate(suite.contract["interactionPlan"], start=1):
        if step["after"] is not None and step["after"] not in seen:
            raise EvaluatorError(f'{suite.name}: step "{step["stepId"]}" must come after "{step["after"]}" in plan order')
        seen.add(step["stepId"])
        interface_id, operation = operations[step["operationId"]]
        channels: dict[str, Any] = {"argument": {}, "option": {}, "environment": {}}
        stdin: dict[str, Any] = {}
        for channel in ("argument", "option", "environment", "stdin"):
            for key, binding in (step["inputBinding"].get(channel) or {}).items():
                value = _bound_value(suite.name, step, channel, key, binding, suite.choices)
                (stdin if channel == "stdin" else channels[channel])[key] = value
        channels["stdin"] = {"kind": "json", "value": stdin} if stdin else {"kind": "absent"}
        request = {
            "kind": "cli",
            "probeId": f"obs-{number:03d}",
            "interfaceId": interface_id,
            "operationId": step["operationId"],
            "executable": operation["invocation"]["executable"],
            "subcommandPath": list(operation["invocation"]["subcommandPath"]),
            "channels": channels,
        }
        out.append((step, request))
    return out


def _observation(number: int, step: Mapping[str, Any], request: Mapping[str, Any], answer: Mapping[str, Any], baseline: bool) -> dict[str, Any]:
    channels = request["channels"]
    call_inputs: dict[str, Any] = {name: None for name in _CHANNELS}
    for name in ("argument", "option", "environment"):
        call_inputs[name] = dict(channels[name]) or None
    call_inputs["stdin"] = channels["stdin"]["value"] if channels["stdin"]["kind"] == "json" else None
    call_inputs["bodyEncoding"] = None  # record 8 (6.0.0): no raw body on a command call
    return {
        "observationId": f"obs-{number:03d}",
        "sequence": number,
        "interfaceId": request["interfaceId"],  # record 7 (5.0.0): the (interfaceId, operationId) pair
        "operationId": step["operationId"],
        "provenance": "baseline" if baseline else "evaluator-chosen",
        "principal": None,
        "callInputs": call_inputs,
        "responseBody": None,
        "responseHeaders": None,
        "responseStatus": None,
        "stdout": answer["stdout"],
        "stderr": answer["stderr"],
        "exitCode": answer["exitCode"],
        "artifacts": dict(answer["artifacts"]),
    }


def run_plan(suite: Suite, workspace_root: Path, adapter: CommandLineAdapter | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The harness half: send every plan step through our adapter in ``workspace_root``.

    Returns ``(requests, observations)``; observations are in the sealed-run-record shape.
    """
    adapter = adapter or adapter_for(suite)
    requests, observations = [], []
    for number, (step, request) in enumerate(requests_for_plan(suite), start=1):
        answer = as_wire(adapter.probe(request, workdir=workspace_root))
        requests.append(request)
        observations.append(_observation(number, step, request, answer, step["stepId"] in suite.baseline_steps))
    return requests, observations


def run_staged(
    suite: Suite, mutation: Mutation | None, adapter: CommandLineAdapter | None = None, *, system_source: Path | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Stage a fresh workspace (clean or mutated), run the plan in it, remove it.

    ``system_source`` stages a given copy of the system instead of the suite's own (the generator's
    disposable copy). Returns ``(requests, observations, staged system digest)``.
    """
    scratch = Path(tempfile.mkdtemp(prefix=f"eq-{suite.name}-"))
    try:
        workspace = stage_workspace(suite.root, scratch / "workspace", mutation, system_source=system_source)
        requests, observations = run_plan(suite, workspace.root, adapter)
        return requests, observations, workspace.system_digest
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------- the evaluator half


def _projection(observation: Mapping[str, Any], channel: str) -> str | None:
    """The text a quote on ``channel`` is searched in (scoring.md §7.3)."""
    if channel == "exit-code":
        return None if observation["exitCode"] is None else str(observation["exitCode"])
    if channel in ("stdout", "stderr"):
        body = observation[channel]
        if body["kind"] == "text":
            return body["value"]
        if body["kind"] == "json":
            return canonical_bytes(body["value"]).decode("utf-8")
        return None
    if channel == "call-inputs":
        return canonical_bytes(observation["callInputs"]).decode("utf-8")
    return None


def _quotes_for(observation: Mapping[str, Any], pointers: Sequence[str]) -> list[dict[str, Any]]:
    """Verbatim quotes from one cited observation: the addressed values on a quotable channel, else its exit code."""
    quotes: list[dict[str, Any]] = []
    for pointer in pointers:
        parsed = parse_evidence_pointer(pointer)
        if parsed is None or parsed.channel not in ("stdout", "stderr", "call-inputs", "exit-code"):
            continue
        projection = _projection(observation, parsed.channel)
        if projection is None:
            continue
        if parsed.channel == "exit-code":
            candidates = [projection]
        else:
            root = channel_root(observation, parsed.channel, parsed.sub)
            walked = walk(root, parsed.tokens)
            if walked is ABSENT:
                continue
            value = as_wire(walked)
            text = canonical_bytes(value).decode("utf-8")
            candidates = [f"{canonical_bytes(parsed.tokens[-1]).decode('utf-8')}:{text}"] if parsed.tokens else []
            candidates.append(text)
        for quote in candidates:
            if quote and quote in projection:
                entry = {"quote": quote, "channel": parsed.channel, "artifactId": None}
                if entry not in quotes:
                    quotes.append(entry)
                break
    if not quotes and observation["exitCode"] is not None:
        quotes.append({"quote": str(observation["exitCode"]), "channel": "exit-code", "artifactId": None})
    return quotes


def _pointers(node: Any, out: list[str]) -> list[str]:
    if isinstance(node, Mapping):
        if isinstance(node.get("pointer"), str) and node["pointer"].startswith("/interactions/"):
            out.append(node["pointer"])
        for value in node.values():
            _pointers(value, out)
    elif isinstance(node, list):
        for value in node:
            _pointers(value, out)
    return out


@dataclass(frozen=True)
class Judgement:
    """What the evaluator reports for one trial."""

    dispositions: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    recommendation: str
    resolutions: dict[str, str]


def judge(contract: Mapping[str, Any], observations: Sequence[Mapping[str, Any]], probe_id: str) -> Judgement:
    """The evaluator half: dispositions and findings from the contract and the observations alone."""
    plan = select_plan(contract, observations)
    by_id = {observation["observationId"]: observation for observation in observations}
    behaviour_of = {oracle_id: behaviour for behaviour in contract["behaviors"] for oracle_id in behaviour["oracles"]}
    dispositions, findings, resolutions = [], [], {}
    for oracle in contract["oracles"]:
        oracle_id = oracle["id"]
        context = resolution_context(contract, plan.bound, REGEX_STEP_BUDGET, f"EvalContract.oracles[id={oracle_id}].check")
        resolution = resolve_check(oracle["check"], context).resolution
        resolutions[oracle_id] = resolution
        selection = select_for_oracle(contract, plan, oracle["check"])
        cited: list[str] = []
        for step_selection in selection.selections:
            if step_selection.bound is not None and step_selection.bound["observationId"] not in cited:
                cited.append(step_selection.bound["observationId"])
        disposition = {"true": "held", "false": "violated"}.get(resolution, "not-attempted")
        notes = {
            "held": "The check resolved true over the cited observations.",
            "violated": "The check resolved false over the cited observations.",
            "not-attempted": "The check examined nothing it could decide on.",
        }
        dispositions.append({"oracleId": oracle_id, "disposition": disposition, "observationIds": cited, "note": notes[disposition]})
        if disposition == "violated" and cited:
            behaviour = behaviour_of.get(oracle_id)
            quotes: list[dict[str, Any]] = []
            pointers = _pointers(oracle["check"], [])
            for observation_id in cited:
                step_ids = [s.step_id for s in selection.selections if s.bound and s.bound["observationId"] == observation_id]
                own = [p for p in pointers if p.split("/")[2] in step_ids]
                quotes.extend(q for q in _quotes_for(by_id[observation_id], own) if q not in quotes)
            negative = (oracle.get("direction") or {}).get("negativeDomain") or "the oracle's claim does not hold"
            findings.append(
                {
                    "findingId": f"F-{len(findings) + 1:03d}",
                    "findingType": "defect",
                    "oracleId": oracle_id,
                    "probeId": probe_id,
                    "behaviorId": None if behaviour is None else behaviour["id"],
                    "severity": "material" if behaviour is None else behaviour["severity"],
                    "summary": f"{oracle_id} resolved false: {negative}",
                    "confidence": 0.9,
                    "observationIds": cited,
                    "evidenceArtifacts": [],
                    "quotedEvidence": quotes,
                }
            )
    recommendation = "FAIL" if findings else "PASS"
    return Judgement(dispositions, findings, recommendation, resolutions)


# ---------------------------------------------------------------- sealing


def seal_brief_digest(contract: Mapping[str, Any]) -> str:
    """The digest of the sealed evaluator brief of ``contract`` (our compile and seal)."""
    from evalquality_core.compile.pipeline import compile_contract
    from evalquality_core.seal.seal import seal

    return digest_artifact(seal(compile_contract(dict(contract))))


def evaluator_configuration(suite: Suite, brief_digest: str) -> dict[str, Any]:
    """The evaluator configuration every trial of the suite declares (no trial index: trials pool)."""
    tools = sorted({" ".join([op["invocation"]["executable"], *op["invocation"]["subcommandPath"]])
                    for interface in suite.contract["permittedInterfaces"] for op in interface["operations"]})
    value = {
        "schemaVersion": EvaluatorConfiguration.WRITTEN_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "sealedBriefDigest": brief_digest,
        "evaluatorIdentity": EVALUATOR_IDENTITY,
        "modelSnapshot": MODEL_SNAPSHOT,
        "systemPromptDigest": digest_bytes(INSTRUCTIONS.encode("utf-8")),
        "decodingParameters": {},
        "toolInventory": tools,
        "permissionInventory": [],
        "budgets": dict(suite.contract["budgets"]),
        "seed": None,
        "judgeConfiguration": None,
    }
    return to_wire(read_artifact(EvaluatorConfiguration, value, "EvaluatorConfiguration"))


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(serialize_artifact(value))


def write_trial(suite: Suite, probe_id: str, trial_index: int, trial_dir: Path, *, adapter: CommandLineAdapter | None = None,
                contract: Mapping[str, Any] | None = None, reference_root: Path | None = None) -> dict[str, Any]:
    """Run one trial of ``probe_id`` and write record, manifest, configuration and actions into ``trial_dir``.

    ``contract`` overrides the suite's contract (a test scores a weakened copy this way); the staged
    system is the probe's mutation, or the clean system for a clean control. Artifact references
    are relative to ``reference_root`` (default: the suite folder, where stored trials live). Returns the record.
    """
    contract = dict(contract or suite.contract)
    reference_root = suite.root if reference_root is None else reference_root
    judged_suite = Suite(suite.name, suite.root, contract, suite.probes, suite.choices, suite.baseline_steps, suite.targets_text)
    mutation = mutation_for_probe(suite.root, probe_id)
    requests, observations, _ = run_staged(judged_suite, mutation, adapter)
    judgement = judge(contract, observations, probe_id)
    contract_digest = digest_artifact(contract)
    configuration = evaluator_configuration(judged_suite, seal_brief_digest(contract))
    configuration_digest = digest_artifact(configuration)
    run_id = f"{suite.name}-{probe_id.lower()}"
    arm = "clean" if mutation is None else "mutated"
    trial_dir.mkdir(parents=True, exist_ok=True)
    actions = trial_dir / "actions.jsonl"
    actions.write_text("".join(canonical_bytes(r).decode("utf-8") + "\n" for r in requests), encoding="utf-8")
    resource_use = {"toolCalls": len(requests), "inputTokens": 0, "outputTokens": 0, "wallClockSeconds": 0, "costUsd": "0"}
    tools = [" ".join([r["executable"], *r["subcommandPath"]]) for r in requests]
    manifest = {
        "schemaVersion": IsolationManifest.WRITTEN_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "runId": run_id,
        "contractId": contract["contractId"],
        "conditionArm": arm,
        "modelSnapshot": MODEL_SNAPSHOT,
        "systemPromptDigest": configuration["systemPromptDigest"],
        "contractDigest": contract_digest,
        "evaluatorConfigurationDigest": configuration_digest,
        "workspaceIdentity": f"{run_id}-trial-{trial_index}",
        "allowedMounts": [],
        "observedMounts": [],
        "networkAllowlist": [],
        "observedNetworkTargets": [],
        "toolAllowlist": configuration["toolInventory"],
        "observedToolCalls": sorted(set(tools)),
        "resourceCeilings": {"maxToolCalls": max(1, contract["budgets"]["maxToolCalls"]), "maxInputTokens": 1,
                             "maxOutputTokens": 1, "maxWallClockMinutes": max(1, contract["budgets"]["maxWallClockMinutes"]),
                             "maxCostUsd": "0.01"},
        "actualResourceUse": resource_use,
        "forbiddenInputAccounting": {name: {"withheld": True, "note": None} for name in FORBIDDEN_INPUT_FLOOR},
        "violation": None,
    }
    manifest = to_wire(read_artifact(IsolationManifest, manifest, "IsolationManifest"))
    _write(trial_dir / "isolation-manifest.json", manifest)
    _write(trial_dir / "evaluator-configuration.json", configuration)
    record = {
        "schemaVersion": SealedRunRecord.WRITTEN_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "runId": run_id,
        "conditionArm": arm,
        "mode": "contract-scoring",
        "trialIndex": trial_index,
        "contractDigest": contract_digest,
        "sealedBriefDigest": configuration["sealedBriefDigest"],
        "evaluatorConfigurationDigest": configuration_digest,
        "evaluatorRecommendation": judgement.recommendation,
        "oracleDispositions": judgement.dispositions,
        "findings": judgement.findings,
        "observations": observations,
        "judgeResults": [],
        "actionsArtifact": public_reference(actions, root=reference_root),
        "isolationManifestArtifact": public_reference(trial_dir / "isolation-manifest.json", root=reference_root),
        "resourceUse": resource_use,
        "evidenceDisclosure": {"truncationBound": None, "reportedIncomplete": False},
    }
    record = to_wire(read_artifact(SealedRunRecord, record, "SealedRunRecord"))
    _write(trial_dir / "sealed-run-record.json", record)
    return record


class StagingPort:
    """A probe port for one probe's pre-flight: every leg in a fresh workspace (harness.md A.7)."""

    def __init__(self, suite: Suite, probe: Mapping[str, Any], adapter: CommandLineAdapter) -> None:
        self.suite, self.probe_wire, self.adapter = suite, probe, adapter

    def probe(self, request: Any) -> Any:
        """Stage the leg's workspace, run the request in it, remove the workspace."""
        wire = as_wire(request)
        scratch = Path(tempfile.mkdtemp(prefix=f"eq-{self.suite.name}-leg-"))
        try:
            workspace = stage_for_leg(self.suite.root, dict(self.probe_wire), wire["probeId"], scratch / "workspace")
            return self.adapter.probe(request, workdir=workspace.root)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def preflight_probe(suite: Suite, probe_id: str, adapter: CommandLineAdapter | None = None) -> dict[str, Any]:
    """A real pre-flight of one probe through our adapter, one staged workspace per leg."""
    adapter = adapter or adapter_for(suite)
    probe = suite.probes[probe_id]
    verdict = run_preflight(suite.contract, [probe], f"{suite.name}-{probe_id.lower()}", StagingPort(suite, probe, adapter))
    return as_wire(verdict)


def regenerate(suite_name: str | Path, trials: int = DEFAULT_TRIALS, probe_ids: Sequence[str] | None = None, jobs: int = 1) -> list[Path]:
    """Rewrite ``trials/`` of a suite: per probe, a pre-flight verdict and ``trials`` sealed trials.

    Probes are independent (every trial and leg stages its own workspace), so ``jobs`` of them run
    side by side; the trials of one probe run in order.
    """
    suite = load_suite(suite_name)
    adapter = adapter_for(suite)
    # Staging reads these per workspace; reading them once here reports a bad one before anything runs.
    read_suite_settings(suite.root)
    load_mutations(suite.root)
    chosen = list(probe_ids or sorted(suite.probes))

    def one(probe_id: str) -> Path:
        probe_dir = suite.root / "trials" / probe_id
        # The stored trials are set aside, not deleted, until the new ones are complete: a failed
        # regeneration puts them back, so nothing is lost. (They are regenerated in place because
        # the references they hold are paths to their own files.)
        previous = probe_dir.with_name(f".{probe_id}.previous")
        discarded = probe_dir.with_name(f".{probe_id}.discarded")
        shutil.rmtree(discarded, ignore_errors=True)
        # ``previous`` exists only while new trials are being written, so one left by a killed run holds
        # the last complete trials: put them back before starting.
        if previous.exists():
            shutil.rmtree(probe_dir, ignore_errors=True)
            previous.rename(probe_dir)
        if probe_dir.exists():
            probe_dir.rename(previous)
        try:
            _write(probe_dir / "preflight-verdict.json", preflight_probe(suite, probe_id, adapter))
            for index in range(1, trials + 1):
                write_trial(suite, probe_id, index, probe_dir / f"trial-{index}", adapter=adapter)
        except BaseException as problem:
            shutil.rmtree(probe_dir, ignore_errors=True)
            if previous.exists():
                previous.rename(probe_dir)
            if isinstance(problem, TOOL_PROBLEMS):
                raise EvaluatorError(f"{suite.name} {probe_id}: {problem_line(problem)}") from problem
            raise
        if previous.exists():
            previous.rename(discarded)  # one atomic step ends "previous"; deleting it may then be cut short safely
            shutil.rmtree(discarded, ignore_errors=True)
        return probe_dir

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, chosen))

