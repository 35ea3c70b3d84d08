"""The AD-9 qualification gate: the twenty QUALIFICATION_FAILURES codes per probe (scoring.md §8).

``qualify_probe(probe, home)`` runs the checks in the spec's order — route, route evidence, signature
presence, then (signature present) interface kind, observable channel, the predicate walk (channels,
disjuncts, selector keys) and the legality checks; the two marked † in the spec need the home operation
and are skipped without one (``declaration_checks_ran`` false). Paths read ``Probe[probeId=<P-id>]…``.

Choice (spec is loose here): codes 12 and 16–20 "reuse the compile-time structural checks over the bare
predicate". We apply the same rules directly to the predicate — operand kinds per operator, regex
construct rules, quantifier nesting, bound-element scope, and evidence reachability against the home
operation's declared channels and response keys — so the gate does not depend on a whole contract.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from evalquality_core.evaluate import as_wire, decode_tokens
from evalquality_core.registries import SUPPORTED_INTERFACE_KINDS
from evalquality_core.score.witness import OBSERVED_STEP, HomeOperation

QualificationFailureCode = Literal[
    "qualification-route-incompatible",
    "qualification-defect-sources-mixed",
    "qualification-evidence-unverified",
    "signature-absent",
    "signature-present-on-canary",
    "signature-interface-kind-unsupported",
    "signature-observable-channel-not-response-side",
    "condition-channels-underspecified",
    "condition-disjunct-without-response-channel",
    "condition-selector-key-undeclared",
    "condition-pointer-not-observation-rooted",
    "condition-pointer-unwritable",
    "condition-artifact-channel-contract-local",
    "condition-text-channel-on-api",
    "condition-reference-set-operand",
    "condition-operand-illegal",
    "condition-regex-illegal",
    "condition-quantifier-nesting",
    "condition-quantifier-over-non-collection",
    "condition-bound-element-outside-quantifier",
]
#: The twenty codes in the spec's table order (§8).
QUALIFICATION_FAILURES: tuple[QualificationFailureCode, ...] = get_args(QualificationFailureCode)

#: Channels on the response side of an interaction (§8 code 7).
RESPONSE_SIDE_CHANNELS: tuple[str, ...] = (
    "response-body",
    "response-headers",
    "response-status",
    "stdout",
    "stderr",
    "exit-code",
)
#: Channels an interface kind never produces (§8 code 14).
NEVER_PRODUCED: dict[str, tuple[str, ...]] = {
    "api": ("stdout", "stderr", "exit-code"),
    # A tool call's evidence: structured result, tool-error status, arguments sent, the server's
    # exit code (issue 13, as compile's reachability reads it).
    "mcp": ("stdout", "stderr", "response-headers"),
}
_INTERACTION = re.compile(r"^/interactions/([^/]+)/(.*)$")
_CHANNEL = re.compile(
    r"^(response-body|response-headers|response-status|stdout|stderr|exit-code|call-inputs|artifact)(?:/(.*))?$"
)


@dataclass(frozen=True)
class QualificationFailure:
    """One failed check: code, where, why (printed by the CLI as ``eval-quality: <code>: <path>: <detail>``)."""

    code: QualificationFailureCode
    artifact_path: str
    detail: str


@dataclass(frozen=True)
class Qualification:
    """The gate's result for one probe."""

    probe_id: str
    qualified: bool
    failures: tuple[QualificationFailure, ...]
    declaration_checks_ran: bool


def admissible_routes(probe: Mapping[str, Any]) -> tuple[str, ...]:
    """The routes a probe may declare (§8 code 1)."""
    cls = probe["probeClass"]
    if probe["expectedClean"]:
        return ("clean-control",) if cls == "zero-action" else ()
    if cls == "gameability":
        return ("gameability",)
    if cls == "canary":
        return ("canary",)
    defects = probe.get("defects") or []
    if not defects:
        return ()
    sources = {d["source"] for d in defects}
    routes = []
    if "controlled-mutation" not in sources:
        routes.append("historical")
    if "natural" not in sources:
        routes.append("controlled-mutation")
    return tuple(routes)


@dataclass(frozen=True)
class _Pointer:
    pointer: str
    path: str
    channel: str | None  # the channel; for @ pointers, the enclosing quantifier collection's channel
    rooted: bool  # a fully rooted /interactions/… pointer
    step: str | None
    tail: str | None
    depth: int  # quantifier depth


def _split(pointer: str) -> tuple[str | None, str | None, str | None]:
    m = _INTERACTION.match(pointer)
    if not m:
        return None, None, None
    c = _CHANNEL.match(m.group(2))
    if not c:
        return m.group(1), None, None
    return m.group(1), c.group(1), c.group(2)


def _walk(node: Mapping[str, Any], path: str, collection_channel: str | None, depth: int) -> Iterator[tuple[str, Any, str, str | None, int]]:
    """Yield (kind, value, path, inherited channel, depth) for every node and operand."""
    yield "node", node, path, collection_channel, depth
    op = node["op"]
    if op in ("not", "all", "any"):
        for i, child in enumerate(node["operands"]):
            yield from _walk(child, f"{path}.operands[{i}]", collection_channel, depth)
    elif op in ("for-all", "for-any"):
        coll = node["collection"]
        yield "operand", coll, f"{path}.collection", collection_channel, depth
        channel = collection_channel
        if "pointer" in coll:
            if coll["pointer"].startswith("@"):
                channel = collection_channel
            else:
                channel = _split(coll["pointer"])[1]
        yield from _walk(node["predicate"], f"{path}.predicate", channel, depth + 1)
    else:
        for i, operand in enumerate(node.get("operands", [])):
            yield "operand", operand, f"{path}.operands[{i}]", collection_channel, depth


def _pointers(predicate: Mapping[str, Any], path: str) -> list[_Pointer]:
    out = []
    for kind, value, p, inherited, depth in _walk(predicate, path, None, 0):
        if kind == "operand" and "pointer" in value:
            ptr = value["pointer"]
            if ptr.startswith("@"):
                out.append(_Pointer(ptr, p, inherited, False, None, None, depth))
            else:
                step, channel, tail = _split(ptr)
                out.append(_Pointer(ptr, p, channel, True, step, tail, depth))
    return out


_BACKREF = re.compile(r"\\[1-9]|\\k<")
_LOOKBEHIND = re.compile(r"\(\?<[=!]")
#: Operand positions that must be pointers for the operator to read evidence (our legality rule).
_POINTER_FIRST = ("existence", "absence", "regex", "ordering", "count-tolerance", "shape")


def qualify_probe(probe: Any, home: HomeOperation | None) -> Qualification:
    """Run the gate over one probe; ``home`` is the resolved home operation (None when unresolved)."""
    p = as_wire(probe)
    pid = p["probeId"]
    root = f"Probe[probeId={pid}]"
    failures: list[QualificationFailure] = []

    def fail(code: QualificationFailureCode, where: str, detail: str) -> None:
        failures.append(QualificationFailure(code, where, detail))

    cls, clean = p["probeClass"], p["expectedClean"]
    qualification = p["qualification"]
    route = qualification["route"]
    routes = admissible_routes(p)
    if route not in routes:
        allowed = ", ".join(routes) if routes else "none"
        fail("qualification-route-incompatible", f"{root}.qualification.route",
             f'route "{route}" is not admissible for this probe (admissible: {allowed})')
    defects = p.get("defects") or []
    if not clean and cls not in ("gameability", "canary") and len({d["source"] for d in defects}) > 1:
        fail("qualification-defect-sources-mixed", f"{root}.defects", "the seeded defects mix natural and controlled-mutation sources")
    if route == "historical" and qualification.get("oracleStableAcrossRevisions") is False:
        fail("qualification-evidence-unverified", f"{root}.qualification.oracleStableAcrossRevisions",
             "a historical probe must show the oracle stable across revisions")
    if route == "controlled-mutation" and qualification.get("rollbackVerified") is False:
        fail("qualification-evidence-unverified", f"{root}.qualification.rollbackVerified",
             "a controlled mutation must have its rollback verified")
    signature = None if clean else p.get("defectSignature")
    if not clean and cls != "canary" and signature is None:
        fail("signature-absent", f"{root}.defectSignature", "a seeding probe must carry a defect signature")
    if cls == "canary" and signature is not None:
        fail("signature-present-on-canary", f"{root}.defectSignature", "a canary carries no defect signature")
    declaration_checks_ran = True
    if signature is not None:
        declaration_checks_ran = home is not None
        _check_signature(signature, home, f"{root}.defectSignature", fail)
    return Qualification(pid, not failures, tuple(failures), declaration_checks_ran)


def _check_signature(signature: Mapping[str, Any], home: HomeOperation | None, where: str, fail: Any) -> None:
    """The signature checks in the order their failures are reported: the interface and observable
    channel, the channels the predicate names (code 8), its disjuncts (code 9), the selector keys
    against the home operation (code 10), each pointer, then each predicate node."""
    kind = signature["interfaceKind"]
    observable = signature["observableChannel"]
    _check_interface_and_observable(kind, observable, where, fail)
    pred_path = f"{where}.condition.predicate"
    predicate = signature["condition"]["predicate"]
    pointers = _pointers(predicate, pred_path)
    _check_channels_named(pointers, observable, pred_path, fail)
    _check_disjuncts(predicate, pred_path, fail)
    if home is not None:
        _check_selector_keys(signature, home, where, fail)
    _check_signature_pointers(pointers, kind, observable, home, where, fail)
    _check_predicate_nodes(predicate, pred_path, home, fail)


def _check_interface_and_observable(kind: str, observable: str, where: str, fail: Any) -> None:
    """The interface kind has probe semantics, and the observable channel is on the response side."""
    if kind not in SUPPORTED_INTERFACE_KINDS:
        fail("signature-interface-kind-unsupported", f"{where}.interfaceKind",
             f'interface kind "{kind}" has no probe semantics in this version')
    if observable not in RESPONSE_SIDE_CHANNELS:
        fail("signature-observable-channel-not-response-side", f"{where}.observableChannel",
             f'observable channel "{observable}" is not on the response side')


def _check_channels_named(pointers: list[_Pointer], observable: str, pred_path: str, fail: Any) -> None:
    """Code 8: the fully rooted pointers name the observable channel, or two channels one of them response-side."""
    channels = {ptr.channel for ptr in pointers if ptr.rooted and ptr.channel is not None}
    response = channels & set(RESPONSE_SIDE_CHANNELS)
    if not (observable in channels and observable in RESPONSE_SIDE_CHANNELS) and not (len(channels) >= 2 and response):
        fail("condition-channels-underspecified", pred_path,
             f'the predicate names neither the observable channel "{observable}" nor two channels including a response-side one')


def _check_disjuncts(predicate: Mapping[str, Any], pred_path: str, fail: Any) -> None:
    """Code 9: every direct operand of an ``any`` node names a response-side channel."""
    for kind_, node, path, _inh, _d in _walk(predicate, pred_path, None, 0):
        if kind_ == "node" and node["op"] == "any":
            for i, child in enumerate(node["operands"]):
                named = {ptr.channel for ptr in _pointers(child, f"{path}.operands[{i}]")}
                if not named & set(RESPONSE_SIDE_CHANNELS):
                    fail("condition-disjunct-without-response-channel", f"{path}.operands[{i}]",
                         "a disjunct names no response-side channel")


def _check_selector_keys(signature: Mapping[str, Any], home: HomeOperation, where: str, fail: Any) -> None:
    """Code 10: each selector key is declared by the home operation (with a type, for a type-violating matcher)."""
    shapes = home.operation.get("requestShape") or {}
    for channel, binding in (signature["condition"]["selector"]["inputBinding"] or {}).items():
        if binding is None:
            continue
        shape = shapes.get(channel)
        for key, value in binding.items():
            bpath = f'{where}.condition.selector.inputBinding.{channel}["{key}"]'
            declared = shape is not None and (key in shape["requiredKeys"] or key in shape["permittedKeys"])
            if not declared:
                fail("condition-selector-key-undeclared", bpath,
                     f'operation {home.operation_id} declares no {channel} key "{key}"')
            elif value.get("matcher") == "type-violating" and (shape.get("types") or {}).get(key) is None:
                fail("condition-selector-key-undeclared", bpath,
                     f'{channel} key "{key}" has no declared type for a type-violating matcher')


def _check_signature_pointers(
    pointers: list[_Pointer], kind: str, observable: str, home: HomeOperation | None, where: str, fail: Any
) -> None:
    """The observable channel and each pointer against what the interface kind can produce, the reserved
    step, the artifact channel, quantifier scope and (with a home operation) evidence reachability."""
    never = NEVER_PRODUCED.get(kind, ())
    if observable in never:
        fail("condition-text-channel-on-api", f"{where}.observableChannel",
             f'a {kind} interface never produces the "{observable}" channel')
    for ptr in pointers:
        if ptr.rooted and ptr.step != OBSERVED_STEP:
            fail("condition-pointer-not-observation-rooted", ptr.path,
                 f'pointer "{ptr.pointer}" is not rooted at the reserved step "{OBSERVED_STEP}"')
        if ptr.rooted and ptr.channel == "artifact":
            fail("condition-artifact-channel-contract-local", ptr.path,
                 f'pointer "{ptr.pointer}" reads a contract-local artifact channel')
        if ptr.rooted and ptr.channel in never:
            fail("condition-text-channel-on-api", ptr.path,
                 f'a {kind} interface never produces the "{ptr.channel}" channel read by "{ptr.pointer}"')
        if not ptr.rooted and ptr.depth == 0:
            fail("condition-bound-element-outside-quantifier", ptr.path,
                 f'bound-element pointer "{ptr.pointer}" sits outside any quantifier predicate')
        if home is not None and ptr.rooted and ptr.step == OBSERVED_STEP:
            reason = _unwritable(ptr, home)
            if reason:
                fail("condition-pointer-unwritable", ptr.path, reason)


def _check_predicate_nodes(predicate: Mapping[str, Any], pred_path: str, home: HomeOperation | None, fail: Any) -> None:
    """Each operand and node of the predicate: no reference set, pointer-first operators, legal regexes,
    and quantifiers (:func:`_check_quantifier`)."""
    for kind_, value, path, _inh, depth in _walk(predicate, pred_path, None, 0):
        if kind_ == "operand" and "referenceSet" in value:
            fail("condition-reference-set-operand", path, "a signature predicate reads no reference set")
        if kind_ != "node":
            continue
        op = value["op"]
        if op in _POINTER_FIRST and "pointer" not in value["operands"][0]:
            fail("condition-operand-illegal", f"{path}.operands[0]", f"{op} needs a pointer operand")
        if op == "regex" and (_BACKREF.search(value["pattern"]) or _LOOKBEHIND.search(value["pattern"])):
            fail("condition-regex-illegal", f"{path}.pattern", "backreferences and lookbehind are not allowed")
        if op in ("for-all", "for-any"):
            _check_quantifier(value, path, depth, home, fail)


def _check_quantifier(value: Mapping[str, Any], path: str, depth: int, home: HomeOperation | None, fail: Any) -> None:
    """A quantifier nests at most one level and ranges over a pointer to a collection the home operation declares."""
    if depth >= 2:
        fail("condition-quantifier-nesting", path, "quantifiers nest at most one level")
    coll = value["collection"]
    if "pointer" not in coll:
        fail("condition-operand-illegal", f"{path}.collection", "a quantifier ranges over a pointer")
    elif home is not None and not coll["pointer"].startswith("@"):
        _step, channel, tail = _split(coll["pointer"])
        locations = {
            decode_tokens(loc["pointer"])
            for loc in (home.operation.get("responseDescriptor") or {}).get("collectionLocations") or []
        }
        if channel != _descriptor_channel(home) or decode_tokens("/" + (tail or "")) not in locations:
            fail("condition-quantifier-over-non-collection", f"{path}.collection",
                 f'operation {home.operation_id} declares no collection at "{coll["pointer"]}"')


def _descriptor_channel(home: HomeOperation) -> str:
    channel = home.operation.get("descriptorChannel")
    if channel is None or channel.get("kind") == "structured-result":
        return "response-body"  # an HTTP body, or a tool call's structured result
    return channel.get("channel", channel.get("kind"))


def _unwritable(ptr: _Pointer, home: HomeOperation) -> str | None:
    """Evidence reachability against the home operation (our restatement of compile §3.2 for one op)."""
    kind = home.interface_kind
    if kind == "api" and ptr.channel in ("stdout", "stderr", "exit-code"):
        return f'operation {home.operation_id} cannot produce "{ptr.channel}"'
    if kind == "cli" and ptr.channel in ("response-body", "response-headers", "response-status"):
        return f'operation {home.operation_id} cannot produce "{ptr.channel}"'
    if kind == "mcp" and ptr.channel in NEVER_PRODUCED["mcp"]:
        return f'tool-call operation {home.operation_id} cannot produce "{ptr.channel}"'
    if ptr.channel == _descriptor_channel(home) and ptr.tail:
        first = decode_tokens("/" + ptr.tail)[0]
        descriptor = home.operation.get("responseDescriptor") or {}
        declared = set(descriptor.get("requiredKeys") or []) | set(descriptor.get("permittedKeys") or [])
        if first not in declared:
            return f'operation {home.operation_id} declares no response key "{first}" for "{ptr.pointer}"'
    return None
