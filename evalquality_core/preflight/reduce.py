"""Pre-flight reduction (preflight-adapter.md §2): ``reduce_preflight(plan, observations) → PreflightVerdict``.

Pure. Indexes the port's observations by echoed probe id, projects each (AD-11, ``projection.py``: volatile fields pruned),
builds the baseline evidence each witness relation is resolved over, and computes one check per planned
check, in plan order. The six check kinds are the rows of ``CHECK_RULES``; every note is one of the
exact strings in ``NOTES``. The non-obvious rule: a clean leg that issued the fault leg's own request
*and* received its answer is dropped before ``seeded-faults-scoped`` looks at it (the 1.4.0 rule, §2.4),
and a check left with no clean leg fails, saying why.

Ours, beyond the reference: when the plan gave a witness a clean twin (``plan.py``: the witness's own
inputs sent to the clean system), ``seeded-faults-scoped`` looks at the twin first and is **failed**
unless the twin answered and the witness does not hold on it (``false`` or ``insufficient-evidence``):
``scoped-twin-missing`` / ``scoped-holds-clean`` in ``NOTES``. The twin is never dropped as "answered
alike": it issues the fault leg's request by construction, so answering alike is exactly the witness
holding on clean behaviour, the case this check exists to refuse.

Multi-call legs (``plan.py``): the leg's observation carries its calls' observations under ``calls``, in
call order; each becomes evidence keyed by its call id (``sequence`` 2, 3, …), bound beside the leg's own
wherever the leg's evidence is bound. Where a witness relation is resolved over *another* leg's answers
(a clean leg of ``seeded-faults-scoped``), that leg's own call is bound under the witness's leg id and its
i-th call under the witness's i-th call id when both call the same operation; a clean leg left without
all of the witness's calls bound has nothing to contradict (it is never resolved: an unbound call under
``not`` would read as an answer). The clean twin makes the witness's own calls, so it is always judged. Calls' projections enter the fixture digest as
``<leg>/<call>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.canonical.digest import digest_artifact, digest_composite
from evalquality_core.evaluate.pointers import as_wire, decode_tokens
from evalquality_core.evaluate.resolution import ResolutionContext, resolve_check
from evalquality_core.faults import RuntimeFault
from evalquality_core.preflight.plan import (
    PlannedCall,
    PlannedCheck,
    PlannedLeg,
    PreflightPlan,
    declares_request_keys,
)
from evalquality_core.preflight.projection import project, state_reset_projection
from evalquality_core.preflight.volatility import without_volatile_headers
from evalquality_core.registries import PreflightCheckKind, PreflightCheckOutcome

#: The verdict schema we write (§2.5: v2 adds ``interfaceId`` on every check).
PREFLIGHT_VERDICT_SCHEMA_VERSION = 2
#: The regex budget the reference passes when resolving witness relations (§2.2).
WITNESS_REGEX_BUDGET = 1_000_000
#: Where reduction faults are reported.
VERDICT_PATH = "PreflightVerdict"

#: The exact note strings of §2.3 and §2.4 (``str.format`` fields in braces).
NOTES: Mapping[str, str] = {
    "no-observation": 'leg "{leg}" produced no observation',
    "bad-echo": 'leg "{leg}" echoed an identifier the request did not carry',
    "no-inputs": "The operation declares no inputs in any channel.",
    "no-witness": "The operation declares request keys and no sensitivity witness.",
    "witness-leg-missing": 'witness leg "{leg}" produced no observation',
    "witness-false": "The witness relation resolved false.",
    "witness-insufficient": "The witness relation resolved insufficient-evidence.",
    "observe-missing": "a control-observe leg produced no observation",
    "projections-differ": 'the projections of "{a}" and "{b}" differ',
    "control-missing": 'control leg "{leg}" produced no observation',
    "control-anomaly": 'control leg "{leg}" observed {anomaly}',
    "scoped-alone": (
        "{defect}: the operation has no leg besides the fault leg, so nothing here establishes that the "
        "defect is scoped to it"
    ),
    "scoped-all-alike": (
        "{defect}: every other leg of the operation issued the fault leg's own request and received its "
        "answer ({legs}), so nothing here establishes that the defect is scoped to it"
    ),
    "scoped-fires-clean": '{defect}: the manifestation witness fires on clean leg "{leg}"',
    # Ours (module docstring): the witness's own inputs on the clean system.
    "scoped-holds-clean": (
        '{defect}: the manifestation witness also holds on the clean system for its own inputs (clean leg "{leg}"), '
        "so it does not tell the defect from clean behaviour"
    ),
    "scoped-twin-missing": (
        '{defect}: clean leg "{leg}" (the witness\'s own inputs on the clean system) produced no observation, '
        "so nothing shows the witness fails on clean behaviour"
    ),
    "fired-no-witness": "{defect}: the defect declares no manifestation witness, so it cannot be observed to fire",
    "fired-no-observation": "{defect}: the fault leg produced no observation",
    "fired-resolved": "{defect}: the manifestation witness resolved {resolution} on its own fault leg",
}


@dataclass(frozen=True)
class ComputedCheck:
    """One computed check, before it becomes a verdict row."""

    outcome: PreflightCheckOutcome
    note: str | None
    interface_id: str | None
    operation_id: str | None


@dataclass(frozen=True, eq=False)
class LegState:
    """What the reducer knows of one planned leg: its observation (if any), projection and evidence."""

    leg: PlannedLeg
    observation: Mapping[str, Any] | None
    projection: Mapping[str, Any] | None
    evidence: Mapping[str, Any] | None
    #: A multi-call leg's calls, in call order: (call id, projection, evidence).
    calls: tuple[tuple[str, Mapping[str, Any], Mapping[str, Any]], ...] = ()

    def bound(
        self, as_leg: str | None = None, as_calls: Sequence[Mapping[str, Any]] | None = None
    ) -> dict[str, Mapping[str, Any]]:
        """This leg's evidence as a relation binds it: its own under ``as_leg`` (default its id), each call
        under its own id; or, with ``as_calls`` (another leg's calls), its i-th call under the i-th of those
        ids when both call the same operation (module docstring). Empty without evidence."""
        if self.evidence is None:
            return {}
        bound: dict[str, Mapping[str, Any]] = {as_leg or self.leg.leg_id: self.evidence}
        if as_calls is None:
            bound.update({call_id: evidence for call_id, _, evidence in self.calls})
            return bound
        for wanted, (_, _, evidence) in zip(as_calls, self.calls, strict=False):
            if (wanted["interfaceId"], wanted["operationId"]) == (evidence["interfaceId"], evidence["operationId"]):
                bound[wanted["callId"]] = evidence
        return bound


#: Resolves a witness relation over ``{legId: evidence}`` for an operation → true/false/insufficient-evidence.
Resolver = Callable[[Mapping[str, Any], Mapping[str, Mapping[str, Any]], Mapping[str, Any], PreflightPlan], str]


# --- projection and evidence (§2.2) -------------------------------------------------------------


def _unwrap(body: Mapping[str, Any]) -> Any:
    return body["value"] if body.get("kind") in ("json", "text") else None


def _object_or_null(tagged: Any) -> Any:
    if isinstance(tagged, Mapping) and tagged.get("kind") == "json" and isinstance(tagged.get("value"), dict):
        return tagged["value"]
    return None


def call_inputs_of(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The call inputs of a leg in the record-8 shape: nine channels plus ``bodyEncoding``.

    A tagged body counts only when it is a JSON object. A raw body (contract 7 / probe 6) is recorded
    as ``{"base64": …}`` with ``bodyEncoding: "raw"`` and its content type in ``header`` under
    ``Content-Type`` unless the header already names one (run_record.py states this reading).
    """
    body = inputs.get("body")
    header = inputs.get("header")
    raw = isinstance(body, Mapping) and body.get("kind") == "raw"
    if raw:
        header = dict(header or {})
        if not any(key.lower() == "content-type" for key in header):
            header["Content-Type"] = body["contentType"]
    return {
        "path": inputs.get("path"),
        "query": inputs.get("query"),
        "header": header,
        "body": {"base64": body["base64"]} if raw else _object_or_null(body),
        "argument": inputs.get("argument"),
        "option": inputs.get("option"),
        "environment": inputs.get("environment"),
        "stdin": _object_or_null(inputs.get("stdin")),
        "arguments": inputs.get("arguments"),
        "bodyEncoding": "raw" if raw else None,
    }


def evidence_of(
    leg: PlannedLeg | PlannedCall, observation: Mapping[str, Any], projection: Mapping[str, Any], sequence: int = 1
) -> dict[str, Any]:
    """The sealed-run-record ``Observation`` a witness relation is resolved over (§2.2, provenance baseline);
    a multi-call leg's call is one too, at its ``sequence`` in the leg (2, 3, …)."""
    kind = observation["kind"]
    absent = {"kind": "absent"}
    if kind == "api":
        # Ours (issue 34): the declared volatile headers are not evidence (no witness may read them).
        status, headers = observation["status"], without_volatile_headers(observation["headers"], leg.operation)
    elif kind == "mcp":
        status, headers = (1 if observation["isError"] else 0), None
    else:
        status, headers = None, None
    return {
        "observationId": leg.call_id if isinstance(leg, PlannedCall) else leg.leg_id,
        "sequence": sequence,
        "interfaceId": leg.interface_id,
        "operationId": leg.operation_id,
        "provenance": "baseline",
        "principal": None,
        "callInputs": call_inputs_of(leg.inputs),
        "responseBody": _unwrap(projection["body"]),
        "responseHeaders": headers,
        "responseStatus": status,
        "stdout": observation["stdout"] if kind == "cli" else absent,
        "stderr": observation["stderr"] if kind == "cli" else absent,
        "exitCode": observation.get("exitCode") if kind in ("cli", "mcp") else None,
        "artifacts": dict(observation["artifacts"]) if kind == "cli" else {},
    }


def _safe_digest(value: Any) -> str | None:
    """A digest, or None when RFC 8785 cannot serialise the value (then it equals nothing, §2.4)."""
    try:
        return digest_artifact(value)
    except (RuntimeFault, ValueError, TypeError, OverflowError):
        return None


# --- resolution of witness relations --------------------------------------------------------------


def resolve_relation(
    relation: Mapping[str, Any],
    evidence_by_leg: Mapping[str, Mapping[str, Any]],
    operation: Mapping[str, Any],
    plan: PreflightPlan,
) -> str:
    """Resolve an AD-4 relation over ``{legId: evidence}`` → ``"true"``/``"false"``/``"insufficient-evidence"``.

    Uses the package's check evaluator with this operation's collection predicate (every bound leg
    answers the same operation) and the contract's reference sets, at the regex budget of §2.2.
    """
    locations = (operation.get("responseDescriptor") or {}).get("collectionLocations") or []
    tails = [decode_tokens(location["pointer"]) for location in locations]
    context = ResolutionContext(
        bound=evidence_by_leg,
        reference_sets={
            set_id: {"keys": plan.reference_set_keys[set_id], "members": members}
            for set_id, members in plan.reference_sets.items()
        },
        collection_locations=frozenset((leg_id, tail) for leg_id in evidence_by_leg for tail in tails),
        regex_step_budget=WITNESS_REGEX_BUDGET,
        artifact_path=f"EvalContract.permittedInterfaces.operations[operationId={operation['operationId']}]",
    )
    return resolve_check(relation, context).resolution


# --- the six checks (§2.3, §2.4) ----------------------------------------------------------------


def _interface_present(check: PlannedCheck, states: Mapping[str, LegState], _plan: PreflightPlan, _r: Resolver) -> ComputedCheck:
    for leg_id in check.leg_ids:
        state = states[leg_id]
        if state.observation is None:
            return ComputedCheck("failed", NOTES["no-observation"].format(leg=leg_id), check.interface_id, check.operation_id)
        request, observation = state.leg.request, state.observation
        if any(observation[key] != request[key] for key in ("probeId", "interfaceId", "operationId")):
            return ComputedCheck("failed", NOTES["bad-echo"].format(leg=leg_id), check.interface_id, check.operation_id)
    return ComputedCheck("satisfied", None, check.interface_id, check.operation_id)


def _input_sensitivity(check: PlannedCheck, states: Mapping[str, LegState], plan: PreflightPlan, resolve: Resolver) -> ComputedCheck:
    ids = (check.interface_id, check.operation_id)
    assert check.operation is not None
    if check.witness is None:
        if not declares_request_keys(check.operation):
            return ComputedCheck("exempt", NOTES["no-inputs"], *ids)
        return ComputedCheck("failed", NOTES["no-witness"], *ids)
    evidence: dict[str, Mapping[str, Any]] = {}
    for leg_id in check.leg_ids:
        state = states[leg_id]
        if state.evidence is None:
            return ComputedCheck("failed", NOTES["witness-leg-missing"].format(leg=leg_id), *ids)
        evidence.update(state.bound())
    resolution = resolve(check.witness["relation"], evidence, check.operation, plan)
    if resolution == "true":
        return ComputedCheck("satisfied", None, *ids)
    if resolution == "false":
        return ComputedCheck("failed", NOTES["witness-false"], *ids)
    return ComputedCheck("failed", NOTES["witness-insufficient"], *ids)


def _state_reset(check: PlannedCheck, states: Mapping[str, LegState], _plan: PreflightPlan, _r: Resolver) -> ComputedCheck:
    first, last = (states[leg_id] for leg_id in check.leg_ids)
    if first.projection is None or last.projection is None:
        return ComputedCheck("failed", NOTES["observe-missing"], None, None)
    # 8.0.0: an operation listing stateResetPointers is compared on those values (and its transport fields) only.
    a = {key: value for key, value in state_reset_projection(first.projection, first.leg.operation).items() if key != "legId"}
    b = {key: value for key, value in state_reset_projection(last.projection, last.leg.operation).items() if key != "legId"}
    if digest_artifact(a) == digest_artifact(b):
        return ComputedCheck("satisfied", None, None, None)
    return ComputedCheck("failed", NOTES["projections-differ"].format(a=first.leg.leg_id, b=last.leg.leg_id), None, None)


def control_anomaly(observation: Mapping[str, Any]) -> str | None:
    """What makes a control leg's answer anomalous: api status ≥ 400, cli exit ≠ 0, mcp isError (§2.3)."""
    if observation["kind"] == "api" and observation["status"] >= 400:
        return f"status {observation['status']}"
    if observation["kind"] == "cli" and observation["exitCode"] != 0:
        return f"exit code {observation['exitCode']}"
    if observation["kind"] == "mcp" and observation["isError"]:
        return "a tool error"
    return None


def _clean_control(check: PlannedCheck, states: Mapping[str, LegState], _plan: PreflightPlan, _r: Resolver) -> ComputedCheck:
    for leg_id in check.leg_ids:
        observation = states[leg_id].observation
        if observation is None:
            return ComputedCheck("failed", NOTES["control-missing"].format(leg=leg_id), None, None)
        anomaly = control_anomaly(observation)
        if anomaly is not None:
            return ComputedCheck("failed", NOTES["control-anomaly"].format(leg=leg_id, anomaly=anomaly), None, None)
    return ComputedCheck("satisfied", None, None, None)


def _answered_alike(leg: LegState, fault: LegState) -> bool:
    """Both the request (probe id blanked) and the evidence (observation id blanked) digest equal (§2.4)."""
    if leg.evidence is None or fault.evidence is None:
        return False
    request_a = _safe_digest({**leg.leg.request, "probeId": ""})
    request_b = _safe_digest({**fault.leg.request, "probeId": ""})
    answer_a = _safe_digest([{**leg.evidence, "observationId": ""}, *(call[2] for call in leg.calls)])
    answer_b = _safe_digest([{**fault.evidence, "observationId": ""}, *(call[2] for call in fault.calls)])
    return None not in (request_a, answer_a) and request_a == request_b and answer_a == answer_b


def _seeded_faults_scoped(check: PlannedCheck, states: Mapping[str, LegState], plan: PreflightPlan, resolve: Resolver) -> ComputedCheck:
    assert check.witness is not None and check.operation is not None
    ids = (check.interface_id, check.operation_id)
    defect, witness_leg = check.defect_id, check.witness["legId"]
    witness_calls = list(check.witness.get("calls") or [])
    fault = states[witness_leg]
    twin_id = check.clean_twin_leg_id
    if twin_id is not None:
        # The twin must *show* the witness failing on clean behaviour: no answer shows nothing.
        twin = states[twin_id]
        if twin.evidence is None:
            return ComputedCheck("failed", NOTES["scoped-twin-missing"].format(defect=defect, leg=twin_id), *ids)
        if resolve(check.witness["relation"], twin.bound(witness_leg, witness_calls), check.operation, plan) == "true":
            return ComputedCheck("failed", NOTES["scoped-holds-clean"].format(defect=defect, leg=twin_id), *ids)
    dropped: list[str] = []
    examined: list[LegState] = []
    for leg_id in check.clean_leg_ids:
        state = states[leg_id]
        if leg_id != twin_id and _answered_alike(state, fault):
            dropped.append(leg_id)
        else:
            examined.append(state)
    if not examined:
        if not dropped:
            return ComputedCheck("failed", NOTES["scoped-alone"].format(defect=defect), *ids)
        quoted = ", ".join(f'"{leg_id}"' for leg_id in dropped)
        return ComputedCheck("failed", NOTES["scoped-all-alike"].format(defect=defect, legs=quoted), *ids)
    for state in examined:
        if state.evidence is None:
            continue  # nothing to contradict
        # The relation addresses /interactions/<witness.legId>/…, so the clean evidence sits under that key.
        bound = state.bound(witness_leg, witness_calls)
        if len(bound) < 1 + len(witness_calls):
            # A clean leg that did not make the witness's calls cannot show the relation (an unbound call
            # is not an answer: under ``not`` it would read as one): nothing to contradict.
            continue
        if resolve(check.witness["relation"], bound, check.operation, plan) == "true":
            return ComputedCheck("failed", NOTES["scoped-fires-clean"].format(defect=defect, leg=state.leg.leg_id), *ids)
    return ComputedCheck("satisfied", defect, *ids)


def _seeded_fault_fired(check: PlannedCheck, states: Mapping[str, LegState], plan: PreflightPlan, resolve: Resolver) -> ComputedCheck:
    defect = check.defect_id
    if check.witness is None:
        return ComputedCheck("failed", NOTES["fired-no-witness"].format(defect=defect), None, None)
    assert check.operation is not None
    ids = (check.interface_id, check.operation_id)
    state = states[check.witness["legId"]]
    if state.evidence is None:
        return ComputedCheck("failed", NOTES["fired-no-observation"].format(defect=defect), *ids)
    resolution = resolve(check.witness["relation"], state.bound(), check.operation, plan)
    if resolution == "true":
        return ComputedCheck("satisfied", defect, *ids)
    return ComputedCheck("failed", NOTES["fired-resolved"].format(defect=defect, resolution=resolution), *ids)


CheckFunction = Callable[[PlannedCheck, Mapping[str, LegState], PreflightPlan, Resolver], ComputedCheck]


@dataclass(frozen=True)
class CheckRule:
    """One row of the check table: the spec's check kind, its section, and the rule computing it."""

    kind: PreflightCheckKind
    section: str
    rule: CheckFunction


#: The six pre-flight checks (§2.3 ``CHECK_KINDS`` order).
CHECK_RULES: tuple[CheckRule, ...] = (
    CheckRule("interface-present", "§2.3", _interface_present),
    CheckRule("input-sensitivity", "§2.3", _input_sensitivity),
    CheckRule("state-reset", "§2.3", _state_reset),
    CheckRule("clean-control", "§2.3", _clean_control),
    CheckRule("seeded-faults-scoped", "§2.4", _seeded_faults_scoped),
    CheckRule("seeded-fault-fired", "§2.3", _seeded_fault_fired),
)
_RULE_BY_KIND: Mapping[str, CheckRule] = {row.kind: row for row in CHECK_RULES}


# --- the reducer ----------------------------------------------------------------------------------


def index_observations(plan: PreflightPlan, observations: Sequence[Any]) -> dict[str, LegState]:
    """§2.1: index by echoed probe id, refuse a repeat or a wrong kind, project and build evidence per leg."""
    by_probe: dict[str, Mapping[str, Any]] = {}
    for observation in observations:
        wire = as_wire(observation)
        probe_id = wire["probeId"]
        if probe_id in by_probe:
            raise RuntimeFault(
                "port-contract-violation",
                VERDICT_PATH,
                f'two observations echoed the probe id "{probe_id}", so the legs cannot be told apart',
            )
        by_probe[probe_id] = wire
    states: dict[str, LegState] = {}
    for leg in plan.legs:
        observation = by_probe.get(leg.leg_id)
        if observation is None:
            states[leg.leg_id] = LegState(leg, None, None, None)
            continue
        if observation["kind"] != leg.request["kind"]:
            raise RuntimeFault(
                "port-contract-violation",
                VERDICT_PATH,
                f'leg "{leg.leg_id}" asked a {leg.request["kind"]} question and the port answered {observation["kind"]}',
            )
        projection = project(observation, leg.operation)
        calls = _call_states(leg, observation)
        states[leg.leg_id] = LegState(leg, observation, projection, evidence_of(leg, observation, projection), calls)
    if all(state.observation is None for state in states.values()):
        raise RuntimeFault(
            "port-contract-violation",
            VERDICT_PATH,
            f"no observation echoed any of the {len(plan.legs)} planned probe ids",
        )
    return states


def _call_states(
    leg: PlannedLeg, observation: Mapping[str, Any]
) -> tuple[tuple[str, Mapping[str, Any], Mapping[str, Any]], ...]:
    """A multi-call leg's calls from its observation's ``calls`` (module docstring); each must answer
    its planned call, in order, or the port broke its contract."""
    answered = observation.get("calls") or []
    if len(answered) != len(leg.calls):
        raise RuntimeFault(
            "port-contract-violation",
            VERDICT_PATH,
            f'leg "{leg.leg_id}" planned {len(leg.calls)} further call(s) and the port answered {len(answered)}',
        )
    states = []
    for index, (call, wire) in enumerate(zip(leg.calls, answered, strict=True)):
        wire = as_wire(wire)
        if wire.get("kind") != call.request["kind"] or any(
            wire.get(key) != call.request[key] for key in ("probeId", "interfaceId", "operationId")
        ):
            raise RuntimeFault(
                "port-contract-violation",
                VERDICT_PATH,
                f'call "{call.call_id}" of leg "{leg.leg_id}" was answered by an observation of another call',
            )
        projection = {**project(wire, call.operation), "legId": f"{leg.leg_id}/{call.call_id}"}
        states.append((call.call_id, projection, evidence_of(call, wire, project(wire, call.operation), index + 2)))
    return tuple(states)


def fixture_digest(states: Mapping[str, LegState]) -> str:
    """``digestComposite({observations: projections of every observed leg, sorted by legId})`` (§2.5);
    a multi-call leg's calls count as observed legs ``<leg>/<call>`` (module docstring)."""
    projections = sorted(
        [
            *(state.projection for state in states.values() if state.projection is not None),
            *(call[1] for state in states.values() for call in state.calls),
        ],
        key=lambda projection: projection["legId"].encode("utf-16-be"),  # code-unit order
    )
    return digest_composite({"observations": projections})


def reduce_preflight_wire(
    plan: PreflightPlan, observations: Sequence[Any], *, resolve: Resolver = resolve_relation
) -> dict[str, Any]:
    """The verdict as wire JSON (schema v2). ``reduce_preflight`` wraps this in the verdict model."""
    states = index_observations(plan, observations)
    checks = []
    for check in plan.checks:
        result = _RULE_BY_KIND[check.kind].rule(check, states, plan, resolve)
        checks.append(
            {
                "kind": check.kind,
                "interfaceId": result.interface_id,
                "operationId": result.operation_id,
                "outcome": result.outcome,
                "note": result.note,
            }
        )
    return {
        "schemaVersion": PREFLIGHT_VERDICT_SCHEMA_VERSION,
        "parentDigest": None,
        "revisionCount": 0,
        "runId": plan.run_id,
        "fixtureDigest": fixture_digest(states),
        "passed": all(check["outcome"] != "failed" for check in checks),
        "checks": checks,
    }


def reduce_preflight(plan: PreflightPlan, observations: Sequence[Any], *, resolve: Resolver = resolve_relation) -> Any:
    """Reduce the port's observations against the plan into a ``PreflightVerdict`` (§2).

    Raises ``RuntimeFault('port-contract-violation')`` for a repeated probe id, an answer of the wrong
    kind, or no answer at all; a failed check is a verdict, never a fault.
    """
    wire = reduce_preflight_wire(plan, observations, resolve=resolve)
    from evalquality_core.artifacts.base import read_artifact
    from evalquality_core.artifacts.preflight_verdict import PreflightVerdict

    return read_artifact(PreflightVerdict, wire, VERDICT_PATH)
