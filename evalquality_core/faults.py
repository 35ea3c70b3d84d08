"""The two fault registries: compile-time StructuralFailure (AD-5) and RuntimeFault (AD-28).

artifacts.md §5 and preflight-adapter.md §3.3. Both faults share the message shape
``<code> in <artifactPath>: <detail>``; the CLI maps StructuralFailure → exit 4 and RuntimeFault → 5.
Registries are ordered tuples in the spec's order; the ``Literal`` aliases are derived from them.
"""

from __future__ import annotations

from typing import Literal, get_args

FailureCode = Literal[
    "missing-requirement-linkage",
    "no-observable-success-criterion",
    "unreachable-check-evidence",
    "malformed-operator-expression",
    "quantifier-over-non-collection",
    "quantifier-nesting-exceeded",
    "unresolved-reference-set",
    "duplicate-operation-signature",
    "undeclared-mandatory-input",
    "oracle-missing-channel",
    "direction-check-misaligned",
    "unsupported-interface-kind",
    "nested-temporal-clause",
    "plan-exceeds-scripting-bound",
    "binding-cycle",
    "captured-channel-undeclared",
    "rubric-scores-reasoning-prose",
    "rubric-unanchored",
    "rubric-evidence-unreachable",
    "forbidden-input-floor-incomplete",
    "scoped-reference-resolves-forbidden",
    "waiver-incomplete",
    "brief-exceeds-scripting-bound",
    "unresolved-artifact-reference",
    "irreducible-step-reference",
    "excluded-content-in-declaration",
    "duplicate-interface-identifier",
]
#: AD-5 compile-time failure codes, in registry order (artifacts.md §5).
FAILURE_CODES: tuple[FailureCode, ...] = get_args(FailureCode)

RuntimeFaultCode = Literal[
    "schema-parse-failure",
    "schema-version-mismatch",
    "non-canonicalizable-value",
    "digest-mismatch",
    "budget-exhausted",
    "port-failure",
    "port-contract-violation",
    "forbidden-target",
    "aborted",
    "operator-cannot-accept-operand",
]
#: AD-28 runtime fault codes, in registry order.
RUNTIME_FAULT_CODES: tuple[RuntimeFaultCode, ...] = get_args(RuntimeFaultCode)

ForbiddenTargetReason = Literal[
    "interface-not-authorized",
    "scheme-not-authorized",
    "host-not-authorized",
    "port-not-authorized",
    "address-not-authorized",
    "address-unparseable",
    "method-not-authorized",
    "executable-not-authorized",
    "subcommand-not-authorized",
    "environment-key-not-authorized",
    "tool-not-authorized",
    # Ours (the command-line adapter's argument rules: option-key grammar, dash-leading positionals).
    "argument-not-authorized",
]
#: Reasons a ``forbidden-target`` fault may carry.
FORBIDDEN_TARGET_REASONS: tuple[ForbiddenTargetReason, ...] = get_args(ForbiddenTargetReason)

PortFailureReason = Literal["launch-too-large"]
#: Reasons a ``port-failure`` fault may carry (E2BIG).
PORT_FAILURE_REASONS: tuple[PortFailureReason, ...] = get_args(PortFailureReason)


class EvalQualityFault(Exception):
    """Base of both registries: a code, the artifact path naming where, and a detail."""

    code: str
    artifact_path: str
    detail: str

    def __init__(self, code: str, artifact_path: str, detail: str) -> None:
        self.code = code
        self.artifact_path = artifact_path
        self.detail = detail
        super().__init__(f"{code} in {artifact_path}: {detail}")

    def __reduce__(self) -> tuple[object, ...]:
        # Picklable despite the keyword-only constructor, so a fault can cross a thread/process
        # boundary (Prefect task states, process pools) and come back as the same class.
        return (_restore_fault, (type(self), dict(self.__dict__), self.args))


def _restore_fault(cls: type[EvalQualityFault], state: dict[str, object], args: tuple[object, ...]) -> EvalQualityFault:
    fault = cls.__new__(cls)
    Exception.__init__(fault, *args)
    fault.__dict__.update(state)
    return fault


class StructuralFailure(EvalQualityFault):
    """A compile-time failure (AD-5): the artifact is well-formed but breaks a rule of the design."""

    def __init__(self, code: FailureCode, artifact_path: str, detail: str) -> None:
        if code not in FAILURE_CODES:
            raise ValueError(f"unknown structural failure code {code!r}")
        super().__init__(code, artifact_path, detail)


class RuntimeFault(EvalQualityFault):
    """A runtime fault (AD-28). ``reason`` only on ``forbidden-target``; ``port_failure_reason`` only
    on ``port-failure`` (the newest reference page, preflight-adapter.md §3.3)."""

    reason: ForbiddenTargetReason | None
    port_failure_reason: PortFailureReason | None

    def __init__(
        self,
        code: RuntimeFaultCode,
        artifact_path: str,
        detail: str,
        *,
        reason: ForbiddenTargetReason | None = None,
        port_failure_reason: PortFailureReason | None = None,
    ) -> None:
        if code not in RUNTIME_FAULT_CODES:
            raise ValueError(f"unknown runtime fault code {code!r}")
        if reason is not None and (code != "forbidden-target" or reason not in FORBIDDEN_TARGET_REASONS):
            raise ValueError(f"reason {reason!r} is not allowed on {code!r}")
        if port_failure_reason is not None and (
            code != "port-failure" or port_failure_reason not in PORT_FAILURE_REASONS
        ):
            raise ValueError(f"port failure reason {port_failure_reason!r} is not allowed on {code!r}")
        self.reason = reason
        self.port_failure_reason = port_failure_reason
        super().__init__(code, artifact_path, detail)


class AggregationRefusal(EvalQualityFault):
    """``aggregate-strength`` refused its inputs (``strength-inputs-disagree`` or
    ``strength-input-inconsistent``); the CLI exits 4 (preflight-adapter.md §7.4)."""
