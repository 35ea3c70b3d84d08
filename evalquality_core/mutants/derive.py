"""A probe derived from an Observable mutant (pure): the authored fields a hand-written probe would hold.

For one Observable representative:

* **behaviour** — the behaviour of an oracle that killed the mutant and is its behaviour's only oracle
  (the designated oracle, AD-40); none such: not derived, and the reason says so;
* **defect signature** — from the smallest difference of the interaction plan's evaluator-chosen steps,
  on that step's operation: the channel and the differing pointer under
  ``/interactions/observed/<channel>``, with the predicate "equals the mutated value";
* **manifestation witness** — the pre-flight leg with the smallest observable difference: its request's
  inputs, and the relation "the leg's pointer equals the mutated value"; its leg id is
  ``<mutant id>-witness`` (unique in the suite);
* the mutation itself is the generated one, ``probeId`` set, in ``mutations/<mutant id>.json``.

Differences are taken in **evidence space** — the channels a sealed-run-record observation carries and
a pointer resolves (:func:`evidence_view`), so a pointer found is a pointer that resolves:

==========  ==========================================================================================
cli         ``exit-code``; ``stdout``/``stderr`` (the tagged stream's value)
api         ``response-status``; ``response-headers`` (the raw headers); ``response-body`` (the body's
            value; a leg's body pruned of the operation's ``volatilePointers``, as its witness
            evidence is, preflight-adapter.md §2.2)
mcp         ``response-status`` (1 when ``isError``, else 0, §2.2); ``response-body`` (the tool
            result's value, pruned alike); ``exit-code`` (when the server ended the session)
==========  ==========================================================================================

"Smallest" (issue 18: exit code, then stdout/stderr, then body) is the order of
:data:`EVIDENCE_ORDER` — for HTTP and MCP the status comes first, then headers, then the body —, then
the shallowest pointer, then the run id; a ``content-length`` header only frames the body, so it ranks
after every body difference (decision: it is the signature of last resort, not the first choice). A
difference the mutant made by *removing* a member has no mutated value and no equality expresses it:
it is skipped (decision: no ``absence`` predicate is derived).

Candidates are tried smallest first and each is read in advance, with the evaluator the scorer uses,
so the generator cycle is spent only on one that can pass: a signature must pass the AD-9 gate's
signature checks (a key the operation's descriptor does not declare is unwritable), match the mutated
step (an empty collection resolves insufficient-evidence, not true) and match no clean step; a witness
relation must resolve true on the mutated leg's evidence and not on the clean leg's. When no candidate
is left the reason names the smallest and why it failed.

The signature's shape is the one hand-written probes of that kind use (corpus/suites/*/probes):
``cli`` names the invocation, ``api`` the method and path template, ``mcp`` the tool name. Its selector
is the differing step's own input binding, each ``captured`` value (not allowed in a signature)
widened to ``{"matcher": "any"}``. A ``web`` operation is not derived (no adapter runs one).
The probe is then qualified by the suite's generator cycle (evalquality_core/suite/generate.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.evaluate.bindings import observation_satisfies_bindings
from evalquality_core.evaluate.pointers import ABSENT, channel_root, decode_tokens, walk
from evalquality_core.evaluate.resolution import ResolutionContext, resolution_context, resolve_check
from evalquality_core.faults import RuntimeFault
from evalquality_core.mutants.classify import RESPONSE_CHANNELS, Classification, differing_pointers
from evalquality_core.mutants.generate import GeneratedMutant
from evalquality_core.preflight.projection import prune_body
from evalquality_core.preflight.reduce import WITNESS_REGEX_BUDGET
from evalquality_core.score.qualification import qualify_probe
from evalquality_core.score.witness import OBSERVED_STEP, HomeOperation, resolve_home_operation

#: Evidence channels a signature or witness may sit on, smallest first (never an artifact: AD-9 refuses it).
EVIDENCE_ORDER: tuple[str, ...] = ("exit-code", "response-status", "stdout", "stderr", "response-headers", "response-body")
#: Headers that only frame the body (its length): a difference there follows a body difference, so it
#: ranks after every body difference and is chosen only when nothing else differs.
FRAMING_HEADERS: frozenset[str] = frozenset({"/content-length"})
#: The input-binding channels of a signature selector (artifacts.md §2.5, plus mcp ``arguments``).
BINDING_CHANNELS: tuple[str, ...] = ("argument", "arguments", "body", "environment", "header", "option", "path", "query", "stdin")


@dataclass(frozen=True)
class Derived:
    """A derived probe and its mutation, or why none could be derived."""

    mutant_id: str
    probe: dict[str, Any] | None
    mutation: dict[str, Any] | None
    reason: str


@dataclass(frozen=True)
class EvidenceDifference:
    """One expressible difference: the run, the evidence channel, the pointer inside it and the mutated value."""

    run_id: str
    channel: str
    pointer: str
    value: Any

    def order(self) -> tuple[int, int, str, str]:
        """The smallest-difference order (module docstring)."""
        framing = self.channel == "response-headers" and self.pointer.lower() in FRAMING_HEADERS
        rank = len(EVIDENCE_ORDER) if framing else EVIDENCE_ORDER.index(self.channel)
        return (rank, self.pointer.count("/"), self.pointer, self.run_id)


def _unwrap(tagged: Any) -> Any:
    if isinstance(tagged, Mapping) and tagged.get("kind") in ("json", "text"):
        return tagged.get("value")
    return None


def evidence_view(observation: Mapping[str, Any], volatile_pointers: Sequence[str] = ()) -> dict[str, Any]:
    """The evidence channels of one run (module docstring's table): a leg's port observation (``kind``
    api/cli/mcp) as its witness evidence carries it, or a plan step's record observation as it is."""
    kind = observation.get("kind")
    if kind == "cli":
        return {"exitCode": observation.get("exitCode"), "stdout": observation.get("stdout"), "stderr": observation.get("stderr")}
    if kind == "api":
        body = observation.get("body") or {"kind": "absent"}
        return {"responseStatus": observation.get("status"), "responseHeaders": observation.get("headers"),
                "responseBody": _unwrap(prune_body(body, volatile_pointers))}
    if kind == "mcp":
        result = observation.get("result") or {"kind": "absent"}
        return {"responseStatus": 1 if observation.get("isError") else 0, "exitCode": observation.get("exitCode"),
                "responseBody": _unwrap(prune_body(result, volatile_pointers))}
    return dict(observation)


def _at(view: Mapping[str, Any], channel: str, pointer: str) -> Any:
    return walk(channel_root(view, channel, None), tuple(decode_tokens(pointer)))


def evidence_differences(run_id: str, clean: Mapping[str, Any], mutated: Mapping[str, Any]) -> list[EvidenceDifference]:
    """Where two evidence views differ, with the mutated value; removed members are left out."""
    out = []
    for channel in EVIDENCE_ORDER:
        for pointer in differing_pointers(channel_root(clean, channel, None), channel_root(mutated, channel, None)):
            value = _at(mutated, channel, pointer)
            if value is not ABSENT:
                out.append(EvidenceDifference(run_id, channel, pointer, value))
    return sorted(out, key=EvidenceDifference.order)


def _signature_binding(step: Mapping[str, Any]) -> dict[str, Any]:
    """The differing step's input binding as a signature selector (``captured`` widened to any)."""
    binding: dict[str, Any] = {}
    for key in BINDING_CHANNELS:
        values = step["inputBinding"].get(key)
        if not values:
            binding[key] = None
            continue
        binding[key] = {name: (dict(value) if isinstance(value, Mapping) and set(value) <= {"literal", "matcher"} and value
                               else {"matcher": "any"}) for name, value in values.items()}
    return binding


def _signature_head(interface: Mapping[str, Any], operation: Mapping[str, Any]) -> dict[str, Any] | None:
    """The identity part of a signature on this operation (the hand-written probes' shape), or None."""
    kind = interface["kind"]
    if kind == "cli":
        return {"interfaceKind": "cli", "invocation": {"executable": operation["invocation"]["executable"],
                                                      "subcommandPath": list(operation["invocation"]["subcommandPath"])}}
    if kind == "api":
        return {"interfaceKind": "api", "method": operation["method"], "pathTemplate": operation["pathTemplate"]}
    if kind == "mcp":
        return {"interfaceKind": "mcp", "toolName": operation["toolName"]}
    return None


def _resolves(context: ResolutionContext, expression: Mapping[str, Any]) -> str:
    try:
        return resolve_check(expression, context).resolution
    except (RuntimeFault, ValueError, TypeError):
        return "insufficient-evidence"


def signature_matches(contract: Mapping[str, Any], signature: Mapping[str, Any], home: HomeOperation,
                      observation: Mapping[str, Any]) -> bool:
    """Whether a signature matches one plan-step record observation as the generator's check does: an
    evaluator-chosen call of its home operation that its selector admits and its predicate holds on."""
    if observation.get("operationId") != home.operation_id or observation.get("provenance") != "evaluator-chosen":
        return False
    selector = {"stepId": OBSERVED_STEP, "inputBinding": signature["condition"]["selector"]["inputBinding"]}
    try:
        if not observation_satisfies_bindings(observation, selector, home.operation, {}):
            return False
    except (RuntimeFault, ValueError, TypeError, KeyError):
        return False
    context = resolution_context(contract, {OBSERVED_STEP: observation}, WITNESS_REGEX_BUDGET, "Probe.defectSignature.condition")
    return _resolves(context, signature["condition"]["predicate"]) == "true"


def _signature_refusal(contract: Mapping[str, Any], probe: Mapping[str, Any], mutated: Mapping[str, Any],
                       clean_records: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why this candidate signature would not qualify (None: it would): the AD-9 gate's signature codes,
    no match on the mutated step, or a match on some clean step (read in advance, so the generator cycle
    is spent only on a candidate that can pass)."""
    signature = probe["defectSignature"]
    home = resolve_home_operation(contract, signature)
    if home is None:
        return "its identity names no operation of the contract"
    gate = qualify_probe(probe, home)
    codes = sorted({f.code for f in gate.failures if f.code.startswith(("signature-", "condition-"))})
    if codes:
        return f"the AD-9 gate refuses it: {', '.join(codes)}"
    if not signature_matches(contract, signature, home, mutated):
        return "its predicate does not resolve true on the mutated step"
    hits = sorted(run for run, record in clean_records.items() if signature_matches(contract, signature, home, record))
    if hits:
        return f"it matches the clean arm too ({hits[0]})"
    return None


def _witness_resolution(contract: Mapping[str, Any], operation: Mapping[str, Any], leg_id: str,
                        view: Mapping[str, Any], relation: Mapping[str, Any]) -> str:
    """A witness relation resolved as pre-flight resolves it: the leg's evidence under its id, the
    operation's collection locations (evalquality_core/preflight/reduce.py resolve_relation)."""
    locations = (operation.get("responseDescriptor") or {}).get("collectionLocations") or []
    context = ResolutionContext(
        bound={leg_id: view}, reference_sets={},
        collection_locations=frozenset((leg_id, decode_tokens(location["pointer"])) for location in locations),
        regex_step_budget=WITNESS_REGEX_BUDGET, artifact_path="Probe.defects[0].manifestationWitness.relation",
    )
    return _resolves(context, relation)


def derive_probe(
    contract: Mapping[str, Any],
    mutant: GeneratedMutant,
    classification: Classification,
    killed_by: Sequence[str],
    mutated_runs: Mapping[str, Mapping[str, Any]],
    legs: Mapping[str, Mapping[str, Any]],
    steps: Mapping[str, Mapping[str, Any]],
    baseline_steps: frozenset[str],
    clean_runs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Derived:
    """Derive the authored fields of a probe for one Observable mutant (module docstring).

    ``mutated_runs``: run id → the mutant's observation (leg ids, ``plan/<step>``); ``legs``: leg id →
    request; ``steps``: step id → plan step; ``clean_runs``: the clean arm's observations, same ids.
    """
    clean_runs = clean_runs or {}

    def refuse(reason: str) -> Derived:
        return Derived(mutant.mutant_id, None, None, reason)

    if classification.status != "Observable":
        return refuse(f"{classification.status}: only an Observable mutant gets a derived probe")
    operations = {op["operationId"]: (iface, op) for iface in contract["permittedInterfaces"] for op in iface["operations"]}
    behaviours = {b["id"]: b for b in contract["behaviors"]}
    designated = [
        (oracle_id, b) for oracle_id in killed_by for b in behaviours.values() if b["oracles"] == [oracle_id]
    ]
    if not designated:
        return refuse("no oracle that kills it is the only oracle of its behaviour (AD-40 designated oracle)")
    oracle_id, behaviour = designated[0]
    differing = sorted({d.run_id for d in classification.differences if d.channel in RESPONSE_CHANNELS})
    plan_runs = [r for r in differing if r.startswith("plan/") and r.removeprefix("plan/") not in baseline_steps]
    leg_runs = [r for r in differing if not r.startswith("plan/") and r in legs]
    if not plan_runs:
        return refuse("no evaluator-chosen plan step differs on a response channel: a signature would match nothing")

    def differences_of(run_id: str, volatile: Sequence[str] = ()) -> list[EvidenceDifference]:
        clean, mutated = clean_runs.get(run_id), mutated_runs.get(run_id)
        if clean is None or mutated is None:
            return []  # a run that faulted has no value to point at
        return evidence_differences(run_id, evidence_view(clean, volatile), evidence_view(mutated, volatile))

    plan_side = sorted((d for run in plan_runs for d in differences_of(run)), key=EvidenceDifference.order)
    if not plan_side:
        return refuse("every differing plan step faulted or only lost members: no mutated value for an equality signature")
    leg_side = sorted((d for run in leg_runs
                       for d in differences_of(run, operations[legs[run]["operationId"]][1].get("volatilePointers") or ())),
                      key=EvidenceDifference.order)
    witness = None
    for difference in leg_side:
        request = legs[difference.run_id]
        operation = operations[request["operationId"]][1]
        witness_id = f"{mutant.mutant_id}-witness"
        relation = {"op": "equality", "operands": [
            {"pointer": f"/interactions/{witness_id}/{difference.channel}{difference.pointer}"}, {"literal": difference.value}]}
        volatile = operation.get("volatilePointers") or ()
        holds = _witness_resolution(contract, operation, witness_id, evidence_view(mutated_runs[difference.run_id], volatile), relation)
        before = _witness_resolution(contract, operation, witness_id, evidence_view(clean_runs[difference.run_id], volatile), relation)
        if holds == "true" and before != "true":
            witness = (difference, request, witness_id, relation)
            break
    if witness is None:
        return refuse("no pre-flight leg differs on a response channel with a mutated value its relation resolves on: "
                      "there is no manifestation witness")
    witness_difference, leg_request, witness_id, relation = witness
    clean_records = {run: record for run, record in clean_runs.items() if run.startswith("plan/")}
    first_refusal = None
    for difference in plan_side:
        step = steps[difference.run_id.removeprefix("plan/")]
        interface, operation = operations[step["operationId"]]
        head = _signature_head(interface, operation)
        if head is None:
            first_refusal = first_refusal or f"{difference.run_id}: no signature shape is derived for a {interface['kind']} operation"
            continue
        channel, observed = difference.channel, difference.value
        summary = f"{mutant.description()}: {channel}{difference.pointer} becomes {json.dumps(observed)[:200]}"
        probe = {
            "probeId": mutant.probe_id,
            "probeClass": "defect",
            "behaviorId": behaviour["id"],
            "expectedClean": False,
            "rationale": f"Derived from generated mutant {mutant.mutant_id} ({mutant.mutator_name}); "
                         f"its designated oracle {oracle_id} resolved to failure on the mutated arm.",
            "defects": [{
                "behaviorId": behaviour["id"],
                "defectId": "D-001",
                "severity": behaviour["severity"],
                "source": "controlled-mutation",
                "summary": summary[:500],
                "manifestationWitness": {
                    "legId": witness_id,
                    "interfaceId": leg_request["interfaceId"],
                    "operationId": leg_request["operationId"],
                    "inputs": dict(leg_request["channels"]),
                    "relation": relation,
                },
            }],
            "defectSignature": {
                **head,
                "observableChannel": channel,
                "condition": {
                    "selector": {"inputBinding": _signature_binding(step)},
                    "predicate": {"op": "equality", "operands": [
                        {"pointer": f"/interactions/observed/{channel}{difference.pointer}"}, {"literal": observed}]},
                },
            },
            "qualification": {"route": "controlled-mutation", "expectedObservableFailure": summary[:500]},
        }
        why = _signature_refusal(contract, probe, mutated_runs[difference.run_id], clean_records)
        if why is not None:
            first_refusal = first_refusal or f"{difference.run_id} {channel}{difference.pointer}: {why}"
            continue
        mutation = {**mutant.to_mutation(), "probeId": mutant.probe_id}
        return Derived(mutant.mutant_id, probe, mutation, f"derived on {behaviour['id']} ({oracle_id}); {head['interfaceKind']} "
                       f"signature {channel}{difference.pointer} at step {step['stepId']}; "
                       f"witness leg {witness_difference.run_id} {witness_difference.channel}{witness_difference.pointer}")
    return refuse(f"no differing plan value gives a signature that could qualify ({len(plan_side)} tried); "
                  f"the smallest: {first_refusal}")


__all__ = ["EVIDENCE_ORDER", "RESPONSE_CHANNELS", "Derived", "EvidenceDifference", "derive_probe", "evidence_differences",
           "evidence_view", "signature_matches"]
