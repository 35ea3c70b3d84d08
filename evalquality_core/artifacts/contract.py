"""EvalContract and every sub-model (artifacts.md §2.2), read at ``schemaVersion`` 4 to 7.

One model reads every stamp and records the stamp as read; a new contract is written at 7. The
stamps differ by the keys below (the reference's CHANGELOG, 5.0.0 and 6.0.0), which
:func:`stamp_problems` checks against the stamp before the shape and the serializers leave off
again on the way out, so a parsed contract goes back to the wire byte for byte at its own stamp:

* **4, 5** (identical shapes): a plan step has no ``interfaceId``; ``siblingGroups.operations``
  members are bare operation ids; an ``mcp`` interface is api-shaped (method, pathTemplate). A
  tool-call operation (``toolName``) at these stamps is ``unsupported-interface-kind``, raised by
  :func:`~evalquality_core.artifacts.base.read_artifact` as a ``StructuralFailure`` (exit 4).
* **6** (5.0.0, the (interfaceId, operationId) pair): every plan step carries ``interfaceId``;
  sibling operations are ``{interfaceId, operationId}``; an ``mcp`` interface declares tool-call
  operations (``toolName``, ``requestShape.arguments``, ``descriptorChannel: structured-result``),
  bound by ``inputBinding.arguments`` and witnessed on the ``arguments`` channel.
* **7**: as 6, and (6.0.0) a witness leg's or fixture reset's body may be raw
  ``{kind: "raw", base64, contentType}``; ``base64`` is canonical RFC 4648 (the unused pad bits
  zero), the empty string a zero-byte body. And (8.0.0, no new stamp) an operation may carry the
  optional ``stateResetPointers``: descriptor pointers the pre-flight ``state-reset`` check compares
  (``preflight/projection.py``); absent stays absent on the way out, ``null`` is refused, and at 4 to 6
  the key is refused. A ``*`` token in it or in ``volatilePointers`` matches any one key or index at
  its depth (read so at every stamp; ``preflight/projection.py`` says why).

``fixtureReset.interfaceId`` is required at every stamp we read (the conformance data carries it
at 4 and 5 as well).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Discriminator,
    Field,
    Tag,
    model_validator,
)
from pydantic_core import PydanticCustomError

from evalquality_core.artifacts.base import (
    ArtifactModel,
    BehaviorId,
    CriterionId,
    Digest,
    JsonValue,
    LineageArtifact,
    NonEmptyStr,
    NonNegativeInt,
    OracleId,
    RubricId,
    SignedSafeInt,
    Slug,
    StampedKeysModel,
    Timestamp,
    UnsignedDecimal,
    WaiverId,
)
from evalquality_core.artifacts.expression import (
    DescriptorPointer,
    Expression,
    InteractionPointer,
    KeyShape,
    NonEmptyKey,
    keyed_tag,
)
from evalquality_core.registries import (
    ChannelRole,
    ForbiddenInput,
    HttpMethod,
    Matcher,
    Polarity,
    Relation,
    Severity,
    StepCardinality,
    WitnessChannel,
)

__all__ = [
    "CANONICAL_BASE64_PATTERN",
    "CONTENT_TYPE_PATTERN",
    "CONTRACT_SCHEMA_VERSIONS",
    "FIRST_PAIR_CONTRACT",
    "FIRST_RAW_BODY_CONTRACT",
    "FIRST_STATE_RESET_POINTERS_CONTRACT",
    "FIRST_PROTOCOL_KEYS_CONTRACT",
    "HeaderName",
    "ProtocolSuccessIndicator",
    "TOOL_CALL_MARKER",
    "McpOperation",
    "OperationPair",
    "RawBody",
    "SiblingOperation",
    "StructuredResultChannel",
    "ToolCallInputBinding",
    "ToolCallOperation",
    "ToolCallRequestShape",
    "ToolCallWitnessInputs",
    "stamp_problems",
    "AbsentPayload",
    "ApiInterface",
    "ApiOperation",
    "ArtifactDescriptorChannel",
    "AtMostCardinality",
    "Behavior",
    "BindingChannel",
    "BindingValue",
    "Budgets",
    "CapturedBinding",
    "CliInterface",
    "CollectionLocation",
    "CommandInputBinding",
    "CommandOperation",
    "CommandRequestShape",
    "CommandWitnessInputs",
    "Criterion",
    "DescriptorChannel",
    "Direction",
    "EvalContract",
    "ExactCardinality",
    "ExpectedCardinality",
    "FailureModePenalty",
    "FixtureReset",
    "InputBinding",
    "Invocation",
    "JsonPayload",
    "Link",
    "LiteralBinding",
    "MatcherBinding",
    "McpInterface",
    "Oracle",
    "PageBoundedCardinality",
    "PermittedInterface",
    "PlanStep",
    "PrincipalBinding",
    "ReferenceSet",
    "ResponseDescriptor",
    "Rubric",
    "RubricBody",
    "ScaleLevel",
    "ScopedResource",
    "SiblingGroups",
    "StdinPayload",
    "StreamDescriptorChannel",
    "TaggedPayload",
    "TestData",
    "TestDataEntry",
    "TextPayload",
    "TransportInputBinding",
    "TransportRequestShape",
    "TransportWitnessInputs",
    "Waiver",
    "Witness",
    "WitnessBody",
    "WitnessInputs",
    "WitnessLeg",
]

#: Contract stamps we read (AD-11); the newest is what we write.
CONTRACT_SCHEMA_VERSIONS: tuple[int, ...] = (4, 5, 6, 7)
#: The first contract stamp naming an operation by the (interfaceId, operationId) pair (5.0.0).
FIRST_PAIR_CONTRACT = 6
#: The first contract stamp admitting a raw request body (6.0.0).
FIRST_RAW_BODY_CONTRACT = 7
#: The first contract stamp whose operations may list ``stateResetPointers`` (8.0.0; no new stamp came
#: with it, so it is an optional key of contract 7: the reference's stored contract-7 files lack it).
FIRST_STATE_RESET_POINTERS_CONTRACT = 7
#: The first contract stamp admitting our issue-34 keys ``volatileHeaders`` (api operations) and
#: ``responseDescriptor.protocolSuccessIndicator``: optional keys of contract 7, like ``stateResetPointers``.
FIRST_PROTOCOL_KEYS_CONTRACT = 7
#: The key whose presence on an ``mcp`` operation marks the tool-call form.
TOOL_CALL_MARKER = "toolName"
#: Canonical RFC 4648 base64: groups of four, the unused pad bits zero; ``""`` is zero bytes.
CANONICAL_BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$"
#: ``type/subtype`` of RFC 9110 tokens, optionally followed by parameters.
CONTENT_TYPE_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:;[ \t]*[^\r\n]+)?$"

# --- Tagged payloads (body, stdin, streams, artifacts) ----------------------------------------


class JsonPayload(ArtifactModel):
    """``{"kind": "json", "value": …}``: a JSON payload (a body, stdin, stream or artifact that is a JSON value)."""

    kind: Literal["json"]
    value: JsonValue


class TextPayload(ArtifactModel):
    """``{"kind": "text", "value": str}``: a text payload that is not JSON (stdin, streams, artifacts; the empty string is text)."""

    kind: Literal["text"]
    value: str


class AbsentPayload(ArtifactModel):
    """``{"kind": "absent"}``: nothing sent or nothing produced (stdin not given, an artifact never written)."""

    kind: Literal["absent"]


class RawBody(ArtifactModel):
    """``{"kind": "raw", base64, contentType}``: exact request bytes (contract 7, probe 6)."""

    kind: Literal["raw"]
    base64: Annotated[str, Field(pattern=CANONICAL_BASE64_PATTERN)]
    content_type: Annotated[str, Field(pattern=CONTENT_TYPE_PATTERN)]


#: A transport witness body: json, raw (contract 7 / probe 6 only) or absent.
WitnessBody = Annotated[JsonPayload | RawBody | AbsentPayload, Field(discriminator="kind")]
#: A tagged value: json, text or absent (command stdin; in records a stream or an artifact).
TaggedPayload = Annotated[JsonPayload | TextPayload | AbsentPayload, Field(discriminator="kind")]
#: A command's stdin input.
StdinPayload = TaggedPayload

# --- Behaviours, oracles, rubrics, waivers ----------------------------------------------------


class Link(ArtifactModel):
    """A requirement or risk link ``{scheme, id}``."""

    scheme: NonEmptyStr
    id: NonEmptyStr


class Behavior(ArtifactModel):
    """A behaviour of the system under test, its severity, links and the oracles deciding it."""

    id: BehaviorId
    description: str
    severity: Severity
    observable_success_criterion: str | None
    requirement_links: list[Link]
    risk_links: list[Link]
    oracles: list[OracleId]


class Direction(ArtifactModel):
    """An oracle's direction: evidence targets, relation and polarity (declared again on purpose)."""

    evidence_targets: list[InteractionPointer]
    relation: Relation
    polarity: Polarity
    scope: str | None
    negative_domain: str | None


class Oracle(ArtifactModel):
    """A check deciding a behaviour; ``commentary`` is author documentation, never sealed."""

    id: OracleId
    direction: Direction | None
    check: Expression | None
    polarity: Polarity
    commentary: str | None


class ScaleLevel(ArtifactModel):
    """One anchored level of a rubric scale."""

    level: SignedSafeInt
    anchor: str


class FailureModePenalty(ArtifactModel):
    """A named failure mode a rubric penalises."""

    name: NonEmptyStr
    description: str


class Criterion(ArtifactModel):
    """A rubric criterion and the interaction evidence it reads."""

    id: CriterionId
    text: str
    evidence: InteractionPointer


class RubricBody(ArtifactModel):
    """A rubric as carried inside a contract (AD-22)."""

    id: RubricId
    scale_levels: list[ScaleLevel] | None
    failure_mode_penalties: list[FailureModePenalty] | None
    max_length: Annotated[int, Field(ge=1, le=2**53 - 1)] | None
    criteria: list[Criterion]


class Rubric(RubricBody, LineageArtifact):
    """The standalone Rubric artifact: the body plus the lineage header (rubric.schema.json)."""

    ARTIFACT_NAME: ClassVar[str] = "Rubric"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = (1,)
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = 1


class Waiver(ArtifactModel):
    """A waiver of a discipline rule; ``rule`` is the opaque AD-20 rule name."""

    id: WaiverId
    rule: str | None
    rationale: str | None
    condition: str | None
    approval: str | None
    expires_at: Timestamp | None


# --- Response descriptors -------------------------------------------------------------------


class ExactCardinality(ArtifactModel):
    """``{mode: "exact", count}``."""

    mode: Literal["exact"]
    count: NonNegativeInt


class AtMostCardinality(ArtifactModel):
    """``{mode: "at-most", max}``."""

    mode: Literal["at-most"]
    max: NonNegativeInt


class PageBoundedCardinality(ArtifactModel):
    """``{mode: "page-bounded", max}``."""

    mode: Literal["page-bounded"]
    max: NonNegativeInt


#: A collection's expected cardinality, discriminated on ``mode``.
ExpectedCardinality = Annotated[
    ExactCardinality | AtMostCardinality | PageBoundedCardinality, Field(discriminator="mode")
]


class CollectionLocation(ArtifactModel):
    """A collection inside the descriptor channel, its cardinality and optional reference set."""

    pointer: DescriptorPointer
    expected_cardinality: ExpectedCardinality
    reference_set: Slug | None


#: Where a protocol-level success indicator is read (issue 34): the evidence channel ``response-status``,
#: which is the HTTP status of an api answer and, for an mcp tool call, 1 when it answered ``isError``
#: and 0 otherwise (preflight-adapter.md §2.2), so one value names both.
ProtocolSuccessIndicator = Literal["response-status"]
#: An HTTP header name (an RFC 9110 token), compared case-insensitively wherever it is read.
HeaderName = Annotated[str, Field(pattern=r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")]


class ResponseDescriptor(KeyShape, StampedKeysModel):
    """The descriptor channel's key shape plus success indicator, channel roles and collections.

    ``None``, empty and populated are three distinct answers (AD-31 grading). Ours (issue 34, an
    optional key of contract 7): ``protocolSuccessIndicator: "response-status"`` says the protocol's
    own answer (the HTTP status; an mcp tool call's ``isError``) tells success from failure, so
    coverage rule 1 reads it where a body ``successIndicator`` would be (``coverage/rules.py``).
    """

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ("protocol_success_indicator",)

    success_indicator: DescriptorPointer | None
    channel_roles: dict[DescriptorPointer, ChannelRole] | None
    collection_locations: list[CollectionLocation] | None
    protocol_success_indicator: ProtocolSuccessIndicator | None = None


# --- Witness inputs and sensitivity witnesses (AD-10) -----------------------------------------


class TransportWitnessInputs(ArtifactModel):
    """Concrete inputs of an api leg: path, query, header and body."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("path", "query", "header", "body")
    path: dict[str, JsonValue]
    query: dict[str, JsonValue]
    header: dict[NonEmptyKey, str]
    body: WitnessBody


class CommandWitnessInputs(ArtifactModel):
    """Concrete inputs of a cli leg: argument, option, environment and stdin."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("argument", "option", "environment", "stdin")
    argument: dict[str, JsonValue]
    option: dict[str, JsonValue]
    environment: dict[NonEmptyKey, str]
    stdin: StdinPayload


class ToolCallWitnessInputs(ArtifactModel):
    """Concrete inputs of an mcp leg: the tool call's ``arguments`` (contract 6+)."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("arguments",)
    arguments: dict[str, JsonValue]


#: A leg's inputs: transport form (keyed by ``path``), command form (``argument``) or tool-call
#: form (``arguments``).
WitnessInputs = Annotated[
    Annotated[TransportWitnessInputs, Tag("path-form")]
    | Annotated[CommandWitnessInputs, Tag("argument-form")]
    | Annotated[ToolCallWitnessInputs, Tag("arguments-form")],
    keyed_tag("path", "argument", "arguments"),
]


class LegCall(ArtifactModel):
    """A further call of a multi-call leg: made after the leg's own call, in order, in the same
    workspace and the same server or tool-server session (docs/reference/multi-call-legs.md).

    Its ``callId`` names it in the leg's relation (``/interactions/<callId>/…``), as a leg id does.
    """

    call_id: Slug
    interface_id: Slug
    operation_id: Slug
    inputs: WitnessInputs


#: A leg's further calls: ``None`` (off the wire) or at least one call.
LegCalls = Annotated[list[LegCall], Field(min_length=1)] | None


class WitnessLeg(StampedKeysModel):
    """One of a witness's two legs; ``calls`` (optional, any stamp) makes it a multi-call leg."""

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ("calls",)

    leg_id: Slug
    inputs: WitnessInputs
    calls: LegCalls = None


class Witness(ArtifactModel):
    """A sensitivity witness: two legs differing on one channel and the relation they must show."""

    witness_id: Slug
    channel: WitnessChannel
    legs: Annotated[list[WitnessLeg], Field(min_length=2, max_length=2)]
    relation: Expression


# --- Permitted interfaces ---------------------------------------------------------------------


class TransportRequestShape(ArtifactModel):
    """An api operation's request channels."""

    path: KeyShape
    query: KeyShape
    header: KeyShape
    body: KeyShape


class _OperationModel(StampedKeysModel):
    """Base of the three operation forms: leaves ``stateResetPointers`` off when it was not read or set."""

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ("state_reset_pointers", "volatile_headers")


class ApiOperation(_OperationModel):
    """An HTTP-shaped operation (kinds api, web, and v4 mcp)."""

    operation_id: Slug
    method: HttpMethod
    path_template: Annotated[str, Field(pattern=r"^(?:\/(?:[^/{}:]|\{[A-Za-z0-9_-]+\})*)+$")]
    state_change_marker: bool
    request_shape: TransportRequestShape
    response_descriptor: ResponseDescriptor
    volatile_pointers: list[DescriptorPointer]
    sensitivity_witness: Witness | None
    state_reset_pointers: list[DescriptorPointer] | None = None
    #: Ours (issue 34, optional key of contract 7): response header names whose values differ run to
    #: run (``Date``, ``ETag``); the header counterpart of ``volatilePointers`` (``preflight/volatility.py``).
    volatile_headers: list[HeaderName] | None = None


class Invocation(ArtifactModel):
    """A command's executable and subcommand path."""

    executable: Slug
    subcommand_path: list[Slug]


class CommandRequestShape(ArtifactModel):
    """A cli operation's request channels (argument keys are author labels for positionals)."""

    argument: KeyShape
    option: KeyShape
    environment: KeyShape
    stdin: KeyShape


class StreamDescriptorChannel(ArtifactModel):
    """The descriptor channel is a standard stream."""

    kind: Literal["stream"]
    channel: Literal["stdout", "stderr"]


class ArtifactDescriptorChannel(ArtifactModel):
    """The descriptor channel is a declared artifact of the command."""

    kind: Literal["artifact"]
    artifact_id: Slug


#: Where a command's response descriptor applies, discriminated on ``kind``.
DescriptorChannel = Annotated[
    StreamDescriptorChannel | ArtifactDescriptorChannel, Field(discriminator="kind")
]


class CommandOperation(_OperationModel):
    """A command-line operation (kind cli, new in v4)."""

    operation_id: Slug
    invocation: Invocation
    state_change_marker: bool
    request_shape: CommandRequestShape
    artifacts: list[Slug]
    descriptor_channel: DescriptorChannel
    response_descriptor: ResponseDescriptor
    volatile_pointers: list[DescriptorPointer]
    sensitivity_witness: Witness | None
    state_reset_pointers: list[DescriptorPointer] | None = None


class ApiInterface(ArtifactModel):
    """An ``api`` or ``web`` interface and its HTTP operations."""

    logical_id: Slug
    kind: Literal["api", "web"]
    operations: list[ApiOperation]


class CliInterface(ArtifactModel):
    """A ``cli`` interface and its command operations."""

    logical_id: Slug
    kind: Literal["cli"]
    operations: list[CommandOperation]


class ToolCallRequestShape(ArtifactModel):
    """An mcp tool-call operation's one request channel."""

    arguments: KeyShape


class StructuredResultChannel(ArtifactModel):
    """The descriptor channel of a tool call: its structured result (read as ``response-body``)."""

    kind: Literal["structured-result"]


class ToolCallOperation(_OperationModel):
    """An mcp tool-call operation (contract 6+): ``toolName`` and the ``arguments`` channel."""

    operation_id: Slug
    tool_name: NonEmptyStr
    state_change_marker: bool
    request_shape: ToolCallRequestShape
    descriptor_channel: StructuredResultChannel
    response_descriptor: ResponseDescriptor
    volatile_pointers: list[DescriptorPointer]
    sensitivity_witness: Witness | None
    state_reset_pointers: list[DescriptorPointer] | None = None


def _mcp_operation_form(value: Any) -> str:
    """``tool-call`` for an operation carrying ``toolName``, else the api-shaped form."""
    if isinstance(value, dict):
        return "tool-call" if TOOL_CALL_MARKER in value else "api-shaped"
    return "tool-call" if isinstance(value, ToolCallOperation) else "api-shaped"


#: An mcp operation: the api-shaped form (contracts 4, 5) or the tool-call form (6, 7).
McpOperation = Annotated[
    Annotated[ToolCallOperation, Tag("tool-call")] | Annotated[ApiOperation, Tag("api-shaped")],
    Discriminator(_mcp_operation_form),
]


class McpInterface(ArtifactModel):
    """An ``mcp`` interface; which operation form a stamp admits is checked by :func:`stamp_problems`."""

    logical_id: Slug
    kind: Literal["mcp"]
    operations: list[McpOperation]


#: A permitted interface, discriminated on ``kind``.
PermittedInterface = Annotated[ApiInterface | CliInterface | McpInterface, Field(discriminator="kind")]

# --- Reference sets, sibling groups -----------------------------------------------------------


class ReferenceSet(ArtifactModel):
    """A named set of expected members, keyed by ``keys``."""

    keys: Annotated[list[NonEmptyKey], Field(min_length=1)]
    members: list[dict[str, JsonValue]]
    commentary: str | None


class OperationPair(ArtifactModel):
    """An operation named by the pair (interfaceId, operationId) (contract 6+)."""

    interface_id: Slug
    operation_id: Slug


#: A sibling operation: a bare operation id (contracts 4, 5) or the pair (6, 7).
SiblingOperation = Slug | OperationPair


class SiblingGroups(ArtifactModel):
    """Groups of sibling operations and sibling parameters (each group of two or more)."""

    operations: list[Annotated[list[SiblingOperation], Field(min_length=2)]]
    parameters: list[Annotated[list[NonEmptyKey], Field(min_length=2)]]


# --- Interaction plan -------------------------------------------------------------------------


class LiteralBinding(ArtifactModel):
    """``{"literal": …}``: a fixed value."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("literal",)
    literal: JsonValue


class MatcherBinding(ArtifactModel):
    """``{"matcher": "any"|"type-violating"}``."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("matcher",)
    matcher: Matcher


class CapturedBinding(ArtifactModel):
    """``{"captured": pointer}``: the value observed earlier at that interaction pointer."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("captured",)
    captured: InteractionPointer


class PrincipalBinding(ArtifactModel):
    """``{"principal": slug}``: a named test-data principal (presence only)."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("principal",)
    principal: Slug


#: Exactly one of literal, matcher, captured, principal.
BindingValue = Annotated[
    Annotated[LiteralBinding, Tag("literal-form")]
    | Annotated[MatcherBinding, Tag("matcher-form")]
    | Annotated[CapturedBinding, Tag("captured-form")]
    | Annotated[PrincipalBinding, Tag("principal-form")],
    keyed_tag("literal", "matcher", "captured", "principal"),
]
#: A bound channel: a non-empty map of parameter name to value, or ``None`` (unbound).
BindingChannel = Annotated[dict[NonEmptyKey, BindingValue], Field(min_length=1)] | None


class TransportInputBinding(ArtifactModel):
    """A step's bindings on the transport channels."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("path", "query", "header", "body")
    path: BindingChannel
    query: BindingChannel
    header: BindingChannel
    body: BindingChannel


class CommandInputBinding(ArtifactModel):
    """A step's bindings on the command channels."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("argument", "option", "environment", "stdin")
    argument: BindingChannel
    option: BindingChannel
    environment: BindingChannel
    stdin: BindingChannel


class ToolCallInputBinding(ArtifactModel):
    """A step's binding of a tool call's ``arguments`` (contract 6+)."""

    WIRE_KEYS: ClassVar[tuple[str, ...]] = ("arguments",)
    arguments: BindingChannel


#: A step's input binding: transport form (keyed by ``path``), command form (``argument``) or
#: tool-call form (``arguments``).
InputBinding = Annotated[
    Annotated[TransportInputBinding, Tag("path-form")]
    | Annotated[CommandInputBinding, Tag("argument-form")]
    | Annotated[ToolCallInputBinding, Tag("arguments-form")],
    keyed_tag("path", "argument", "arguments"),
]


class PlanStep(StampedKeysModel):
    """One step of the interaction plan; ``after`` is the one-level temporal clause (AD-39).

    ``interface_id`` is on the wire from contract 6 (the pair identity); a step read at 4 or 5 has
    none and goes back to the wire without the key.
    """

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ("interface_id",)

    step_id: Slug
    interface_id: Slug | None = None
    operation_id: Slug
    input_binding: InputBinding
    after: Slug | None
    cardinality: StepCardinality



# --- Scope, test data, budgets, reset ---------------------------------------------------------


class ScopedResource(ArtifactModel):
    """A scoped resource reference (any entry fails compilation)."""

    reference: NonEmptyStr
    kind: NonEmptyStr


class TestDataEntry(ArtifactModel):
    """A principal or resource the harness provisions, by kind."""

    __test__ = False  # not a pytest class despite the name
    kind: NonEmptyStr


class TestData(ArtifactModel):
    """Setup and cleanup prose plus named principals and resources."""

    __test__ = False
    setup: str | None
    cleanup: str | None
    principals: dict[Slug, TestDataEntry] | None
    resources: dict[Slug, TestDataEntry] | None


class Budgets(ArtifactModel):
    """Tool-call, wall-clock and cost budgets (cost as an unsigned decimal string)."""

    max_tool_calls: NonNegativeInt
    max_wall_clock_minutes: NonNegativeInt
    max_cost_usd: UnsignedDecimal


class FixtureReset(ArtifactModel):
    """The operation and inputs that reset the fixture between pre-flight control legs."""

    leg_id: Slug
    interface_id: Slug
    operation_id: Slug
    inputs: WitnessInputs


# --- The contract ---------------------------------------------------------------------------


class EvalContract(LineageArtifact):
    """A compiled evaluation contract (artifacts.md §2.2)."""

    ARTIFACT_NAME: ClassVar[str] = "EvalContract"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = CONTRACT_SCHEMA_VERSIONS
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = max(CONTRACT_SCHEMA_VERSIONS)

    contract_id: Slug
    source_spec_digest: Digest | None
    behaviors: Annotated[list[Behavior], Field(min_length=1)]
    oracles: list[Oracle]
    rubrics: list[RubricBody]
    waivers: list[Waiver]
    permitted_interfaces: list[PermittedInterface]
    reference_sets: dict[Slug, ReferenceSet] | None
    sibling_groups: SiblingGroups | None
    interaction_plan: list[PlanStep]
    scoped_resources: list[ScopedResource] | None
    forbidden_inputs: list[ForbiddenInput]
    test_data: TestData
    budgets: Budgets
    safety_limits: list[str]
    required_evidence: list[str]
    probe_step_bound: NonNegativeInt | None
    fixture_reset: FixtureReset | None

    @model_validator(mode="before")
    @classmethod
    def _keys_match_the_stamp(cls, data: Any) -> Any:
        """The stamp-gated forms are present exactly at the stamps that carry them (module docstring)."""
        if isinstance(data, dict):
            version = data.get("schemaVersion", data.get("schema_version"))
            if isinstance(version, int) and not isinstance(version, bool) and version in CONTRACT_SCHEMA_VERSIONS:
                stamp_problems(data, version)
        return data


def _walk_witness_inputs(data: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every witness leg's and the fixture reset's ``inputs`` with its document path."""
    found: list[tuple[str, Any]] = []
    interfaces = data.get("permittedInterfaces")
    for i, interface in enumerate(interfaces if isinstance(interfaces, list) else []):
        operations = interface.get("operations") if isinstance(interface, dict) else None
        for j, operation in enumerate(operations if isinstance(operations, list) else []):
            witness = operation.get("sensitivityWitness") if isinstance(operation, dict) else None
            legs = witness.get("legs") if isinstance(witness, dict) else None
            for k, leg in enumerate(legs if isinstance(legs, list) else []):
                if isinstance(leg, dict):
                    found.append((f"permittedInterfaces[{i}].operations[{j}].sensitivityWitness.legs[{k}].inputs", leg.get("inputs")))
    reset = data.get("fixtureReset")
    if isinstance(reset, dict):
        found.append(("fixtureReset.inputs", reset.get("inputs")))
    return found


def _raise_stamp_problem(code: str, detail: str) -> None:
    raise PydanticCustomError(code, detail.replace("{", "{{").replace("}", "}}"))


def stamp_problems(data: dict[str, Any], version: int) -> None:
    """Refuse a stamp-gated form at a stamp that does not carry it (module docstring).

    A tool-call operation before contract 6 is ``unsupported-interface-kind`` (the reference's
    reading at those stamps); every other mismatch is a shape error.
    """
    pair = version >= FIRST_PAIR_CONTRACT
    problems: list[str] = []
    interfaces = data.get("permittedInterfaces")
    for i, interface in enumerate(interfaces if isinstance(interfaces, list) else []):
        if not isinstance(interface, dict) or interface.get("kind") != "mcp":
            continue
        operations = interface.get("operations")
        for j, operation in enumerate(operations if isinstance(operations, list) else []):
            if not isinstance(operation, dict):
                continue
            tool_call = TOOL_CALL_MARKER in operation
            if tool_call and not pair:
                _raise_stamp_problem(
                    "unsupported-interface-kind",
                    f"operation [{j}] of interface [{i}] is an mcp tool-call operation "
                    f"(toolName {operation.get(TOOL_CALL_MARKER)!r}); contract schemaVersion {version} "
                    "reads only the api-shaped mcp form (tool calls arrive at 6)",
                )
            if pair and not tool_call:
                problems.append(
                    f"permittedInterfaces[{i}].operations[{j}]: an mcp operation at schemaVersion {version} "
                    "is a tool call (toolName); the api-shaped form is read at 4 and 5 only"
                )
    for i, interface in enumerate(interfaces if isinstance(interfaces, list) else []):
        operations = interface.get("operations") if isinstance(interface, dict) else None
        for j, operation in enumerate(operations if isinstance(operations, list) else []):
            if not isinstance(operation, dict):
                continue
            if "stateResetPointers" in operation:
                where = f"permittedInterfaces[{i}].operations[{j}].stateResetPointers"
                if version < FIRST_STATE_RESET_POINTERS_CONTRACT:
                    problems.append(
                        f"{where} is not a key at schemaVersion {version} (it arrives at "
                        f"{FIRST_STATE_RESET_POINTERS_CONTRACT}, with the reference's 8.0.0)"
                    )
                elif operation["stateResetPointers"] is None:
                    problems.append(f"{where} is a list of descriptor pointers when present; leave the key off instead of null")
            descriptor = operation.get("responseDescriptor")
            for key, where, kind in (
                ("volatileHeaders", f"permittedInterfaces[{i}].operations[{j}].volatileHeaders", "a list of header names"),
                ("protocolSuccessIndicator", f"permittedInterfaces[{i}].operations[{j}].responseDescriptor.protocolSuccessIndicator",
                 '"response-status"'),
            ):
                holder = descriptor if key == "protocolSuccessIndicator" else operation
                if not isinstance(holder, dict) or key not in holder:
                    continue
                if version < FIRST_PROTOCOL_KEYS_CONTRACT:
                    problems.append(f"{where} is not a key at schemaVersion {version} (ours, it arrives at {FIRST_PROTOCOL_KEYS_CONTRACT})")
                elif holder[key] is None:
                    problems.append(f"{where} is {kind} when present; leave the key off instead of null")
    steps = data.get("interactionPlan")
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        if isinstance(step, dict):
            if pair and "interfaceId" not in step:
                problems.append(f"interactionPlan[{index}].interfaceId is required at schemaVersion {version}")
            if not pair and "interfaceId" in step:
                problems.append(f"interactionPlan[{index}].interfaceId is not a key at schemaVersion {version}")
    groups = data.get("siblingGroups")
    members = groups.get("operations") if isinstance(groups, dict) else None
    for g, group in enumerate(members if isinstance(members, list) else []):
        for m, member in enumerate(group if isinstance(group, list) else []):
            if pair and not isinstance(member, dict):
                problems.append(
                    f"siblingGroups.operations[{g}][{m}] is an {{interfaceId, operationId}} pair at schemaVersion {version}"
                )
            if not pair and not isinstance(member, str):
                problems.append(f"siblingGroups.operations[{g}][{m}] is an operation id at schemaVersion {version}")
    if version < FIRST_RAW_BODY_CONTRACT:
        for where, inputs in _walk_witness_inputs(data):
            body = inputs.get("body") if isinstance(inputs, dict) else None
            if isinstance(body, dict) and body.get("kind") == "raw":
                problems.append(f"{where}.body: a raw body arrives at schemaVersion {FIRST_RAW_BODY_CONTRACT}")
    if problems:
        raise ValueError("; ".join(problems))
