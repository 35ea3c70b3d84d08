"""``McpTargetPolicy`` and the pure allow/deny decision of the stdio MCP adapter.

preflight-adapter.md §4.9. Deny by default: an empty policy authorizes nothing. An authorization is
keyed by ``interfaceId`` alone, because for a tool server the interface *is* the server: a second
entry naming the same interface could point it at a second binary depending on which tool was
asked for, so the policy refuses duplicates. Every field is required (an omitted cap is an unbounded
cap). ``tools`` lists the tools reachable through this adapter, compared literally; a tool the list
omits is unreachable even when the server publishes it.

``serverEnvironment`` is the whole environment of the server on top of the adapter's own ``PATH``
(a declared ``PATH`` wins: the registry, not the contract, writes it). A tool call's only channel is
its arguments, so nothing of a request ever reaches the environment or the command line. A value
may hold ``{workspace}`` (plain template grammar, templates.py), filled at launch with the leg's
workspace (``server_environment_for``); any other placeholder is refused when the policy is read.

``targets.toml`` carries these as ``[[target]]`` tables with ``kind = "mcp"``; ``parse_mcp_target``
validates one such table (snake_case keys, ``{name}`` placeholders in ``target``, ``target_args`` and
``cwd``), and ``mcp_policy_from_entries`` fills the placeholders and builds the policy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, ValidationError, field_validator

from evalquality_core.artifacts.base import ArtifactModel, NonEmptyStr
from evalquality_core.artifacts.port_messages import Identifier, KeyName, McpProbeRequest
from evalquality_core.faults import ForbiddenTargetReason, RuntimeFault
from evalquality_core.probe.policy import MAX_ELAPSED_MS
from evalquality_core.probe.templates import TemplateError, fill_template, template_fields

__all__ = [
    "MCP_PROTOCOL_VERSION",
    "MCP_TARGET_KEYS",
    "McpTargetAuthorization",
    "McpTargetDecision",
    "McpTargetPolicy",
    "evaluate_mcp_request",
    "evaluate_mcp_target",
    "mcp_forbidden_target_fault",
    "mcp_policy_from_entries",
    "parse_mcp_target",
    "parse_mcp_target_policy",
]

#: The protocol revision the adapter announces in ``initialize``.
MCP_PROTOCOL_VERSION = "2025-06-18"


class McpTargetAuthorization(ArtifactModel):
    """One authorized tool server: how to launch it, which tools it may be asked for, its budgets."""

    interface_id: Identifier
    #: The real, spawnable command: absolute, a bare name found through the adapter's PATH, or a path
    #: with a ``/`` relative to ``cwd``.
    target: NonEmptyStr
    #: The argv after ``target``, fixed by the registry (``[]`` for none).
    target_args: list[str]
    #: The tools this authorization permits, in the server's own spelling (at least one).
    tools: Annotated[list[NonEmptyStr], Field(min_length=1)]
    #: The working directory; when relative, resolved against the caller's per-call workdir.
    cwd: NonEmptyStr
    #: The server's environment, on top of the adapter's PATH.
    server_environment: dict[KeyName, str]
    #: The whole session: launch, ``initialize``, ``tools/call`` and teardown.
    max_elapsed_ms: Annotated[int, Field(ge=1, le=MAX_ELAPSED_MS)]
    #: Applied separately to the server's stdout and to its stderr.
    max_output_bytes: Annotated[int, Field(ge=1)]

    @field_validator("server_environment")
    @classmethod
    def _no_nul(cls, environment: dict[str, str]) -> dict[str, str]:
        for key, value in environment.items():
            if "=" in key or "\0" in key or "\0" in value:
                raise ValueError(f'environment entry "{key}" cannot be passed to a process ("=" or NUL)')
            check_environment_template(key, value)
        return environment


#: The one placeholder a ``server_environment`` value may hold: the leg's workspace (the staged root
#: holding ``system/`` and ``work/``), filled when the server is launched (``server_environment_for``).
WORKSPACE_PLACEHOLDER = "workspace"


def check_environment_template(key: str, value: str) -> None:
    """Refuse (``ValueError``, one line) a ``server_environment`` value that is not a plain template
    (templates.py) or names a placeholder other than ``{workspace}``."""
    try:
        names = template_fields(value)
    except TemplateError as problem:
        raise ValueError(f'environment entry "{key}": {problem}') from None
    unknown = sorted(set(names) - {WORKSPACE_PLACEHOLDER})
    if unknown:
        raise ValueError(
            f'environment entry "{key}" names unknown placeholder {{{unknown[0]}}} '
            f"(only {{{WORKSPACE_PLACEHOLDER}}}, the leg's workspace, is filled here; write {{{{ for a literal brace)"
        )


def server_environment_for(environment: Mapping[str, str], workspace: str) -> dict[str, str]:
    """``environment`` with ``{workspace}`` filled by ``workspace`` (an absolute path) and ``{{``/``}}``
    undone: what the server is launched with."""
    return {key: fill_template(value, {WORKSPACE_PLACEHOLDER: workspace}) for key, value in environment.items()}


class McpTargetPolicy(ArtifactModel):
    """``{authorizations: [...]}``; an empty list authorizes nothing; one entry per interfaceId."""

    authorizations: list[McpTargetAuthorization]

    @field_validator("authorizations")
    @classmethod
    def _one_entry_per_interface(cls, authorizations: list[McpTargetAuthorization]) -> list[McpTargetAuthorization]:
        seen: set[str] = set()
        for authorization in authorizations:
            if authorization.interface_id in seen:
                raise ValueError(
                    f'two authorizations name interface "{authorization.interface_id}", so which server it '
                    "resolves to would depend on which tool was asked for"
                )
            seen.add(authorization.interface_id)
        return authorizations


def _pointer(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return "(root)"
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in loc)


def parse_mcp_target_policy(value: Any, artifact_path: str = "McpTargetPolicy") -> McpTargetPolicy:
    """Validate a JSON value (camelCase keys) as a policy, or raise ``schema-parse-failure``
    listing every issue as ``<RFC 6901 pointer>: <message>`` joined by ``; ``."""
    try:
        return McpTargetPolicy.model_validate(value, by_alias=True, by_name=False)
    except ValidationError as exc:
        issues = "; ".join(f"{_pointer(tuple(err['loc']))}: {err['msg']}" for err in exc.errors())
        raise RuntimeFault(
            "schema-parse-failure",
            artifact_path,
            f"input does not conform to the McpTargetPolicy schema: {issues}",
        ) from None


@dataclass(frozen=True)
class McpTargetDecision:
    """An allow (with the authorization) or a deny (with a reason and a detail)."""

    allowed: bool
    authorization: McpTargetAuthorization | None
    reason: ForbiddenTargetReason | None
    detail: str


def evaluate_mcp_target(policy: McpTargetPolicy, interface_id: str, tool_name: str) -> McpTargetDecision:
    """The interface first (so the two denials stay distinguishable), then the tool, literally."""
    authorization = next((a for a in policy.authorizations if a.interface_id == interface_id), None)
    if authorization is None:
        return McpTargetDecision(
            False, None, "interface-not-authorized", f'no authorization names interface "{interface_id}"'
        )
    if tool_name not in authorization.tools:
        return McpTargetDecision(
            False,
            None,
            "tool-not-authorized",
            f'tool "{tool_name}" is not among the authorized tools for interface "{interface_id}"',
        )
    return McpTargetDecision(True, authorization, None, "authorized")


def evaluate_mcp_request(policy: McpTargetPolicy, request: Any) -> McpTargetDecision:
    """Every pre-spawn decision for one request: its kind (this adapter authorizes mcp only), then
    the interface and the tool."""
    if not isinstance(request, McpProbeRequest):
        kind = getattr(request, "kind", type(request).__name__)
        return McpTargetDecision(
            False,
            None,
            "interface-not-authorized",
            f"this adapter runs mcp requests only; no {kind} target is ever authorized",
        )
    return evaluate_mcp_target(policy, request.interface_id, request.tool_name)


def mcp_forbidden_target_fault(decision: McpTargetDecision, artifact_path: str = "ProbeRequest") -> RuntimeFault:
    """The ``forbidden-target`` fault a denial raises (at ``ProbeRequest``, with its reason)."""
    if decision.allowed or decision.reason is None:
        raise ValueError("an allowed decision is not a fault")
    return RuntimeFault("forbidden-target", artifact_path, decision.detail, reason=decision.reason)


# ---------------------------------------------------------------------------------------------
# targets.toml entries

#: The keys of one ``kind = "mcp"`` table, in the order the README documents them.
MCP_TARGET_KEYS: tuple[str, ...] = (
    "kind",
    "interface_id",
    "target",
    "target_args",
    "tools",
    "cwd",
    "server_environment",
    "max_elapsed_ms",
    "max_output_bytes",
)
_CAMEL = {
    "interface_id": "interfaceId",
    "target": "target",
    "target_args": "targetArgs",
    "tools": "tools",
    "cwd": "cwd",
    "server_environment": "serverEnvironment",
    "max_elapsed_ms": "maxElapsedMs",
    "max_output_bytes": "maxOutputBytes",
}
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_TEMPLATED = ("target", "target_args", "cwd")


def _fault(source: str, detail: str) -> RuntimeFault:
    return RuntimeFault("schema-parse-failure", source, detail)


def parse_mcp_target(table: Mapping[str, Any], source: str, where: str) -> tuple[dict[str, Any], set[str]]:
    """Validate one ``kind = "mcp"`` table; return its wire-shaped (camelCase) entry, placeholders
    unfilled, and the placeholder names it uses. Every key is required; unknown keys are refused."""
    extra = sorted(set(table) - set(MCP_TARGET_KEYS))
    if extra:
        raise _fault(source, f"{where} has unknown key(s) {', '.join(extra)}")
    absent = [key for key in MCP_TARGET_KEYS if key not in table]
    if absent:
        raise _fault(source, f"{where} lacks required key(s) {', '.join(absent)} (there are no defaults)")
    entry = {camel: table[key] for key, camel in _CAMEL.items()}
    placeholders: set[str] = set()
    for key in _TEMPLATED:
        texts = table[key] if isinstance(table[key], list) else [table[key]]
        for text_value in texts:
            if isinstance(text_value, str):
                placeholders.update(_PLACEHOLDER.findall(text_value))
    try:
        parse_mcp_target_policy({"authorizations": [entry]}, f"{source}:{where}")
    except RuntimeFault as fault:
        raise _fault(source, f"{where} ({table.get('interface_id')!r}): {fault.detail}") from None
    return entry, placeholders


def mcp_policy_from_entries(
    entries: Iterable[Mapping[str, Any]], substitutions: Mapping[str, str], source: str
) -> McpTargetPolicy:
    """Fill ``{name}`` placeholders in each entry and build the policy (a missing value is refused)."""
    values = dict(substitutions)

    def fill(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            if match.group(1) not in values:
                raise _fault(source, f"no value given for placeholder {{{match.group(1)}}}")
            return values[match.group(1)]

        return _PLACEHOLDER.sub(one, text)

    filled = []
    for entry in entries:
        copy = dict(entry)
        copy["target"] = fill(entry["target"])
        copy["targetArgs"] = [fill(arg) for arg in entry["targetArgs"]]
        copy["cwd"] = fill(entry["cwd"])
        filled.append(copy)
    return parse_mcp_target_policy({"authorizations": filled}, source)
