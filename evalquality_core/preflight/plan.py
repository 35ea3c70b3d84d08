"""Pre-flight planning (preflight-adapter.md §1): ``plan_preflight(contract, probes, run_id) → PreflightPlan``.

Pure and synchronous. Takes the eval contract and the probes (validated models or their wire JSON) and
returns the legs to send through the probe port, in port-call order, plus the checks the reducer will
compute, in verdict order. The one decision that is not obvious: the clean legs of a seeded fault are
*every* leg already registered for the same (interface, operation) pair; the 1.4.0 "answered alike"
drop happens only in the reducer (§1.7 version note, §2.4).

Ours, beyond the reference (``clean_witness_legs=True``, what the harness flows ask for): where a
seeded-fault leg runs against a seeded system (a mutation of the clean one), nothing in the reference's
plan sends the witness's *own inputs* to the clean system, so a witness that holds on clean behaviour
too would pass ``seeded-faults-scoped`` and "catch" something that is not a defect. So each witness
also gets a **clean twin**: a leg with the witness's inputs that runs on the clean system (purpose
``seeded-fault-clean``, id minted from ``<witness legId>-clean``), planned just before its fault leg,
or an identical clean leg the plan already has (same request, leg id aside), reused rather than planned
twice. The reducer refuses the witness unless the twin answered and the witness does not hold on it.

Multi-call legs (ours, docs/reference/multi-call-legs.md): a sensitivity-witness leg or a manifestation
witness may list ``calls``, further calls made after the leg's own, in order, in the same workspace and
server or tool-server session. They ride in the leg's request under ``calls`` (so the leg cache key
covers every call) and are planned with it as ``PlannedLeg.calls``; a leg without calls plans exactly
as before. Every call must name an operation of the leg's own interface (one session answers them all).
A clean twin carries its witness's calls too, under the same call ids.
The reference's own surfaces (the ``eval-quality preflight`` CLI, the conformance chains) plan without
twins, since their one port answers fault and clean legs alike (§1.7, §2.4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalquality_core.artifacts.base import check_stamp
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.probe import Probe
from evalquality_core.canonical import canonical_bytes
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.registries import PREFLIGHT_INTERFACE_KINDS, LegPurpose, PreflightCheckKind

#: The probe schema versions pre-flight reads (§1.1): every stamp the Probe model reads.
PROBE_SCHEMA_VERSIONS: tuple[int, ...] = Probe.ACCEPTED_SCHEMA_VERSIONS
#: The contract stamps pre-flight reads: every stamp the EvalContract model reads.
CONTRACT_SCHEMA_VERSIONS: tuple[int, ...] = EvalContract.ACCEPTED_SCHEMA_VERSIONS
#: Bases of the minted control-leg ids (§1.4).
CONTROL_OBSERVE_BASE = "preflight-control-observe"
CONTROL_MUTATE_BASE = "preflight-control-mutate"
#: A witness's clean twin is minted from its own leg id plus this suffix (module docstring).
CLEAN_TWIN_SUFFIX = "-clean"
#: The leg kinds that run against the clean system: any of them may stand as a witness's clean twin.
CLEAN_SYSTEM_PURPOSES: frozenset[str] = frozenset(
    {"sensitivity", "control-observe", "control-mutate", "control-reset", "seeded-fault-clean"}
)

#: Request channels per interface kind, in wire order (§1.6, artifacts.md §2.2).
TRANSPORT_CHANNELS: tuple[str, ...] = ("path", "query", "header", "body")
COMMAND_CHANNELS: tuple[str, ...] = ("argument", "option", "environment", "stdin")
#: A tool call has one channel, its arguments (§1.6, 2.0.0 and later).
TOOL_CHANNELS: tuple[str, ...] = ("arguments",)
_CHANNELS_BY_KIND: Mapping[str, tuple[str, ...]] = {
    "api": TRANSPORT_CHANNELS,
    "cli": COMMAND_CHANNELS,
    "mcp": TOOL_CHANNELS,
}


@dataclass(frozen=True, eq=False)
class PlannedCall:
    """One further call of a multi-call leg (module docstring): its wire request (``probeId`` = call id)."""

    call_id: str
    interface_id: str
    operation_id: str
    request: Mapping[str, Any]
    operation: Mapping[str, Any]
    inputs: Mapping[str, Any]


@dataclass(frozen=True, eq=False)
class PlannedLeg:
    """One leg: a request sent through the probe port once, and where it came from.

    ``request`` is the wire ``ProbeRequest`` (its ``probeId`` is the leg id); ``operation`` is the
    contract's operation object; ``artifact_path`` names where the leg id was declared (or minted).
    """

    leg_id: str
    purpose: LegPurpose
    interface_id: str
    operation_id: str
    interface_kind: str
    request: Mapping[str, Any]
    operation: Mapping[str, Any]
    inputs: Mapping[str, Any]
    artifact_path: str
    #: A multi-call leg's further calls, in call order (empty: a one-call leg).
    calls: tuple[PlannedCall, ...] = ()


@dataclass(frozen=True, eq=False)
class PlannedCheck:
    """One check the reducer computes. Which fields matter depends on ``kind`` (§1.5, §1.7, §1.8)."""

    kind: PreflightCheckKind
    interface_id: str | None
    operation_id: str | None
    leg_ids: tuple[str, ...] = ()
    witness: Mapping[str, Any] | None = None
    operation: Mapping[str, Any] | None = None
    defect_id: str | None = None
    clean_leg_ids: tuple[str, ...] = ()
    #: ``seeded-faults-scoped`` only, with ``clean_witness_legs``: the clean leg that sent the witness's
    #: own inputs to the clean system (also in ``clean_leg_ids``; exempt from the answered-alike drop).
    clean_twin_leg_id: str | None = None


@dataclass(frozen=True, eq=False)
class PreflightPlan:
    """The plan: legs in port-call order, checks in verdict order, and the contract's reference sets."""

    run_id: str
    legs: tuple[PlannedLeg, ...]
    checks: tuple[PlannedCheck, ...]
    reference_sets: Mapping[str, list[Any]] = field(default_factory=dict)
    reference_set_keys: Mapping[str, list[str]] = field(default_factory=dict)

    def leg(self, leg_id: str) -> PlannedLeg:
        """The planned leg with this id (a ``KeyError`` if none)."""
        for leg in self.legs:
            if leg.leg_id == leg_id:
                return leg
        raise KeyError(leg_id)


def _wire(value: Any) -> Any:
    """The wire JSON of a model (camelCase, explicit nulls), or the value itself if already JSON."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True)
    return value


def _operation_path(interface_id: str, operation_id: str) -> str:
    return f"EvalContract.permittedInterfaces[logicalId={interface_id}].operations[operationId={operation_id}]"


def check_probe_stamps(probes: Sequence[Any]) -> None:
    """§1.1: every probe's ``schemaVersion`` must be one pre-flight reads, checked before parsing.

    A probe that is not an object or whose stamp is missing or not an integer cannot be parsed at
    all: ``schema-parse-failure`` at ``Probe`` (§2.6). An integer we do not read is
    ``schema-version-mismatch`` at ``Probe[probeId=…].schemaVersion`` (7.0.0).
    """
    for probe in probes:
        stamp = probe.get("schemaVersion") if isinstance(probe, Mapping) else None
        if not isinstance(stamp, int) or isinstance(stamp, bool):
            what = "not an object" if not isinstance(probe, Mapping) else f"stamped {stamp!r}, not an integer"
            raise RuntimeFault("schema-parse-failure", "Probe", f"a probe is {what}")
        if stamp not in PROBE_SCHEMA_VERSIONS:
            probe_id = probe.get("probeId")
            where = f"Probe[probeId={probe_id}]" if isinstance(probe_id, str) else "Probe"
            accepted = ", ".join(str(v) for v in PROBE_SCHEMA_VERSIONS)
            raise RuntimeFault(
                "schema-version-mismatch",
                f"{where}.schemaVersion",
                f"schemaVersion {stamp!r} is not a probe version pre-flight reads ({accepted})",
            )


def _check_stamps(contract: Mapping[str, Any], probes: Sequence[Mapping[str, Any]]) -> None:
    """§1.1: every probe's stamp, then the contract's, before anything is planned."""
    check_probe_stamps(probes)
    check_stamp(EvalContract, contract, "EvalContract")


def _check_interface_identifiers(contract: Mapping[str, Any]) -> None:
    """7.0.1: two permitted interfaces sharing a ``logicalId`` are refused, as compile refuses them."""
    seen: set[str] = set()
    for interface in contract["permittedInterfaces"]:
        logical_id = interface["logicalId"]
        if logical_id in seen:
            raise StructuralFailure(
                "duplicate-interface-identifier",
                f"EvalContract.permittedInterfaces[logicalId={logical_id}]",
                f'two permitted interfaces share the logicalId "{logical_id}"',
            )
        seen.add(logical_id)


def _check_interface_kinds(contract: Mapping[str, Any]) -> None:
    for interface in contract["permittedInterfaces"]:
        if interface["kind"] not in PREFLIGHT_INTERFACE_KINDS:
            raise StructuralFailure(
                "unsupported-interface-kind",
                f"EvalContract.permittedInterfaces[logicalId={interface['logicalId']}].kind",
                f'interface kind "{interface["kind"]}" is not one pre-flight can probe '
                f"({', '.join(PREFLIGHT_INTERFACE_KINDS)})",
            )


def declares_request_keys(operation: Mapping[str, Any]) -> bool:
    """Whether the operation declares any request key (required or permitted) in any channel."""
    shape = operation.get("requestShape") or {}
    return any(
        (channel or {}).get("requiredKeys") or (channel or {}).get("permittedKeys") for channel in shape.values()
    )


def _declares_required_keys(operation: Mapping[str, Any]) -> bool:
    shape = operation.get("requestShape") or {}
    return any((channel or {}).get("requiredKeys") for channel in shape.values())


def _empty_inputs(kind: str) -> dict[str, Any]:
    if kind == "cli":
        return {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}}
    if kind == "mcp":
        return {"arguments": {}}
    return {"path": {}, "query": {}, "header": {}, "body": {"kind": "absent"}}


def control_inputs_of(kind: str, operation: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """§1.5: the witness's first leg inputs, else empty inputs when nothing is required, else none."""
    witness = operation.get("sensitivityWitness")
    if witness is not None:
        return witness["legs"][0]["inputs"]
    if not _declares_required_keys(operation):
        return _empty_inputs(kind)
    return None


def request_of(
    leg_id: str, interface: Mapping[str, Any], operation: Mapping[str, Any], inputs: Mapping[str, Any]
) -> dict[str, Any]:
    """§1.6: the wire ``ProbeRequest`` of a leg, with the correlation triple ``probeId = leg id``."""
    interface_id = interface["logicalId"]
    operation_id = operation["operationId"]
    base = {"probeId": leg_id, "interfaceId": interface_id, "operationId": operation_id}
    command_shaped = any(key in inputs for key in COMMAND_CHANNELS)
    transport_shaped = any(key in inputs for key in TRANSPORT_CHANNELS)
    tool_shaped = any(key in inputs for key in TOOL_CHANNELS)
    if interface["kind"] == "mcp":
        if command_shaped or transport_shaped or not tool_shaped:
            raise StructuralFailure(
                "undeclared-mandatory-input",
                _operation_path(interface_id, operation_id),
                "supplies command or transport channels to an operation that calls a tool",
            )
        return {
            "kind": "mcp",
            **base,
            "toolName": operation["toolName"],
            "channels": {"arguments": inputs["arguments"]},
        }
    if interface["kind"] == "cli":
        if transport_shaped or tool_shaped or not command_shaped:
            raise StructuralFailure(
                "undeclared-mandatory-input",
                _operation_path(interface_id, operation_id),
                "supplies transport channels to an operation that runs behind a command",
            )
        return {
            "kind": "cli",
            **base,
            "executable": operation["invocation"]["executable"],
            "subcommandPath": list(operation["invocation"]["subcommandPath"]),
            "channels": {name: inputs[name] for name in COMMAND_CHANNELS},
        }
    if command_shaped or tool_shaped or not transport_shaped:
        raise StructuralFailure(
            "undeclared-mandatory-input",
            _operation_path(interface_id, operation_id),
            "supplies command channels to an operation that speaks HTTP",
        )
    return {
        "kind": "api",
        **base,
        "method": operation["method"],
        "pathTemplate": operation["pathTemplate"],
        "channels": {name: inputs[name] for name in TRANSPORT_CHANNELS},
    }


def with_calls(request: dict[str, Any], calls: Sequence[PlannedCall]) -> dict[str, Any]:
    """A leg's request carrying its further calls' requests under ``calls`` (none: unchanged, so a
    one-call leg's request, and its leg cache key, are what they always were)."""
    if calls:
        request["calls"] = [dict(call.request) for call in calls]
    return request


class _IdMinter:
    """§1.4: deterministic ids that avoid every declared leg and step id, and each other."""

    def __init__(self, taken: set[str]) -> None:
        self._taken = taken

    def mint(self, base: str) -> str:
        """``base`` if free, else the first free ``base-2``, ``base-3``, …; the result is taken."""
        candidate, n = base, 1
        while candidate in self._taken:
            n += 1
            candidate = f"{base}-{n}"
        self._taken.add(candidate)
        return candidate


def _find_operation(
    contract: Mapping[str, Any], interface_id: str, operation_id: str
) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    for interface in contract["permittedInterfaces"]:
        if interface["logicalId"] != interface_id:
            continue
        for operation in interface["operations"]:
            if operation["operationId"] == operation_id:
                return interface, operation
    return None


def _taken_ids(contract: Mapping[str, Any], probes: Sequence[Mapping[str, Any]]) -> set[str]:
    taken = {step["stepId"] for step in contract.get("interactionPlan") or []}
    for probe in probes:
        if probe.get("expectedClean"):
            continue
        for defect in probe.get("defects") or []:
            if defect.get("manifestationWitness") is not None:
                taken.add(defect["manifestationWitness"]["legId"])
                taken.update(call["callId"] for call in defect["manifestationWitness"].get("calls") or [])
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            witness = operation.get("sensitivityWitness")
            if witness is not None:
                taken.update(leg["legId"] for leg in witness["legs"])
                taken.update(call["callId"] for leg in witness["legs"] for call in leg.get("calls") or [])
    reset = contract.get("fixtureReset")
    if reset is not None:
        taken.add(reset["legId"])
    return taken


def _check_witness_inputs(
    interface: Mapping[str, Any], operation: Mapping[str, Any], inputs: Mapping[str, Any], path: str
) -> None:
    """A fault witness's inputs must fit the operation's declared request shape (§1.7).

    The compiler never sees probes, so pre-flight checks here: every required key supplied, no key
    outside the permitted set, in each keyed channel.
    """
    shape = operation.get("requestShape") or {}
    channels = _CHANNELS_BY_KIND.get(interface["kind"], TRANSPORT_CHANNELS)
    for name in channels:
        declared = shape.get(name) or {"requiredKeys": [], "permittedKeys": []}
        supplied = inputs.get(name)
        if isinstance(supplied, Mapping) and supplied.get("kind") in ("text", "raw"):
            continue  # an unkeyed body: the declared keys describe a JSON object, not text
        if isinstance(supplied, Mapping) and supplied.get("kind") in ("json", "absent"):
            value = supplied.get("value") if supplied.get("kind") == "json" else None
            keys = set(value) if isinstance(value, Mapping) else set()
        else:
            keys = set(supplied or {})
        missing = [key for key in declared.get("requiredKeys", []) if key not in keys]
        if missing:
            raise StructuralFailure(
                "undeclared-mandatory-input",
                f"{path}.inputs.{name}",
                f'omits the required {name} key "{missing[0]}" the operation declares',
            )
        permitted = set(declared.get("permittedKeys", [])) | set(declared.get("requiredKeys", []))
        extra = sorted(keys - permitted)
        if extra:
            raise StructuralFailure(
                "undeclared-mandatory-input",
                f"{path}.inputs.{name}",
                f'supplies the {name} key "{extra[0]}" the operation does not declare',
            )


def plan_calls(
    contract: Mapping[str, Any], leg_id: str, interface: Mapping[str, Any], calls: Sequence[Mapping[str, Any]] | None, path: str
) -> tuple[PlannedCall, ...]:
    """The further calls of a multi-call leg (module docstring), each resolved and its inputs checked.

    Raises ``StructuralFailure``: ``unreachable-check-evidence`` for a call naming an undeclared
    operation or another interface than its leg's (one session answers a leg), ``malformed-operator-expression``
    for a call id used twice in the leg or equal to the leg id, and the input check's codes.
    """
    planned: list[PlannedCall] = []
    seen = {leg_id}
    for index, call in enumerate(calls or []):
        where = f"{path}.calls[{index}]"
        if call["interfaceId"] != interface["logicalId"]:
            raise StructuralFailure(
                "unreachable-check-evidence",
                f"{where}.interfaceId",
                f'call "{call["callId"]}" names interface "{call["interfaceId"]}", but its leg runs on '
                f'"{interface["logicalId"]}"; every call of a leg goes to the leg\'s own server or session',
            )
        found = _find_operation(contract, call["interfaceId"], call["operationId"])
        if found is None:
            raise StructuralFailure(
                "unreachable-check-evidence",
                f"{where}.operationId",
                f'call "{call["callId"]}" names operation "{call["operationId"]}" on interface '
                f'"{call["interfaceId"]}", which the contract does not declare',
            )
        if call["callId"] in seen:
            raise StructuralFailure(
                "malformed-operator-expression",
                f"{where}.callId",
                f'call id "{call["callId"]}" is used twice in leg "{leg_id}" (the leg id included)',
            )
        seen.add(call["callId"])
        _check_witness_inputs(found[0], found[1], call["inputs"], where)
        planned.append(
            PlannedCall(
                call_id=call["callId"],
                interface_id=call["interfaceId"],
                operation_id=call["operationId"],
                request=request_of(call["callId"], found[0], found[1], call["inputs"]),
                operation=found[1],
                inputs=call["inputs"],
            )
        )
    return tuple(planned)


def _identical_clean_leg(legs: Sequence[PlannedLeg], request: Mapping[str, Any]) -> PlannedLeg | None:
    """The first leg of the plan that runs on the clean system and sends ``request`` (leg id aside)."""
    wanted = canonical_bytes({**request, "probeId": ""})
    for leg in legs:
        if leg.purpose in CLEAN_SYSTEM_PURPOSES and canonical_bytes({**leg.request, "probeId": ""}) == wanted:
            return leg
    return None


def plan_preflight(
    contract: Any, probes: Sequence[Any], run_id: str, *, clean_witness_legs: bool = False
) -> PreflightPlan:
    """Plan the pre-flight of ``contract`` against ``probes`` (§1): legs in port-call order, checks in verdict order.

    ``clean_witness_legs``: fault legs run against a seeded system, so give each manifestation witness
    a clean twin (module docstring). False plans exactly the reference's legs.
    Raises ``RuntimeFault('schema-version-mismatch')`` on a probe or contract stamp we do not read, and
    ``StructuralFailure`` for an unsupported interface kind, inputs of the wrong shape, an unresolvable
    witness or reset, duplicate leg ids, or a plan with no legs.
    """
    contract = _wire(contract)
    probes = [_wire(probe) for probe in probes]
    _check_stamps(contract, probes)
    _check_interface_identifiers(contract)
    _check_interface_kinds(contract)
    book = _LegBook(_IdMinter(_taken_ids(contract, probes)))
    _plan_sensitivity_legs(book, contract)
    control_checks = _plan_control_block(book, contract)
    fault_checks = _plan_seeded_fault_legs(book, contract, probes, clean_witness_legs=clean_witness_legs)
    _check_plan_legs(book.legs)
    reference_sets = contract.get("referenceSets") or {}
    return PreflightPlan(
        run_id=run_id,
        legs=tuple(book.legs),
        checks=tuple(_ordered_checks(contract, book.legs, control_checks, fault_checks)),
        reference_sets={name: list(entry["members"]) for name, entry in reference_sets.items()},
        reference_set_keys={name: list(entry["keys"]) for name, entry in reference_sets.items()},
    )


class _LegBook:
    """The plan's legs in port-call order, and the minter of the ids the plan makes up (§1.4)."""

    def __init__(self, minter: _IdMinter) -> None:
        self.legs: list[PlannedLeg] = []
        self.mint = minter.mint

    def add(
        self,
        leg_id: str,
        purpose: LegPurpose,
        interface: Mapping[str, Any],
        operation: Mapping[str, Any],
        inputs: Mapping[str, Any],
        artifact_path: str,
        calls: tuple[PlannedCall, ...] = (),
    ) -> PlannedLeg:
        """Register a leg (its request built by ``request_of``, its calls riding in it) in port-call order."""
        leg = PlannedLeg(
            leg_id=leg_id,
            purpose=purpose,
            interface_id=interface["logicalId"],
            operation_id=operation["operationId"],
            interface_kind=interface["kind"],
            request=with_calls(request_of(leg_id, interface, operation, inputs), calls),
            operation=operation,
            inputs=inputs,
            artifact_path=artifact_path,
            calls=calls,
        )
        self.legs.append(leg)
        return leg


def _plan_sensitivity_legs(book: _LegBook, contract: Mapping[str, Any]) -> None:
    """1. Sensitivity legs: interface order, operation order, leg 0 then leg 1 (§1.3)."""
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            witness = operation.get("sensitivityWitness")
            if witness is None:
                continue
            op_path = _operation_path(interface["logicalId"], operation["operationId"])
            for index, witness_leg in enumerate(witness["legs"]):
                leg_path = f"{op_path}.sensitivityWitness.legs[{index}]"
                book.add(
                    witness_leg["legId"],
                    "sensitivity",
                    interface,
                    operation,
                    witness_leg["inputs"],
                    f"{leg_path}.legId",
                    plan_calls(contract, witness_leg["legId"], interface, witness_leg.get("calls"), leg_path),
                )


def _plan_control_block(book: _LegBook, contract: Mapping[str, Any]) -> list[PlannedCheck]:
    """2. The control block (§1.5): observe, mutate and reset when the contract declares a reset, observe again."""
    control_checks: list[PlannedCheck] = []
    observed = _select_observed(contract)
    if observed is not None:
        obs_interface, obs_operation, obs_inputs = observed
        reset = contract.get("fixtureReset")
        mutating = _select_mutating(contract, reset) if reset is not None else None
        first = book.add(
            book.mint(CONTROL_OBSERVE_BASE),
            "control-observe",
            obs_interface,
            obs_operation,
            obs_inputs,
            "EvalContract.permittedInterfaces",
        )
        control_legs = [first]
        if mutating is not None and reset is not None:
            mut_interface, mut_operation, mut_inputs = mutating
            control_legs.append(
                book.add(
                    book.mint(CONTROL_MUTATE_BASE),
                    "control-mutate",
                    mut_interface,
                    mut_operation,
                    mut_inputs,
                    "EvalContract.permittedInterfaces",
                )
            )
            found = _find_operation(contract, reset["interfaceId"], reset["operationId"])
            if found is None:
                raise StructuralFailure(
                    "unreachable-check-evidence",
                    "EvalContract.fixtureReset",
                    f'the reset names operation "{reset["operationId"]}" on interface '
                    f'"{reset["interfaceId"]}", which the contract does not declare',
                )
            control_legs.append(
                book.add(
                    reset["legId"], "control-reset", found[0], found[1], reset["inputs"], "EvalContract.fixtureReset.legId"
                )
            )
        last = book.add(
            book.mint(CONTROL_OBSERVE_BASE),
            "control-observe",
            obs_interface,
            obs_operation,
            obs_inputs,
            "EvalContract.permittedInterfaces",
        )
        control_legs.append(last)
        control_checks.append(PlannedCheck("state-reset", None, None, leg_ids=(first.leg_id, last.leg_id)))
        control_checks.append(
            PlannedCheck("clean-control", None, None, leg_ids=tuple(leg.leg_id for leg in control_legs))
        )
    return control_checks


def _plan_seeded_fault_legs(
    book: _LegBook, contract: Mapping[str, Any], probes: Sequence[Mapping[str, Any]], *, clean_witness_legs: bool
) -> list[PlannedCheck]:
    """3. Seeded-fault legs: probe order, defect order; clean probes and null witnesses add no leg (§1.7)."""
    fault_checks: list[PlannedCheck] = []
    for probe in probes:
        if probe.get("expectedClean"):
            continue
        for defect in probe.get("defects") or []:
            defect_id = defect["defectId"]
            witness = defect.get("manifestationWitness")
            if witness is None:
                fault_checks.append(PlannedCheck("seeded-fault-fired", None, None, defect_id=defect_id))
                continue
            path = f"Probe[probeId={probe['probeId']}].defects[defectId={defect_id}].manifestationWitness"
            found = _find_operation(contract, witness["interfaceId"], witness["operationId"])
            if found is None:
                raise StructuralFailure(
                    "unreachable-check-evidence",
                    path,
                    f'the witness names operation "{witness["operationId"]}" on interface '
                    f'"{witness["interfaceId"]}", which the contract does not declare',
                )
            interface, operation = found
            _check_witness_inputs(interface, operation, witness["inputs"], path)
            calls = plan_calls(contract, witness["legId"], interface, witness.get("calls"), path)
            twin_id: str | None = None
            if clean_witness_legs:
                twin_request = with_calls(request_of(witness["legId"], interface, operation, witness["inputs"]), calls)
                twin = _identical_clean_leg(book.legs, twin_request)
                if twin is None:
                    twin = book.add(
                        book.mint(witness["legId"] + CLEAN_TWIN_SUFFIX),
                        "seeded-fault-clean",
                        interface,
                        operation,
                        witness["inputs"],
                        f"{path}.legId",
                        calls,
                    )
                twin_id = twin.leg_id
            clean = tuple(
                leg.leg_id
                for leg in book.legs
                if leg.interface_id == interface["logicalId"] and leg.operation_id == operation["operationId"]
            )
            book.add(witness["legId"], "seeded-fault", interface, operation, witness["inputs"], f"{path}.legId", calls)
            fault_checks.append(
                PlannedCheck(
                    "seeded-faults-scoped",
                    interface["logicalId"],
                    operation["operationId"],
                    witness=witness,
                    operation=operation,
                    defect_id=defect_id,
                    clean_leg_ids=clean,
                    clean_twin_leg_id=twin_id,
                )
            )
            fault_checks.append(
                PlannedCheck(
                    "seeded-fault-fired",
                    interface["logicalId"],
                    operation["operationId"],
                    leg_ids=(witness["legId"],),
                    witness=witness,
                    operation=operation,
                    defect_id=defect_id,
                )
            )
    return fault_checks


def _check_plan_legs(legs: Sequence[PlannedLeg]) -> None:
    """Leg ids are unique, and there is at least one leg."""
    _check_unique(list(legs))
    if not legs:
        raise StructuralFailure(
            "unreachable-check-evidence",
            "EvalContract.permittedInterfaces",
            "the plan has no leg at all, so a fixture digest over nothing would certify nothing",
        )


def _ordered_checks(
    contract: Mapping[str, Any], legs: Sequence[PlannedLeg], control_checks: list[PlannedCheck],
    fault_checks: list[PlannedCheck],
) -> list[PlannedCheck]:
    """The checks in verdict order (§1.8): interface-present per pair in first-leg order, then
    input-sensitivity per operation, then the control and seeded-fault checks."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for leg in legs:
        pairs.setdefault((leg.interface_id, leg.operation_id), []).append(leg.leg_id)
    present = [
        PlannedCheck("interface-present", interface_id, operation_id, leg_ids=tuple(ids))
        for (interface_id, operation_id), ids in pairs.items()
    ]
    sensitivity = []
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            witness = operation.get("sensitivityWitness")
            sensitivity.append(
                PlannedCheck(
                    "input-sensitivity",
                    interface["logicalId"],
                    operation["operationId"],
                    leg_ids=tuple(leg["legId"] for leg in witness["legs"]) if witness else (),
                    witness=witness,
                    operation=operation,
                )
            )
    return present + sensitivity + control_checks + fault_checks


def _select_observed(
    contract: Mapping[str, Any],
) -> tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]] | None:
    """The first non-mutating operation that has control inputs (§1.5)."""
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            if operation["stateChangeMarker"]:
                continue
            inputs = control_inputs_of(interface["kind"], operation)
            if inputs is not None:
                return interface, operation, inputs
    return None


def _select_mutating(
    contract: Mapping[str, Any], reset: Mapping[str, Any]
) -> tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]] | None:
    """The first state-changing operation with control inputs on the reset's interface (§1.5)."""
    for interface in contract["permittedInterfaces"]:
        if interface["logicalId"] != reset["interfaceId"]:
            continue
        for operation in interface["operations"]:
            if not operation["stateChangeMarker"]:
                continue
            inputs = control_inputs_of(interface["kind"], operation)
            if inputs is not None:
                return interface, operation, inputs
    return None


def _check_unique(legs: Sequence[PlannedLeg]) -> None:
    seen: set[str] = set()
    for leg in legs:
        if leg.leg_id in seen:
            raise StructuralFailure(
                "malformed-operator-expression",
                leg.artifact_path,
                f'leg id "{leg.leg_id}" is used twice; two legs sharing a probeId cannot be told apart',
            )
        seen.add(leg.leg_id)
