"""Probe: a planted defect, its qualification and its defect signature (artifacts.md §2.5), read at 5 and 6.

Two branches on ``expectedClean``. A clean control (``true``) has no defects and *no*
``defectSignature`` key; every other probe carries the key (a signature, or ``null`` for canaries).
One model holds both: ``defect_signature`` is ``None`` for a clean control, a validator enforces the
key's presence or absence by branch, and the serializer drops the key for a clean control, so a
parsed probe goes back to the wire byte-identical.

The v5 signature selector binds nine channels: the eight input channels plus ``arguments`` (the
MCP tool-call channel), always present and ``null`` in every v5 probe we hold; the published
(older) schema lacks it and so rejects these documents, and the documents win (conformance README).
Probe 6 (the reference at contract 7) admits two more forms, refused at 5: a tool-call signature
:class:`McpDefectSignature` (``interfaceKind: "mcp"`` with ``toolName``; at probe 5 it is
``unsupported-interface-kind``) and a raw body ``{kind: "raw", base64, contentType}`` in a
manifestation witness's inputs. A probe is written at 6.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from evalquality_core.artifacts.base import (
    ArtifactModel,
    BehaviorId,
    DefectId,
    Digest,
    LineageArtifact,
    NonEmptyStr,
    ProbeId,
    Slug,
    StampedKeysModel,
)
from evalquality_core.artifacts.contract import (
    TOOL_CALL_MARKER,
    Invocation,
    LegCalls,
    LiteralBinding,
    MatcherBinding,
    WitnessInputs,
)
from evalquality_core.artifacts.expression import Expression, NonEmptyKey, keyed_tag
from evalquality_core.artifacts.references import ArtifactReference
from evalquality_core.registries import (
    CanaryIndicts,
    DefectSource,
    EvidenceChannel,
    HttpMethod,
    ProbeClass,
    Severity,
)

__all__ = [
    "FIRST_TOOL_CALL_PROBE",
    "OBSERVED_STEP_ID",
    "PROBE_SCHEMA_VERSIONS",
    "McpDefectSignature",
    "CanaryQualification",
    "CleanControlQualification",
    "CommandDefectSignature",
    "ControlledMutationQualification",
    "Defect",
    "DefectSignature",
    "GameabilityQualification",
    "HistoricalQualification",
    "HttpDefectSignature",
    "ManifestationWitness",
    "Probe",
    "ProbeBindingChannel",
    "ProbeBindingValue",
    "ProbeInputBinding",
    "Qualification",
    "SignatureCondition",
    "SignatureSelector",
]

#: Every pointer in a signature predicate is rooted at this reserved step identifier (AD-40).
OBSERVED_STEP_ID = "observed"

# --- Qualification (AD-9): five routes ---------------------------------------------------------


class HistoricalQualification(ArtifactModel):
    """A defect seen failing before a fix and passing after it."""

    route: Literal["historical"]
    fail_before_evidence: ArtifactReference
    pass_after_evidence: ArtifactReference
    fix_commit_digest: Digest
    oracle_stable_across_revisions: bool


class ControlledMutationQualification(ArtifactModel):
    """A defect planted by a named mutation, with baseline and mutated evidence."""

    route: Literal["controlled-mutation"]
    mutation_source: NonEmptyStr
    mutation_operator: NonEmptyStr
    target_artifact: ArtifactReference
    expected_observable_failure: NonEmptyStr
    baseline_pass_evidence: ArtifactReference
    mutated_fail_evidence: ArtifactReference
    rollback_verified: bool


class GameabilityQualification(ArtifactModel):
    """A degenerate response that satisfies a naive oracle and is rejected by a disciplined one."""

    route: Literal["gameability"]
    degenerate_response: NonEmptyStr
    naive_oracle_satisfied_evidence: ArtifactReference
    disciplined_oracle_rejected_evidence: ArtifactReference


class CanaryQualification(ArtifactModel):
    """A canary: what its non-detection indicts."""

    route: Literal["canary"]
    indicts: CanaryIndicts
    non_detection_evidence: ArtifactReference


class CleanControlQualification(ArtifactModel):
    """A clean control: a revision with no known defect."""

    route: Literal["clean-control"]
    baseline_pass_evidence: ArtifactReference
    revision_commit_digest: Digest
    no_known_defect_statement: NonEmptyStr


#: The qualification route, discriminated on ``route``.
Qualification = Annotated[
    HistoricalQualification
    | ControlledMutationQualification
    | GameabilityQualification
    | CanaryQualification
    | CleanControlQualification,
    Field(discriminator="route"),
]

# --- Defects ---------------------------------------------------------------------------------


class ManifestationWitness(StampedKeysModel):
    """A leg that makes the defect manifest, and the relation its observation must show.

    ``calls`` (optional, any stamp) makes it a multi-call leg: further calls in the same workspace and
    session after the witness's own, which the relation may read (a write, then its read-back).
    """

    STAMPED_KEYS: ClassVar[tuple[str, ...]] = ("calls",)

    leg_id: Slug
    interface_id: Slug
    operation_id: Slug
    inputs: WitnessInputs
    relation: Expression
    calls: LegCalls = None


class Defect(ArtifactModel):
    """One planted defect of the probe."""

    defect_id: DefectId
    behavior_id: BehaviorId
    summary: NonEmptyStr
    severity: Severity
    oracle_evidence: list[ArtifactReference]
    source: DefectSource
    manifestation_witness: ManifestationWitness | None


# --- Defect signature (AD-40) -----------------------------------------------------------------

#: A signature binding: a literal or a matcher only (no captured, no principal).
ProbeBindingValue = Annotated[
    Annotated[LiteralBinding, Tag("literal-form")] | Annotated[MatcherBinding, Tag("matcher-form")],
    keyed_tag("literal", "matcher"),
]
#: A non-empty map of parameter to binding, or ``None``.
ProbeBindingChannel = Annotated[dict[NonEmptyKey, ProbeBindingValue], Field(min_length=1)] | None


class ProbeInputBinding(ArtifactModel):
    """The selector's bindings over all nine channels (transport, command, and ``arguments``)."""

    path: ProbeBindingChannel
    query: ProbeBindingChannel
    header: ProbeBindingChannel
    body: ProbeBindingChannel
    argument: ProbeBindingChannel
    option: ProbeBindingChannel
    environment: ProbeBindingChannel
    stdin: ProbeBindingChannel
    arguments: ProbeBindingChannel


class SignatureSelector(ArtifactModel):
    """Which observed calls the signature applies to."""

    input_binding: ProbeInputBinding


class SignatureCondition(ArtifactModel):
    """Selector plus predicate over the reserved ``observed`` step."""

    selector: SignatureSelector
    predicate: Expression


class HttpDefectSignature(ArtifactModel):
    """Signature on an HTTP-shaped operation; identity is ``METHOD pathTemplate`` with names erased."""

    interface_kind: Literal["api", "web", "mcp"]
    method: HttpMethod
    path_template: Annotated[str, Field(pattern=r"^(?:\/(?:[^/{}:]|\{[A-Za-z0-9_-]+\})*)+$")]
    observable_channel: EvidenceChannel
    condition: SignatureCondition


class McpDefectSignature(ArtifactModel):
    """Signature on an mcp tool call (probe 6); identity is the ``toolName``."""

    interface_kind: Literal["mcp"]
    tool_name: NonEmptyStr
    observable_channel: EvidenceChannel
    condition: SignatureCondition


class CommandDefectSignature(ArtifactModel):
    """Signature on a command; identity is the executable and subcommand segments."""

    interface_kind: Literal["cli"]
    invocation: Invocation
    observable_channel: EvidenceChannel
    condition: SignatureCondition


def _signature_form(value: Any) -> str:
    """``tool-call`` when the signature names a ``toolName``; else by ``interfaceKind``."""
    if isinstance(value, dict):
        if TOOL_CALL_MARKER in value:
            return "tool-call"
        return "command" if value.get("interfaceKind", value.get("interface_kind")) == "cli" else "http"
    if isinstance(value, McpDefectSignature):
        return "tool-call"
    return "command" if isinstance(value, CommandDefectSignature) else "http"


#: A defect signature: HTTP-shaped, command, or (probe 6) tool call.
DefectSignature = Annotated[
    Annotated[HttpDefectSignature, Tag("http")]
    | Annotated[CommandDefectSignature, Tag("command")]
    | Annotated[McpDefectSignature, Tag("tool-call")],
    Discriminator(_signature_form),
]
#: Probe stamps we read; the newest is what we write.
PROBE_SCHEMA_VERSIONS: tuple[int, ...] = (5, 6)
#: The first probe stamp with tool-call signatures and raw bodies.
FIRST_TOOL_CALL_PROBE = 6

_BRANCHES = {
    "if": {"properties": {"expectedClean": {"const": True}}},
    "then": {"not": {"required": ["defectSignature"]}, "properties": {"defects": {"maxItems": 0}}},
    "else": {"required": ["defectSignature"]},
}


class Probe(LineageArtifact):
    """A probe: a system variant with planted defects (or none, for a clean control)."""

    model_config = ConfigDict(json_schema_extra=_BRANCHES)

    ARTIFACT_NAME: ClassVar[str] = "Probe"
    ACCEPTED_SCHEMA_VERSIONS: ClassVar[tuple[int, ...]] = PROBE_SCHEMA_VERSIONS
    WRITTEN_SCHEMA_VERSION: ClassVar[int] = max(PROBE_SCHEMA_VERSIONS)

    probe_id: ProbeId
    probe_class: ProbeClass
    behavior_id: BehaviorId
    system_id: NonEmptyStr
    implementation_digest: Digest
    artifact_digest: Digest
    commit_digest: Digest
    rationale: NonEmptyStr
    qualification: Qualification
    expected_clean: bool
    defects: list[Defect]
    # The one key that may be absent (clean controls): its default stands only for that absence,
    # which the validator below allows for a clean control alone.
    defect_signature: DefectSignature | None = None

    @model_validator(mode="before")
    @classmethod
    def _signature_key_by_branch(cls, data: Any) -> Any:
        """``defectSignature`` is absent iff ``expectedClean`` is true (the schema's two branches)."""
        if not isinstance(data, dict):
            return data
        clean = data.get("expectedClean")
        has_key = "defectSignature" in data or "defect_signature" in data
        if clean is True and has_key:
            raise PydanticCustomError("extra_forbidden", "a clean control (expectedClean true) has no defectSignature")
        if clean is False and not has_key:
            raise PydanticCustomError("missing", "defectSignature is required unless expectedClean is true")
        version = data.get("schemaVersion", data.get("schema_version"))
        modern = isinstance(version, int) and version >= FIRST_TOOL_CALL_PROBE
        signature = data.get("defectSignature", data.get("defect_signature"))
        if isinstance(signature, dict) and TOOL_CALL_MARKER in signature and not modern:
            raise PydanticCustomError(
                "unsupported-interface-kind",
                f"the defect signature names an mcp tool call; probe schemaVersion {version} reads only "
                f"api-shaped mcp signatures (tool calls arrive at {FIRST_TOOL_CALL_PROBE})",
            )
        if not modern:
            defects = data.get("defects")
            for index, defect in enumerate(defects if isinstance(defects, list) else []):
                witness = defect.get("manifestationWitness") if isinstance(defect, dict) else None
                inputs = witness.get("inputs") if isinstance(witness, dict) else None
                body = inputs.get("body") if isinstance(inputs, dict) else None
                if isinstance(body, dict) and body.get("kind") == "raw":
                    raise ValueError(
                        f"defects[{index}].manifestationWitness.inputs.body: a raw body arrives at "
                        f"probe schemaVersion {FIRST_TOOL_CALL_PROBE}"
                    )
        return data

    @model_validator(mode="after")
    def _clean_control_has_no_defects(self) -> Probe:
        """A clean control declares no defects (``maxItems: 0``)."""
        if self.expected_clean and self.defects:
            raise ValueError("a clean control (expectedClean true) declares no defects")
        return self

    @model_serializer(mode="wrap")
    def _drop_absent_signature(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A clean control goes back to the wire without the ``defectSignature`` key."""
        value = handler(self)
        if self.expected_clean and isinstance(value, dict):
            value.pop("defectSignature", None)
            value.pop("defect_signature", None)
        return value
