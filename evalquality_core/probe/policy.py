"""``CommandTargetPolicy`` and the pure allow/deny decisions of the command-line adapter.

preflight-adapter.md §4.1–4.2, harness.md A.1–A.2. Deny by default: an empty policy authorizes
nothing; an authorization is keyed by the pair (interfaceId, executable) and every field is required,
``permittedEnvironmentKeys`` included (``[]`` permits no declared key; ``PATH`` in any case is refused
by the schema because it would choose which binary answers a logical name).

Our extensions to the reference's shape, each optional with a default that keeps the reference's argv:

* ``targetArgs`` (default ``[]``, as the reference's policy): fixed leading arguments placed between
  the target and the request's argv (``python3 runner.py …``), so a script need not carry a shebang
  and an exec bit. No request can change them.
* ``endOfOptions`` (default none): a marker (normally ``"--"``) the target's parser honours; when set,
  it goes between the options and the positionals, so a positional is never read as a flag.
* ``dashPositionals`` (default false): without a marker, a positional that starts with ``-`` (other
  than a lone ``-``) would be read as a flag, so it is refused (``forbidden-target``, reason
  ``argument-not-authorized``) unless the entry opts in with ``true``.

Every option key must match the flag grammar (the executable slug rule ``^[a-z0-9]+(-[a-z0-9]+)*$``,
which includes the ``no-`` form): ``{"a=b --c": true}`` would smuggle a second flag, so it is refused
(``argument-not-authorized``) before anything starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, ValidationError, field_validator

from evalquality_core.artifacts.base import ArtifactModel, NonEmptyStr
from evalquality_core.artifacts.port_messages import (
    CliProbeRequest,
    EnvironmentKeyName,
    Identifier,
)
from evalquality_core.faults import ForbiddenTargetReason, RuntimeFault
from evalquality_core.probe.argv import positional_tokens

__all__ = [
    "MAX_ELAPSED_MS",
    "MAX_WALL_CLOCK_SECONDS",
    "CommandTargetAuthorization",
    "CommandTargetPolicy",
    "OPTION_KEY",
    "TargetDecision",
    "evaluate_arguments",
    "evaluate_environment",
    "evaluate_request",
    "evaluate_target",
    "forbidden_target_fault",
    "parse_command_target_policy",
    "time_budget_problem",
]

#: The elapsed budget is clamped to a signed 32-bit millisecond timer (4.1.2). It is THE bound of
#: every time budget read from a file: ``max_elapsed_ms`` of every target kind (command, api, mcp),
#: ``[service] ready_timeout_ms``, and ``[evaluator] wall-clock-seconds`` (in seconds, below). It is
#: the largest timeout ``poll()`` takes, so no deadline derived from a budget overflows time arithmetic.
MAX_ELAPSED_MS = 2_147_483_647
#: ``MAX_ELAPSED_MS`` in whole seconds (an evaluator's wall clock becomes its ``max_elapsed_ms``).
MAX_WALL_CLOCK_SECONDS = MAX_ELAPSED_MS // 1000


def time_budget_problem(key: str, value: Any, *, unit: str = "ms") -> str | None:
    """Why ``value`` is not a time budget (``None`` when it is): a whole number from 1 to the one
    documented maximum (``MAX_ELAPSED_MS`` ms, ``MAX_WALL_CLOCK_SECONDS`` s). The reason names ``key``
    and the maximum, never the value (which may be thousands of digits long)."""
    limit = MAX_ELAPSED_MS if unit == "ms" else MAX_WALL_CLOCK_SECONDS
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        unit_name = "milliseconds" if unit == "ms" else "seconds"
        return f"{key} must be a whole number of {unit_name} from 1 to {limit} (the maximum, about 24.8 days)"
    return None


class CommandTargetAuthorization(ArtifactModel):
    """One authorized (interfaceId, executable) pair: where it runs and within which budgets."""

    interface_id: Identifier
    executable: Identifier
    #: The real file: absolute, a bare name found through the adapter's own PATH, or a path with a
    #: ``/`` relative to ``cwd``.
    target: NonEmptyStr
    #: Fixed leading arguments (our extension; ``[]`` when absent).
    target_args: list[str] = Field(default_factory=list)
    permitted_subcommand_paths: Annotated[list[list[Identifier]], Field(min_length=1)]
    permitted_environment_keys: list[EnvironmentKeyName]
    #: The working directory; when relative, it is resolved against the caller's per-call workdir.
    cwd: NonEmptyStr
    #: Artifact id → path, relative to ``cwd`` unless absolute.
    artifacts: dict[Identifier, NonEmptyStr]
    max_elapsed_ms: Annotated[int, Field(ge=1, le=MAX_ELAPSED_MS)]
    #: Applied separately to stdout, stderr and each artifact file.
    max_output_bytes: Annotated[int, Field(ge=1)]
    #: Our extension: the end-of-options marker placed before the positionals (module docstring).
    end_of_options: Annotated[str, Field(min_length=1)] | None = None
    #: Our extension: whether a dash-leading positional is allowed without a marker.
    dash_positionals: bool = False

    @field_validator("permitted_environment_keys")
    @classmethod
    def _path_is_never_permitted(cls, keys: list[str]) -> list[str]:
        for key in keys:
            if key.upper() == "PATH":
                raise ValueError(
                    f'environment key "{key}" is never permitted: the adapter supplies its own PATH'
                )
        return keys


class CommandTargetPolicy(ArtifactModel):
    """``{authorizations: [...]}``; an empty list authorizes nothing."""

    authorizations: list[CommandTargetAuthorization]


def _pointer(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return "(root)"
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in loc)


def parse_command_target_policy(value: Any, artifact_path: str = "CommandTargetPolicy") -> CommandTargetPolicy:
    """Validate a JSON value (camelCase keys) as a policy, or raise ``schema-parse-failure``.

    The detail lists every issue as ``<RFC 6901 pointer>: <message>`` joined by ``; ``.
    """
    try:
        return CommandTargetPolicy.model_validate(value, by_alias=True, by_name=False)
    except ValidationError as exc:
        issues = "; ".join(f"{_pointer(tuple(err['loc']))}: {err['msg']}" for err in exc.errors())
        raise RuntimeFault(
            "schema-parse-failure",
            artifact_path,
            f"input does not conform to the CommandTargetPolicy schema: {issues}",
        ) from None


@dataclass(frozen=True)
class TargetDecision:
    """An allow (with the matching authorization) or a deny (with a reason and a detail)."""

    allowed: bool
    authorization: CommandTargetAuthorization | None
    reason: ForbiddenTargetReason | None
    detail: str


def _deny(reason: ForbiddenTargetReason, detail: str) -> TargetDecision:
    return TargetDecision(False, None, reason, detail)


def evaluate_target(
    policy: CommandTargetPolicy, interface_id: str, executable: str, subcommand_path: list[str]
) -> TargetDecision:
    """§4.1 ``evaluateCommandTarget``: the pair must be mapped, and the subcommand path listed exactly.

    With no authorization for the pair, the reason is ``executable-not-authorized`` when some
    authorization names the interface and ``interface-not-authorized`` otherwise. The first matching
    authorization in declaration order that lists the exact path wins.
    """
    matching = [a for a in policy.authorizations if a.interface_id == interface_id and a.executable == executable]
    if not matching:
        reason: ForbiddenTargetReason = (
            "executable-not-authorized"
            if any(a.interface_id == interface_id for a in policy.authorizations)
            else "interface-not-authorized"
        )
        return _deny(reason, f'no authorization names interface "{interface_id}" and executable "{executable}" together')
    for authorization in matching:
        if any(list(path) == list(subcommand_path) for path in authorization.permitted_subcommand_paths):
            return TargetDecision(True, authorization, None, "authorized")
    return _deny(
        "subcommand-not-authorized",
        f"subcommand path [{', '.join(subcommand_path)}] is not among the authorized paths for "
        f'interface "{interface_id}" and executable "{executable}"',
    )


def evaluate_environment(authorization: CommandTargetAuthorization, keys: list[str]) -> TargetDecision:
    """§4.2 step 4: every declared environment key must be permitted (exact, case-sensitive);
    ``PATH`` in any case is refused outright."""
    for key in keys:
        if key.upper() == "PATH":
            return _deny(
                "environment-key-not-authorized",
                f'environment key "{key}" is never permitted: it would choose which binary runs',
            )
        if key not in authorization.permitted_environment_keys:
            return _deny(
                "environment-key-not-authorized",
                f'environment key "{key}" is not permitted by this authorization',
            )
    return TargetDecision(True, authorization, None, "authorized")


#: The flag grammar of an option key: the executable slug rule (``no-x`` is one of its forms).
OPTION_KEY = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def evaluate_arguments(authorization: CommandTargetAuthorization, request: CliProbeRequest) -> TargetDecision:
    """Option keys must match the flag grammar; a dash-leading positional needs the entry's marker or
    its opt-in (module docstring)."""
    for key in request.channels.option:
        if not OPTION_KEY.match(key):
            return _deny(
                "argument-not-authorized",
                f'option key "{key[:80]}" is not a flag name (lowercase words joined by "-")',
            )
    if authorization.end_of_options is None and not authorization.dash_positionals:
        for token in positional_tokens(request.channels.argument):
            if token.startswith("-") and token != "-":
                return _deny(
                    "argument-not-authorized",
                    f'positional "{token[:80]}" starts with "-" and would be read as a flag; the registry entry '
                    "declares no end_of_options marker and does not set dash_positionals",
                )
    return TargetDecision(True, authorization, None, "authorized")


def evaluate_request(policy: CommandTargetPolicy, request: Any) -> TargetDecision:
    """Every pre-spawn decision for one request, in the order of §4.2 (kind, target, environment)."""
    if not isinstance(request, CliProbeRequest):
        kind = getattr(request, "kind", type(request).__name__)
        return _deny(
            "interface-not-authorized",
            f"this adapter runs cli requests only; no {kind} target is ever authorized",
        )
    decision = evaluate_target(policy, request.interface_id, request.executable, list(request.subcommand_path))
    if not decision.allowed or decision.authorization is None:
        return decision
    decision = evaluate_environment(decision.authorization, list(request.channels.environment))
    if not decision.allowed or decision.authorization is None:
        return decision
    return evaluate_arguments(decision.authorization, request)


def forbidden_target_fault(decision: TargetDecision, artifact_path: str = "ProbeRequest") -> RuntimeFault:
    """The ``forbidden-target`` fault a denial raises (at ``ProbeRequest``, with its reason)."""
    if decision.allowed or decision.reason is None:
        raise ValueError("an allowed decision is not a fault")
    return RuntimeFault("forbidden-target", artifact_path, decision.detail, reason=decision.reason)
