"""``ProbeTargetPolicy``: the default-deny authorization of api (HTTP) targets, and its decision.

preflight-adapter.md §4.9 and the reference's ``evaluateTarget`` / ``parseProbeTargetPolicy`` (AD-35).
An authorization is keyed by ``interfaceId`` (several may name one interface; they are tried in
declaration order and the first that allows wins; when none allows, the *first* one's denial is
reported, so the reason names a target the mapping really declares). Every field is required and
none has a default: an omitted cap would be an unbounded cap.

The decision is pure and runs before any socket opens. Its order is the ``DECISION_TABLE`` below, one
row per check, each with the reason it denies with. Address classes (``probe.address``) are reported
with every decision and never allow anything: a loopback, private, link-local or metadata address
is reachable only when an authorization names that exact address.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator

from evalquality_core.artifacts.base import ArtifactModel, NonEmptyStr
from evalquality_core.artifacts.port_messages import Identifier
from evalquality_core.faults import ForbiddenTargetReason, RuntimeFault
from evalquality_core.probe.address import AddressClass, ParsedAddress, classify_address, parse_address
from evalquality_core.probe.policy import MAX_ELAPSED_MS
from evalquality_core.registries import HttpMethod

__all__ = [
    "DECISION_TABLE",
    "ApiTargetDecision",
    "ProbeTargetAuthorization",
    "ProbeTargetPolicy",
    "ResolvedTarget",
    "evaluate_api_target",
    "is_safe_method",
    "normalize_host",
    "parse_probe_target_policy",
]


class ProbeTargetAuthorization(ArtifactModel):
    """One authorized HTTP target of one interface, and the caps every exchange with it runs under."""

    interface_id: Identifier
    scheme: Literal["http", "https"]
    host: NonEmptyStr
    port: Annotated[int, Field(ge=1, le=65535)]
    #: The exact addresses the host may resolve to; compared after parsing, never by class.
    addresses: Annotated[list[NonEmptyStr], Field(min_length=1)]
    methods: Annotated[list[HttpMethod], Field(min_length=1)]
    #: Methods a differential (body-sensitivity) probe may use here; ``[]`` means none.
    safe_methods: list[HttpMethod]
    max_redirects: Annotated[int, Field(ge=0)]
    max_elapsed_ms: Annotated[int, Field(ge=1, le=MAX_ELAPSED_MS)]
    max_request_bytes: Annotated[int, Field(ge=1)]
    max_response_bytes: Annotated[int, Field(ge=1)]

    @field_validator("addresses")
    @classmethod
    def _every_address_parses(cls, addresses: list[str]) -> list[str]:
        for address in addresses:
            if parse_address(address) is None:
                raise ValueError(f'address "{address}" is not a readable IPv4 or IPv6 address')
        return addresses


class ProbeTargetPolicy(ArtifactModel):
    """``{authorizations: [...]}``; an empty list authorizes nothing (the default-deny base case)."""

    authorizations: list[ProbeTargetAuthorization]


def _pointer(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return "(root)"
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in loc)


def parse_probe_target_policy(value: Any, artifact_path: str = "ProbeTargetPolicy") -> ProbeTargetPolicy:
    """Validate a JSON value (camelCase keys) as a policy, or raise ``schema-parse-failure`` listing
    every issue as ``<RFC 6901 pointer>: <message>``."""
    try:
        return ProbeTargetPolicy.model_validate(value, by_alias=True, by_name=False)
    except ValidationError as exc:
        issues = "; ".join(f"{_pointer(tuple(err['loc']))}: {err['msg']}" for err in exc.errors())
        raise RuntimeFault(
            "schema-parse-failure",
            artifact_path,
            f"input does not conform to the ProbeTargetPolicy schema: {issues}",
        ) from None


@dataclass(frozen=True)
class ResolvedTarget:
    """One hop as the adapter is about to make it: where (scheme, host, port), which resolved
    address it would connect to, and with which method."""

    interface_id: str
    scheme: str
    host: str
    port: int
    address: str
    method: str


@dataclass(frozen=True)
class ApiTargetDecision:
    """An allow (with the authorization and the canonical address to connect to) or a deny (with a
    reason and a detail). ``address_class`` is reported either way."""

    allowed: bool
    authorization: ProbeTargetAuthorization | None
    reason: ForbiddenTargetReason | None
    detail: str
    address_class: AddressClass
    canonical_address: str | None = None

    def fault(self, artifact_path: str = "ProbeRequest") -> RuntimeFault:
        """The ``forbidden-target`` fault this denial raises."""
        if self.allowed or self.reason is None:
            raise ValueError("an allowed decision is not a fault")
        return RuntimeFault("forbidden-target", artifact_path, self.detail, reason=self.reason)


def normalize_host(host: str) -> str:
    """DNS names are case-insensitive and ``a.test.`` is ``a.test``: lower-case, one trailing dot off."""
    lowered = host.lower()
    return lowered[:-1] if lowered.endswith(".") else lowered


@dataclass(frozen=True)
class _Context:
    authorization: ProbeTargetAuthorization
    target: ResolvedTarget
    parsed: ParsedAddress | None


def _names_address(ctx: _Context) -> bool:
    assert ctx.parsed is not None
    canonical = ctx.parsed.canonical
    return any((entry := parse_address(a)) is not None and entry.canonical == canonical for a in ctx.authorization.addresses)


def _address_shown(ctx: _Context) -> str:
    assert ctx.parsed is not None
    return f'address "{ctx.target.address}" ({ctx.parsed.canonical}, class {ctx.parsed.address_class}) is named by no authorized address'


@dataclass(frozen=True)
class DecisionRow:
    """One check: the reason it denies with, what must hold, and the detail of a denial."""

    reason: ForbiddenTargetReason
    holds: Callable[[_Context], bool]
    detail: Callable[[_Context], str]


#: The decision order against one authorization (the interface match comes first, in
#: ``evaluate_api_target``). Each row traces to preflight-adapter.md §4.9.
DECISION_TABLE: tuple[DecisionRow, ...] = (
    DecisionRow(
        "scheme-not-authorized",
        lambda c: c.authorization.scheme == c.target.scheme,
        lambda c: f'scheme "{c.target.scheme}" is not the authorized "{c.authorization.scheme}"',
    ),
    DecisionRow(
        "host-not-authorized",
        lambda c: normalize_host(c.authorization.host) == normalize_host(c.target.host),
        lambda c: f'host "{c.target.host}" is not the authorized "{c.authorization.host}"',
    ),
    DecisionRow(
        "port-not-authorized",
        lambda c: c.authorization.port == c.target.port,
        lambda c: f"port {c.target.port} is not the authorized {c.authorization.port}",
    ),
    DecisionRow(
        "address-unparseable",
        lambda c: c.parsed is not None,
        lambda c: f'address "{c.target.address}" could not be parsed, so it cannot be proven outside a denied class',
    ),
    DecisionRow("address-not-authorized", _names_address, _address_shown),
    DecisionRow(
        "method-not-authorized",
        lambda c: c.target.method in c.authorization.methods,
        lambda c: f'method "{c.target.method}" is not among the authorized methods',
    ),
)


def _against(authorization: ProbeTargetAuthorization, target: ResolvedTarget) -> ApiTargetDecision:
    parsed = parse_address(target.address)
    address_class: AddressClass = "unparseable" if parsed is None else parsed.address_class
    ctx = _Context(authorization, target, parsed)
    for row in DECISION_TABLE:
        if not row.holds(ctx):
            return ApiTargetDecision(False, None, row.reason, row.detail(ctx), address_class)
    assert parsed is not None
    return ApiTargetDecision(True, authorization, None, "authorized", address_class, parsed.canonical)


def evaluate_api_target(policy: ProbeTargetPolicy, target: ResolvedTarget) -> ApiTargetDecision:
    """Default-deny: ``interface-not-authorized`` unless some authorization names the interface; then
    each such authorization in declaration order, first allow wins, else the first denial."""
    first_denial: ApiTargetDecision | None = None
    for authorization in policy.authorizations:
        if authorization.interface_id != target.interface_id:
            continue
        decision = _against(authorization, target)
        if decision.allowed:
            return decision
        first_denial = first_denial or decision
    if first_denial is not None:
        return first_denial
    return ApiTargetDecision(
        False,
        None,
        "interface-not-authorized",
        f'no authorization names interface "{target.interface_id}"',
        classify_address(target.address),
    )


def is_safe_method(authorization: ProbeTargetAuthorization, method: str) -> bool:
    """A differential probe may use ``method`` here only when it is both authorized and marked safe."""
    return method in authorization.methods and method in authorization.safe_methods
