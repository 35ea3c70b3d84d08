"""EvalContract and every sub-model (artifacts.md §2.2), read at ``schemaVersion`` 4 and 5.

Contracts 4 and 5 have identical shapes for api and cli operations (00-overview.md), so one model
reads both and records the stamp as read; a new contract is written at 5, the newest we read.

MCP: ``permittedInterfaces`` of kind ``mcp`` are read only in the v4 api-shaped form (method,
pathTemplate, transport request shape). The newer MCP *tool-call* form (an operation carrying
``toolName``) is out of scope: the ``mcp`` interface's operation list recognises it before any shape
check and reports the failure code ``unsupported-interface-kind``, which
:func:`~evalquality_core.artifacts.base.read_artifact` raises as a ``StructuralFailure`` (exit 4) in
preference to the shape errors the rest of such a document also produces (``inputBinding.arguments``,
``call-inputs/arguments`` pointers). See :data:`TOOL_CALL_MARKER`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, Tag, field_validator
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
    "CONTRACT_SCHEMA_VERSIONS",
    "TOOL_CALL_MARKER",
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
CONTRACT_SCHEMA_VERSIONS: tuple[int, ...] = (4, 5)
#: The key whose presence on an ``mcp`` operation marks the out-of-scope tool-call form.
TOOL_CALL_MARKER = "toolName"

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


#: A transport witness body: json or absent.
WitnessBody = Annotated[JsonPayload | AbsentPayload, Field(discriminator="kind")]
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


class ResponseDescriptor(KeyShape):
    """The descriptor channel's key shape plus success indicator, channel roles and collections.

    ``None``, empty and populated are three distinct answers (AD-31 grading).
    """

    success_indicator: DescriptorPointer | None
    channel_roles: dict[DescriptorPointer, ChannelRole] | None
    collection_locations: list[CollectionLocation] | None


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


#: A leg's inputs: the transport form (keyed by ``path``) or the command form (keyed by ``argument``).
WitnessInputs = Annotated[
    Annotated[TransportWitnessInputs, Tag("path-form")] | Annotated[CommandWitnessInputs, Tag("argument-form")],
    keyed_tag("path", "argument"),
]


class WitnessLeg(ArtifactModel):
    """One of a witness's two legs."""

    leg_id: Slug
    inputs: WitnessInputs


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


class ApiOperation(ArtifactModel):
    """An HTTP-shaped operation (kinds api, web, and v4 mcp)."""

    operation_id: Slug
    method: HttpMethod
    path_template: Annotated[str, Field(pattern=r"^(?:\/(?:[^/{}:]|\{[A-Za-z0-9_-]+\})*)+$")]
    state_change_marker: bool
    request_shape: TransportRequestShape
    response_descriptor: ResponseDescriptor
    volatile_pointers: list[DescriptorPointer]
    sensitivity_witness: Witness | None


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


class CommandOperation(ArtifactModel):
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


def _refuse_tool_call_form(operations: Any) -> Any:
    """Report an MCP tool-call operation as ``unsupported-interface-kind`` (see module docstring)."""
    if isinstance(operations, list):
        for index, operation in enumerate(operations):
            if isinstance(operation, dict) and TOOL_CALL_MARKER in operation:
                detail = (
                    f"operation [{index}] is an mcp tool-call operation "
                    f"(toolName {operation.get(TOOL_CALL_MARKER)!r}); only the api-shaped mcp form is supported"
                )
                raise PydanticCustomError("unsupported-interface-kind", detail.replace("{", "{{").replace("}", "}}"))
    return operations


class McpInterface(ArtifactModel):
    """An ``mcp`` interface in the v4 api-shaped form only; the tool-call form is refused."""

    logical_id: Slug
    kind: Literal["mcp"]
    operations: list[ApiOperation]

    @field_validator("operations", mode="before")
    @classmethod
    def _no_tool_call_form(cls, value: Any) -> Any:
        """Recognise the tool-call form before the shape check so compile can name it."""
        return _refuse_tool_call_form(value)


#: A permitted interface, discriminated on ``kind``.
PermittedInterface = Annotated[ApiInterface | CliInterface | McpInterface, Field(discriminator="kind")]

# --- Reference sets, sibling groups -----------------------------------------------------------


class ReferenceSet(ArtifactModel):
    """A named set of expected members, keyed by ``keys``."""

    keys: Annotated[list[NonEmptyKey], Field(min_length=1)]
    members: list[dict[str, JsonValue]]
    commentary: str | None


class SiblingGroups(ArtifactModel):
    """Groups of sibling operations and sibling parameters (each group of two or more)."""

    operations: list[Annotated[list[Slug], Field(min_length=2)]]
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


#: A step's input binding: transport form (keyed by ``path``) or command form (keyed by ``argument``).
InputBinding = Annotated[
    Annotated[TransportInputBinding, Tag("path-form")] | Annotated[CommandInputBinding, Tag("argument-form")],
    keyed_tag("path", "argument"),
]


class PlanStep(ArtifactModel):
    """One step of the interaction plan; ``after`` is the one-level temporal clause (AD-39)."""

    step_id: Slug
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
