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
from evalquality_core.adapters.leg_calls import probe_leg
from evalquality_core.adapters.routing import ProbeRouter
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
    SuiteFiles,
    adapter_for,
    load_mutations,
    load_suite,
    mutation_for_probe,
    problem_line,
    read_suite_json,
    read_suite_settings,
    suite_relative,
)
from evalquality_core.suite.staging import default_store, layers_intact, stage_for_leg, stage_workspace

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
#: What runs the plan's requests: the suite's router (cli and mcp), or a command-line adapter.
Adapter = ProbeRouter | CommandLineAdapter


def _operations(contract: Mapping[str, Any]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            found[operation["operationId"]] = (interface["logicalId"], operation)
    return found


def _kinds(contract: Mapping[str, Any]) -> dict[str, str]:
    return {interface["logicalId"]: interface["kind"] for interface in contract["permittedInterfaces"]}


#: Where a ``captured`` binding stands in a request until its step runs (then it is resolved).
_CAPTURED = "$captured"


def _bound_value(suite_name: str, step: Mapping[str, Any], channel: str, key: str, binding: Mapping[str, Any], choices: Any) -> Any:
    if "literal" in binding:
        return binding["literal"]
    if "captured" in binding and channel == "arguments":
        return {_CAPTURED: binding["captured"]}
    if "matcher" in binding:
        try:
            return choices[step["stepId"]][channel][key]
        except (KeyError, TypeError):
            raise EvaluatorError(
                f'{suite_name}: step "{step["stepId"]}" leaves {channel}.{key} open ({binding["matcher"]}) '
                "and evaluator.json chooses no value for it"
            ) from None
    raise EvaluatorError(f'{suite_name}: step "{step["stepId"]}" binds {channel}.{key} in a form this evaluator does not send')


def _api_request(suite: SuiteFiles, number: int, step: Mapping[str, Any], interface_id: str, operation: Mapping[str, Any]) -> dict[str, Any]:
    """An api request for one plan step: path, query and header from their bindings, the body's
    bound keys as one JSON object (absent when the step binds none)."""
    channels: dict[str, Any] = {"path": {}, "query": {}, "header": {}}
    body: dict[str, Any] = {}
    for channel in ("path", "query", "header", "body"):
        for key, binding in (step["inputBinding"].get(channel) or {}).items():
            value = _bound_value(suite.name, step, channel, key, binding, suite.choices)
            (body if channel == "body" else channels[channel])[key] = value
    channels["body"] = {"kind": "json", "value": body} if body else {"kind": "absent"}
    return {
        "kind": "api",
        "probeId": f"obs-{number:03d}",
        "interfaceId": interface_id,
        "operationId": step["operationId"],
        "method": operation["method"],
        "pathTemplate": operation["pathTemplate"],
        "channels": channels,
    }


def requests_for_plan(suite: SuiteFiles) -> list[tuple[Mapping[str, Any], dict[str, Any]]]:
    """One request per plan step, in plan order: ``[(step, request wire), ...]`` (a cli request, an api
    request for an api interface, or an mcp tool call when the step's interface is a tool server)."""
    operations = _operations(suite.contract)
    kinds = _kinds(suite.contract)
    seen: set[str] = set()
    out: list[tuple[Mapping[str, Any], dict[str, Any]]] = []
    for number, step in enumerate(suite.contract["interactionPlan"], start=1):
        if step["after"] is not None and step["after"] not in seen:
            raise EvaluatorError(f'{suite.name}: step "{step["stepId"]}" must come after "{step["after"]}" in plan order')
        seen.add(step["stepId"])
        interface_id, operation = operations[step["operationId"]]
        if kinds.get(interface_id) == "api":
            out.append((step, _api_request(suite, number, step, interface_id, operation)))
            continue
        if kinds.get(interface_id) == "mcp":
            arguments = {
                key: _bound_value(suite.name, step, "arguments", key, binding, suite.choices)
                for key, binding in (step["inputBinding"].get("arguments") or {}).items()
            }
            out.append((step, {
                "kind": "mcp",
                "probeId": f"obs-{number:03d}",
                "interfaceId": interface_id,
                "operationId": step["operationId"],
                "toolName": operation["toolName"],
                "channels": {"arguments": arguments},
            }))
            continue
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


def _tool_observation(number: int, step: Mapping[str, Any], request: Mapping[str, Any], answer: Mapping[str, Any], baseline: bool) -> dict[str, Any]:
    """An mcp answer as a sealed-run-record observation (preflight-adapter.md §2.2, 2.0.0 CHANGELOG):
    the result is the response body, ``responseStatus`` is 1 when the tool answered isError, else 0."""
    call_inputs: dict[str, Any] = {name: None for name in _CHANNELS}
    call_inputs["arguments"] = dict(request["channels"]["arguments"]) or None
    call_inputs["bodyEncoding"] = None  # record 8 (6.0.0): a tool call sends no raw body
    result = answer["result"]
    return {
        "observationId": f"obs-{number:03d}",
        "sequence": number,
        "interfaceId": request["interfaceId"],  # record 7 (5.0.0): the (interfaceId, operationId) pair
        "operationId": step["operationId"],
        "provenance": "baseline" if baseline else "evaluator-chosen",
        "principal": None,
        "callInputs": call_inputs,
        "responseBody": result["value"] if result["kind"] in ("json", "text") else None,
        "responseHeaders": None,
        "responseStatus": 1 if answer["isError"] else 0,
        "stdout": {"kind": "absent"},
        "stderr": {"kind": "absent"},
        "exitCode": answer.get("exitCode"),
        "artifacts": {},
    }


def _api_observation(number: int, step: Mapping[str, Any], request: Mapping[str, Any], answer: Mapping[str, Any], baseline: bool) -> dict[str, Any]:
    """An api answer in the record's shape: the transport channels, the body's value (its text when
    it is not JSON, null when absent), no process channels."""
    channels = request["channels"]
    call_inputs: dict[str, Any] = {name: None for name in _CHANNELS}
    for name in ("path", "query", "header"):
        call_inputs[name] = dict(channels[name]) or None
    sent = channels["body"]
    call_inputs["body"] = sent["value"] if sent["kind"] == "json" else None
    call_inputs["bodyEncoding"] = None  # record 8: "raw" only for a raw body
    if sent["kind"] == "raw":  # the record's reading of a raw call (artifacts/run_record.py)
        call_inputs["body"] = {"base64": sent["base64"]}
        call_inputs["header"] = {**(call_inputs["header"] or {}), "content-type": sent["contentType"]}
        call_inputs["bodyEncoding"] = "raw"
    body = answer["body"]
    return {
        "observationId": f"obs-{number:03d}",
        "sequence": number,
        "interfaceId": request["interfaceId"],
        "operationId": step["operationId"],
        "provenance": "baseline" if baseline else "evaluator-chosen",
        "principal": None,
        "callInputs": call_inputs,
        "responseBody": None if body["kind"] == "absent" else body["value"],
        "responseHeaders": dict(answer["headers"]),
        "responseStatus": answer["status"],
        "stdout": {"kind": "absent"},
        "stderr": {"kind": "absent"},
        "exitCode": None,
        "artifacts": {},
    }



def _observation(number: int, step: Mapping[str, Any], request: Mapping[str, Any], answer: Mapping[str, Any], baseline: bool) -> dict[str, Any]:
    if answer.get("kind") == "api":
        return _api_observation(number, step, request, answer, baseline)
    if request["kind"] == "mcp":
        return _tool_observation(number, step, request, answer, baseline)
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


def run_plan(suite: SuiteFiles, workspace_root: Path, adapter: Adapter | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The harness half: send every plan step through our adapter in ``workspace_root``.

    Returns ``(requests, observations)``; observations are in the sealed-run-record shape.
    """
    adapter = adapter or adapter_for(suite)
    requests, observations = [], []
    by_step: dict[str, dict[str, Any]] = {}
    for number, (step, planned) in enumerate(requests_for_plan(suite), start=1):
        request = _fill_captured(planned, by_step)
        answer = as_wire(adapter.probe(request, workdir=workspace_root))
        requests.append(request)
        observations.append(_observation(number, step, request, answer, step["stepId"] in suite.baseline_steps))
        by_step[step["stepId"]] = observations[-1]
    return requests, observations


def _fill_captured(request: dict[str, Any], by_step: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Resolve a tool call's ``captured`` arguments over the observations of the steps already run
    (``/interactions/<step>/<channel>/…``). A value the earlier answer does not hold is left out, so
    the call goes without it and the server's answer to that is the observation."""
    if request["kind"] != "mcp":
        return request
    arguments: dict[str, Any] = {}
    for key, value in request["channels"]["arguments"].items():
        if not (isinstance(value, dict) and set(value) == {_CAPTURED}):
            arguments[key] = value
            continue
        parsed = parse_evidence_pointer(value[_CAPTURED])
        source = None if parsed is None else by_step.get(parsed.step_id)
        if parsed is None or source is None:
            continue
        found = walk(channel_root(source, parsed.channel, parsed.sub), parsed.tokens)
        if found is not ABSENT:
            arguments[key] = as_wire(found)
    return {**request, "channels": {"arguments": arguments}}


def run_staged(
    suite: SuiteFiles, mutation: Mutation | None, adapter: Adapter | None = None, *, system_source: Path | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Stage a fresh workspace (clean or mutated), run the plan in it, remove it.

    ``system_source`` stages a given copy of the system instead of the suite's own (the generator's
    disposable copy). Returns ``(requests, observations, staged system digest)``.
    """
    scratch = Path(tempfile.mkdtemp(prefix=f"eq-{suite.name}-"))
    try:
        # Dependency layers linked from the home's store (staged once), checked after the plan ran.
        workspace = stage_workspace(suite.root, scratch / "workspace", mutation, system_source=system_source,
                                    layers=default_store())
        requests, observations = run_plan(suite, workspace.root, adapter)
        layers_intact(workspace)
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
    if channel == "response-status":
        return None if observation.get("responseStatus") is None else str(observation["responseStatus"])
    if channel in ("response-body", "response-headers"):  # as ingest projects them (canonical JSON)
        value = observation.get("responseBody" if channel == "response-body" else "responseHeaders")
        return None if value is None else canonical_bytes(value).decode("utf-8")
    return None


def _quotes_for(observation: Mapping[str, Any], pointers: Sequence[str]) -> list[dict[str, Any]]:
    """Verbatim quotes from one cited observation: the addressed values on a quotable channel, else its exit code."""
    quotes: list[dict[str, Any]] = []
    for pointer in pointers:
        parsed = parse_evidence_pointer(pointer)
        if parsed is None or parsed.channel not in ("stdout", "stderr", "call-inputs", "exit-code", "response-body", "response-headers", "response-status"):
            continue
        projection = _projection(observation, parsed.channel)
        if projection is None:
            continue
        if parsed.channel in ("exit-code", "response-status"):
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
    elif not quotes and observation.get("responseStatus") is not None:  # a tool call: its error flag
        quotes.append({"quote": str(observation["responseStatus"]), "channel": "response-status", "artifactId": None})
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
        # An expects-violation oracle's check states the failure: it resolving true is the violation.
        flipped = oracle.get("polarity") == "expects-violation"
        disposition = {"true": "violated" if flipped else "held", "false": "held" if flipped else "violated"}.get(
            resolution, "not-attempted"
        )
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


def tool_inventory(contract: Mapping[str, Any]) -> list[str]:
    """Every operation the contract permits, by the name an evaluator calls it: a command with its
    subcommand path, an mcp tool by its tool name, an HTTP call by method and path template."""
    return sorted({op["toolName"] if interface["kind"] == "mcp"
                   else f"{op['method']} {op['pathTemplate']}" if interface["kind"] == "api"
                   else " ".join([op["invocation"]["executable"], *op["invocation"]["subcommandPath"]])
                   for interface in contract["permittedInterfaces"] for op in interface["operations"]})


def request_tool(request: Mapping[str, Any]) -> str:
    """The name :func:`tool_inventory` gives the operation one sent request (cli, api or mcp) called."""
    if request["kind"] == "mcp":
        return str(request["toolName"])
    if request["kind"] == "api":
        return f"{request['method']} {request['pathTemplate']}"
    return " ".join([request["executable"], *request["subcommandPath"]])


@dataclass(frozen=True)
class SealedParts:
    """One sealed trial: the record and its isolation manifest (wire JSON) and the actions file's bytes."""

    record: dict[str, Any]
    manifest: dict[str, Any]
    actions: bytes


def seal_trial(
    *,
    contract: Mapping[str, Any],
    configuration: Mapping[str, Any],
    run_id: str,
    arm: str,
    trial_index: int,
    requests: Sequence[Mapping[str, Any]],
    observations: Sequence[Mapping[str, Any]],
    dispositions: Sequence[Mapping[str, Any]],
    findings: Sequence[Mapping[str, Any]],
    recommendation: str,
    folder: str,
    evaluator_tool_calls: int = 0,
) -> SealedParts:
    """Seal one judged trial (pure): the ``SealedRunRecord``, its ``IsolationManifest`` and ``actions.jsonl``.

    Shared by the stored trials (:func:`write_trial`) and the live ones (``tasks/trials.py``), so a live
    record differs from a stored one only where its evaluator does. Every digest is ours, so ingest
    agrees; the references name ``<folder>/actions.jsonl`` and ``<folder>/isolation-manifest.json``
    (``folder`` relative to where the trials are kept). ``resourceUse.toolCalls`` counts the plan's
    requests plus the evaluator's own tool calls.
    """
    contract_digest = digest_artifact(dict(contract))
    actions = "".join(canonical_bytes(r).decode("utf-8") + "\n" for r in requests).encode("utf-8")
    tool_calls = len(requests) + evaluator_tool_calls
    resource_use = {"toolCalls": tool_calls, "inputTokens": 0, "outputTokens": 0, "wallClockSeconds": 0, "costUsd": "0"}
    manifest = to_wire(read_artifact(IsolationManifest, {
        "schemaVersion": IsolationManifest.WRITTEN_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "runId": run_id,
        "contractId": contract["contractId"],
        "conditionArm": arm,
        "modelSnapshot": configuration["modelSnapshot"],
        "systemPromptDigest": configuration["systemPromptDigest"],
        "contractDigest": contract_digest,
        "evaluatorConfigurationDigest": digest_artifact(dict(configuration)),
        "workspaceIdentity": f"{run_id}-trial-{trial_index}",
        "allowedMounts": [],
        "observedMounts": [],
        "networkAllowlist": [],
        "observedNetworkTargets": [],
        "toolAllowlist": list(configuration["toolInventory"]),
        "observedToolCalls": sorted({request_tool(r) for r in requests}),
        "resourceCeilings": {"maxToolCalls": max(1, contract["budgets"]["maxToolCalls"], tool_calls),
                             "maxInputTokens": 1, "maxOutputTokens": 1,
                             "maxWallClockMinutes": max(1, contract["budgets"]["maxWallClockMinutes"]),
                             "maxCostUsd": "0.01"},
        "actualResourceUse": resource_use,
        "forbiddenInputAccounting": {name: {"withheld": True, "note": None} for name in FORBIDDEN_INPUT_FLOOR},
        "violation": None,
    }, "IsolationManifest"))
    folder = folder.rstrip("/")
    record = to_wire(read_artifact(SealedRunRecord, {
        "schemaVersion": SealedRunRecord.WRITTEN_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "runId": run_id,
        "conditionArm": arm,
        "mode": "contract-scoring",
        "trialIndex": trial_index,
        "contractDigest": contract_digest,
        "sealedBriefDigest": configuration["sealedBriefDigest"],
        "evaluatorConfigurationDigest": digest_artifact(dict(configuration)),
        "evaluatorRecommendation": recommendation,
        "oracleDispositions": list(dispositions),
        "findings": list(findings),
        "observations": list(observations),
        "judgeResults": [],
        "actionsArtifact": {"storage": "public", "path": f"{folder}/actions.jsonl", "privateRef": None,
                            "digest": digest_bytes(actions)},
        "isolationManifestArtifact": {"storage": "public", "path": f"{folder}/isolation-manifest.json",
                                      "privateRef": None, "digest": digest_bytes(serialize_artifact(manifest))},
        "resourceUse": resource_use,
        "evidenceDisclosure": {"truncationBound": None, "reportedIncomplete": False},
    }, "SealedRunRecord"))
    return SealedParts(record, manifest, actions)


def evaluator_configuration(suite: SuiteFiles, brief_digest: str) -> dict[str, Any]:
    """The evaluator configuration every trial of the suite declares (no trial index: trials pool)."""
    value = {
        "schemaVersion": EvaluatorConfiguration.WRITTEN_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "sealedBriefDigest": brief_digest,
        "evaluatorIdentity": EVALUATOR_IDENTITY,
        "modelSnapshot": MODEL_SNAPSHOT,
        "systemPromptDigest": digest_bytes(INSTRUCTIONS.encode("utf-8")),
        "decodingParameters": {},
        "toolInventory": tool_inventory(suite.contract),
        "permissionInventory": [],
        "budgets": dict(suite.contract["budgets"]),
        "seed": None,
        "judgeConfiguration": None,
    }
    return to_wire(read_artifact(EvaluatorConfiguration, value, "EvaluatorConfiguration"))


def run_id_of(suite: SuiteFiles, probe_id: str) -> str:
    """The run id a probe's stored pre-flight verdict and trials carry: ``<contractId>-<probe id>``, lower case.

    Built from what the suite declares (its contract's id), never from its folder's name, so a suite
    copied or renamed regenerates the same trials (and the same corpus digest).
    """
    return f"{suite.contract['contractId']}-{probe_id}".lower()


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(serialize_artifact(value))


def write_trial(suite: SuiteFiles, probe_id: str, trial_index: int, trial_dir: Path, *, adapter: Adapter | None = None,
                contract: Mapping[str, Any] | None = None, reference_root: Path | None = None) -> dict[str, Any]:
    """Run one trial of ``probe_id`` and write record, manifest, configuration and actions into ``trial_dir``.

    ``contract`` overrides the suite's contract (a test scores a weakened copy this way); the staged
    system is the probe's mutation, or the clean system for a clean control. Artifact references
    are relative to ``reference_root`` (default: the suite folder, where stored trials live). Returns the record.
    """
    contract = dict(contract or suite.contract)
    reference_root = suite.root if reference_root is None else reference_root
    judged_suite = SuiteFiles(suite.name, suite.root, contract, suite.probes, suite.choices, suite.baseline_steps, suite.targets_text)
    mutation = mutation_for_probe(suite.root, probe_id)
    requests, observations, _ = run_staged(judged_suite, mutation, adapter)
    judgement = judge(contract, observations, probe_id)
    configuration = evaluator_configuration(judged_suite, seal_brief_digest(contract))
    sealed = seal_trial(
        contract=contract,
        configuration=configuration,
        run_id=run_id_of(suite, probe_id),
        arm="clean" if mutation is None else "mutated",
        trial_index=trial_index,
        requests=requests,
        observations=observations,
        dispositions=judgement.dispositions,
        findings=judgement.findings,
        recommendation=judgement.recommendation,
        folder=suite_relative(trial_dir, reference_root),
    )
    trial_dir.mkdir(parents=True, exist_ok=True)
    (trial_dir / "actions.jsonl").write_bytes(sealed.actions)
    _write(trial_dir / "isolation-manifest.json", sealed.manifest)
    _write(trial_dir / "evaluator-configuration.json", configuration)
    record = sealed.record
    _write(trial_dir / "sealed-run-record.json", record)
    return record


class StagingPort:
    """A probe port for one probe's pre-flight: every leg in a fresh workspace (harness.md A.7)."""

    def __init__(self, suite: SuiteFiles, probe: Mapping[str, Any], adapter: Adapter) -> None:
        self.suite, self.probe_wire, self.adapter = suite, probe, adapter

    def probe(self, request: Any) -> Any:
        """Stage the leg's workspace, run the request in it, remove the workspace."""
        wire = as_wire(request)
        scratch = Path(tempfile.mkdtemp(prefix=f"eq-{self.suite.name}-leg-"))
        try:
            workspace = stage_for_leg(self.suite.root, dict(self.probe_wire), wire["probeId"], scratch / "workspace",
                                      layers=default_store())
            # A multi-call leg's calls go to this one workspace and server/session (adapters/leg_calls.py).
            observation = probe_leg(self.adapter, wire, workdir=workspace.root)
            layers_intact(workspace)
            return observation
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def preflight_probe(suite: SuiteFiles, probe_id: str, adapter: Adapter | None = None) -> dict[str, Any]:
    """A real pre-flight of one probe through our adapter, one staged workspace per leg.

    Fault legs run on the probe's seeded system, so each manifestation witness also runs on the clean
    system (``clean_witness_legs``): a witness that holds there too fails ``seeded-faults-scoped`` here
    exactly as in the pre-flight flows, and no stored verdict passes a witness that cannot tell the
    defect from clean behaviour."""
    adapter = adapter or adapter_for(suite)
    probe = suite.probes[probe_id]
    verdict = run_preflight(
        suite.contract, [probe], run_id_of(suite, probe_id), StagingPort(suite, probe, adapter), clean_witness_legs=True
    )
    return as_wire(verdict)


def preflight_failure(verdict: Mapping[str, Any]) -> str | None:
    """None when a pre-flight verdict passed; else one line naming each failed check (kind, operation, note)."""
    if verdict.get("passed") is True:
        return None
    failed = [
        f"{check.get('kind')} ({check.get('operationId')}" + (f": {check['note']}" if check.get("note") else "") + ")"
        for check in verdict.get("checks", [])
        if check.get("outcome") == "failed"
    ]
    return "pre-flight failed: " + ("; ".join(failed) or "no check failed, yet the verdict did not pass")


def stored_preflight_failures(probe_dirs: Sequence[Path]) -> list[str]:
    """One line per probe folder whose stored ``preflight-verdict.json`` did not pass: ``<file>: pre-flight
    failed: ...``. Read back from what was stored, so the line describes exactly what a later ``score`` reads."""
    lines = []
    for probe_dir in probe_dirs:
        path = probe_dir / "preflight-verdict.json"
        verdict = read_suite_json(path)
        reason = preflight_failure(verdict if isinstance(verdict, dict) else {})
        if reason is not None:
            lines.append(" ".join(f"{path}: {reason}".split()))
    return lines


def regenerate(suite_name: str | Path, trials: int = DEFAULT_TRIALS, probe_ids: Sequence[str] | None = None, jobs: int = 1) -> list[Path]:
    """Rewrite ``trials/`` of a suite: per probe, a pre-flight verdict and ``trials`` sealed trials.

    A pre-flight that fails is a verdict, not a fault: it is stored (replacing any earlier, passing one)
    and the trials are still run and stored beside it, so they can be inspected; scoring them against
    that stored verdict is Invalid ("pre-flight verdict did not pass"). :func:`stored_preflight_failures`
    names such probes (``suite trials`` then exits 3).

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

