"""Closed vocabularies of artifacts.md §5, as ordered tuples with derived ``Literal`` aliases.

Core modules and the CLI import these; nothing redefines a vocabulary elsewhere. Fault code
registries live beside their exception classes in ``faults.py``.
"""

from __future__ import annotations

from typing import Literal, get_args

Verdict = Literal["PASS", "WAIVED", "CONCERNS", "FAIL"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

EvaluatorRecommendation = Literal["PASS", "CONCERNS", "FAIL"]
EVALUATOR_RECOMMENDATIONS: tuple[EvaluatorRecommendation, ...] = get_args(EvaluatorRecommendation)

RunMode = Literal["production", "contract-scoring"]
RUN_MODES: tuple[RunMode, ...] = get_args(RunMode)

Relation = Literal[
    "equality",
    "deep-equality",
    "containment",
    "existence",
    "absence",
    "regex",
    "set-membership",
    "ordering",
    "count-tolerance",
    "shape",
    "covers-by-key",
    "all",
    "any",
    "not",
    "for-all",
    "for-any",
]
#: The sixteen expression relations: 11 operators, 3 connectives, 2 quantifiers (AD-4).
RELATIONS: tuple[Relation, ...] = get_args(Relation)
OPERATORS: tuple[Relation, ...] = RELATIONS[:11]
CONNECTIVES: tuple[Relation, ...] = RELATIONS[11:14]
QUANTIFIERS: tuple[Relation, ...] = RELATIONS[14:]

Polarity = Literal["expects-hold", "expects-violation"]
POLARITIES: tuple[Polarity, ...] = get_args(Polarity)

ForbiddenInput = Literal[
    "original-spec",
    "source-code",
    "repository",
    "builder-transcript",
    "implementation-logs",
    "comparator-results",
    "human-labels",
]
#: AD-16: exactly these seven must be declared forbidden by every contract.
FORBIDDEN_INPUT_FLOOR: tuple[ForbiddenInput, ...] = get_args(ForbiddenInput)

Severity = Literal["low", "material", "critical"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)

InterfaceKind = Literal["api", "web", "cli", "mcp"]
INTERFACE_KINDS: tuple[InterfaceKind, ...] = get_args(InterfaceKind)
#: Kinds compile and qualification support (mcp: the tool-call form of contract 6+; ``web`` is refused).
SUPPORTED_INTERFACE_KINDS: tuple[InterfaceKind, ...] = ("api", "cli", "mcp")
#: Kinds pre-flight plans legs for: api (HTTP adapter), cli (command-line adapter), mcp (stdio MCP adapter).
PREFLIGHT_INTERFACE_KINDS: tuple[InterfaceKind, ...] = ("api", "cli", "mcp")

HttpMethod = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
HTTP_METHODS: tuple[HttpMethod, ...] = get_args(HttpMethod)

JsonTypeName = Literal["string", "number", "boolean", "object", "array", "null"]
JSON_TYPE_NAMES: tuple[JsonTypeName, ...] = get_args(JsonTypeName)

ChannelRole = Literal["success-indicator", "diagnostic", "payload", "collection"]
CHANNEL_ROLES: tuple[ChannelRole, ...] = get_args(ChannelRole)

CardinalityMode = Literal["exact", "at-most", "page-bounded"]
CARDINALITY_MODES: tuple[CardinalityMode, ...] = get_args(CardinalityMode)

StepCardinality = Literal["exactly-one", "at-most-one", "any"]
STEP_CARDINALITIES: tuple[StepCardinality, ...] = get_args(StepCardinality)

Matcher = Literal["any", "type-violating"]
MATCHERS: tuple[Matcher, ...] = get_args(Matcher)

TransportChannel = Literal["path", "query", "header", "body"]
TRANSPORT_CHANNELS: tuple[TransportChannel, ...] = get_args(TransportChannel)
CommandChannel = Literal["argument", "option", "environment", "stdin"]
COMMAND_CHANNELS: tuple[CommandChannel, ...] = get_args(CommandChannel)
InputChannel = Literal["path", "query", "header", "body", "argument", "option", "environment", "stdin"]
INPUT_CHANNELS: tuple[InputChannel, ...] = get_args(InputChannel)

#: The tool-call input channel (contract 6+, mcp operations).
TOOL_CALL_CHANNELS: tuple[str, ...] = ("arguments",)

WitnessChannel = Literal["path", "query", "body", "argument", "option", "environment", "stdin", "arguments"]
WITNESS_CHANNELS: tuple[WitnessChannel, ...] = get_args(WitnessChannel)

PayloadTag = Literal["json", "text", "absent"]
PAYLOAD_TAGS: tuple[PayloadTag, ...] = get_args(PayloadTag)

DescriptorChannelKind = Literal["stream", "artifact", "structured-result"]
DESCRIPTOR_CHANNEL_KINDS: tuple[DescriptorChannelKind, ...] = get_args(DescriptorChannelKind)

EvidenceChannel = Literal[
    "response-body",
    "response-headers",
    "response-status",
    "call-inputs",
    "stdout",
    "stderr",
    "exit-code",
    "artifact",
]
EVIDENCE_CHANNELS: tuple[EvidenceChannel, ...] = get_args(EvidenceChannel)

ProbeClass = Literal["defect", "gameability", "zero-action", "canary"]
PROBE_CLASSES: tuple[ProbeClass, ...] = get_args(ProbeClass)

QualificationRoute = Literal["historical", "controlled-mutation", "gameability", "canary", "clean-control"]
QUALIFICATION_ROUTES: tuple[QualificationRoute, ...] = get_args(QualificationRoute)

DefectSource = Literal["natural", "controlled-mutation"]
DEFECT_SOURCES: tuple[DefectSource, ...] = get_args(DefectSource)

CanaryIndicts = Literal["corpus", "fixture"]
CANARY_INDICTS: tuple[CanaryIndicts, ...] = get_args(CanaryIndicts)

OutcomeState = Literal[
    "caught",
    "confirmed",
    "missed",
    "passed-clean-control",
    "false-positive",
    "abstained",
    "bypassed",
    "unreached",
    "oracle-error",
    "judge-error",
    "infrastructure-error",
    "not-applicable",
]
#: AD-6: the twelve outcome states.
OUTCOME_STATES: tuple[OutcomeState, ...] = get_args(OutcomeState)

Disposition = Literal["held", "violated", "not-attempted"]
DISPOSITIONS: tuple[Disposition, ...] = get_args(Disposition)

Corroboration = Literal["agrees", "disagrees", "not-evaluable"]
CORROBORATIONS: tuple[Corroboration, ...] = get_args(Corroboration)

CheckResolution = Literal["true", "false", "insufficient-evidence"]
CHECK_RESOLUTIONS: tuple[CheckResolution, ...] = get_args(CheckResolution)

FindingType = Literal["defect", "observation", "confirmation"]
FINDING_TYPES: tuple[FindingType, ...] = get_args(FindingType)

ObservationProvenance = Literal["baseline", "evaluator-chosen"]
OBSERVATION_PROVENANCES: tuple[ObservationProvenance, ...] = get_args(ObservationProvenance)

StrengthBasis = Literal["measured", "reconstructed"]
STRENGTH_BASES: tuple[StrengthBasis, ...] = get_args(StrengthBasis)

PreflightCheckKind = Literal[
    "interface-present",
    "input-sensitivity",
    "state-reset",
    "clean-control",
    "seeded-faults-scoped",
    "seeded-fault-fired",
]
PREFLIGHT_CHECK_KINDS: tuple[PreflightCheckKind, ...] = get_args(PreflightCheckKind)

PreflightCheckOutcome = Literal["satisfied", "failed", "exempt"]
PREFLIGHT_CHECK_OUTCOMES: tuple[PreflightCheckOutcome, ...] = get_args(PreflightCheckOutcome)

#: The pre-flight leg kinds: the reference's five (preflight-adapter.md §1.2), in the order a plan emits
#: them, plus ours, ``seeded-fault-clean``: a manifestation witness's own inputs sent to the *clean*
#: system, planned only when fault legs run against a seeded system (``plan_preflight(clean_witness_legs=True)``).
LegPurpose = Literal[
    "sensitivity", "control-observe", "control-mutate", "control-reset", "seeded-fault", "seeded-fault-clean"
]
LEG_PURPOSES: tuple[LegPurpose, ...] = get_args(LegPurpose)

PrivateArtifactKind = Literal[
    "private-input-record",
    "raw-trace",
    "raw-result",
    "human-label",
    "implementation-patch",
    "isolation-manifest",
    "scripted-baseline-output",
    "other",
]
PRIVATE_ARTIFACT_KINDS: tuple[PrivateArtifactKind, ...] = get_args(PrivateArtifactKind)

FloorDecision = Literal["meets", "does-not-meet", "undeclared"]
FLOOR_DECISIONS: tuple[FloorDecision, ...] = get_args(FloorDecision)

FloorBasis = Literal[
    "rate-meets-floor",
    "no-eligible-probe",
    "not-comparable",
    "no-exercised-probe",
    "unexercised-probe",
    "rate-below-floor",
    "no-floor-declared",
]
FLOOR_BASES: tuple[FloorBasis, ...] = get_args(FloorBasis)

COMPOSITE_PROTOCOL = "eval-quality/composite/v1"
DIRECTORY_PROTOCOL = "eval-quality/directory/v1"

#: Regular expressions shared by models and adapters (artifacts.md §2.0).
SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"

#: CLI exit codes (preflight-adapter.md §7.4).
EXIT_SUCCESS = 0
EXIT_CONCERNS_STRICT = 1
EXIT_FAIL = 2
EXIT_INVALID = 3
EXIT_STRUCTURAL = 4
EXIT_RUNTIME_FAULT = 5
EXIT_USAGE = 64
EXIT_CODES: tuple[int, ...] = (
    EXIT_SUCCESS,
    EXIT_CONCERNS_STRICT,
    EXIT_FAIL,
    EXIT_INVALID,
    EXIT_STRUCTURAL,
    EXIT_RUNTIME_FAULT,
    EXIT_USAGE,
)
