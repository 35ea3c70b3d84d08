"""The two messages of the environment-probe port: ``ProbeRequest`` and ``ProbeObservation``.

preflight-adapter.md §3.1–3.2 and §8. Both are strict unions tagged on ``kind`` (``cli``, ``api``,
``mcp``); every member carries the correlation triple ``probeId``/``interfaceId``/``operationId`` and
an observation echoes its request's triple and kind. An observation carries content only (no timing).
``executable`` is an Identifier (a slug), so a path (``/usr/bin/x``, ``./x``) can never be written into
a request. ``request_cache_key`` is the §8 digest of a request with its correlation label blanked.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_serializer,
)
from pydantic.json_schema import SkipJsonSchema

from evalquality_core.artifacts.base import ArtifactModel, JsonValue, NonEmptyStr, Slug
from evalquality_core.artifacts.contract import (
    AbsentPayload,
    JsonPayload,
    RawBody,
    TaggedPayload,
    TextPayload,
)
from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.canonical.json import check_value_domain
from evalquality_core.faults import RuntimeFault
from evalquality_core.registries import HttpMethod

__all__ = [
    "AbsentPayload",
    "ApiBody",
    "ApiChannels",
    "ApiProbeObservation",
    "ApiProbeRequest",
    "CliChannels",
    "CliProbeObservation",
    "CliProbeRequest",
    "ENVIRONMENT_KEY_PATTERN",
    "EnvironmentKeyName",
    "Identifier",
    "JsonPayload",
    "McpChannels",
    "McpProbeObservation",
    "McpProbeRequest",
    "Observed",
    "ProbeObservation",
    "ProbeRequest",
    "RawBody",
    "Stdin",
    "TextPayload",
    "observation_to_wire",
    "read_probe_observation",
    "read_probe_request",
    "request_cache_key",
    "request_to_wire",
    "restamp_observation",
]

#: An Identifier is a kebab slug (preflight-adapter.md preamble); it refuses ``/``, ``.`` and ``:``.
Identifier = Slug
#: preflight-adapter.md §3.1 (2.0.0 and later).
ENVIRONMENT_KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
EnvironmentKeyName = Annotated[str, Field(pattern=ENVIRONMENT_KEY_PATTERN)]
#: ``KeyName`` is any non-empty string.
KeyName = NonEmptyStr
#: ``code`` or −(signal number); kept inside the JSON safe-integer range.
SignedInt = Annotated[int, Field(ge=-(2**53 - 1), le=2**53 - 1)]


#: ``Observed`` of §3.2 (stdout, stderr, artifacts, api body, mcp result): the contract's three tagged
#: payloads (one set of models, so a payload read from a record and one read from the port are alike).
Observed = TaggedPayload
#: A command's stdin (§3.1): the same three tags.
Stdin = TaggedPayload


#: An api request body.
ApiBody = Annotated[JsonPayload | AbsentPayload | RawBody, Field(discriminator="kind")]


class CliChannels(ArtifactModel):
    """The four command channels. Option/argument values are any JSON (arrays repeat, ``false`` omits)."""

    argument: dict[KeyName, JsonValue]
    option: dict[KeyName, JsonValue]
    environment: dict[EnvironmentKeyName, str]
    stdin: Stdin


class CliProbeRequest(ArtifactModel):
    """A command invocation: a logical executable, a subcommand path and four channels."""

    kind: Literal["cli"]
    probe_id: Identifier
    interface_id: Identifier
    operation_id: Identifier
    executable: Identifier
    subcommand_path: list[Identifier]
    channels: CliChannels


class ApiChannels(ArtifactModel):
    """The four transport channels of an api request."""

    path: dict[KeyName, JsonValue]
    query: dict[KeyName, JsonValue]
    header: dict[KeyName, str]
    body: ApiBody


class ApiProbeRequest(ArtifactModel):
    """An HTTP call (no api adapter ships; the shape is here for planning and replay)."""

    kind: Literal["api"]
    probe_id: Identifier
    interface_id: Identifier
    operation_id: Identifier
    method: HttpMethod
    path_template: NonEmptyStr
    channels: ApiChannels


class McpChannels(ArtifactModel):
    """The one channel of an mcp tool call."""

    arguments: dict[KeyName, JsonValue]


class McpProbeRequest(ArtifactModel):
    """An mcp ``tools/call``: the tool's name and its arguments (the one channel of a tool call)."""

    kind: Literal["mcp"]
    probe_id: Identifier
    interface_id: Identifier
    operation_id: Identifier
    tool_name: NonEmptyStr
    channels: McpChannels


ProbeRequest = Annotated[CliProbeRequest | ApiProbeRequest | McpProbeRequest, Field(discriminator="kind")]


class CliProbeObservation(ArtifactModel):
    """What a command did: exit code (−signal when a signal ended it), both streams, the artifacts."""

    kind: Literal["cli"]
    probe_id: Identifier
    interface_id: Identifier
    operation_id: Identifier
    exit_code: SignedInt
    stdout: Observed
    stderr: Observed
    artifacts: dict[Identifier, Observed]


class ApiProbeObservation(ArtifactModel):
    """What an HTTP call answered (repeated headers joined with ``", "``, ``set-cookie`` dropped)."""

    kind: Literal["api"]
    probe_id: Identifier
    interface_id: Identifier
    operation_id: Identifier
    status: Annotated[int, Field(ge=100, le=599)]
    headers: dict[KeyName, str]
    body: Observed


class McpProbeObservation(ArtifactModel):
    """What a tool call answered: ``isError`` and the structured result (json, or absent when the
    tool published none). ``exitCode`` (the newest docs' optional key, signed) is present only when
    the server ended the session after ``initialize`` and before answering ``tools/call``; then
    ``isError`` is true and ``result`` is absent. It is the one optional key of the port messages:
    absent on the wire when not given, so every other observation keeps the reference's key set."""

    kind: Literal["mcp"]
    probe_id: Identifier
    interface_id: Identifier
    operation_id: Identifier
    is_error: bool
    result: Observed
    #: Not in ``required``, and never null (the validator refuses an explicit null).
    exit_code: Annotated[
        SignedInt | SkipJsonSchema[None], Field(default=None, json_schema_extra=lambda schema: schema.pop("default"))
    ]

    @field_validator("exit_code")
    @classmethod
    def _never_null(cls, value: int | None) -> int | None:
        if value is None:
            raise ValueError("exitCode is omitted when the session did not end early, never null")
        return value

    @model_serializer(mode="wrap")
    def _exit_code_only_when_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave ``exitCode`` off unless the session ended early (its value is never null on the wire)."""
        value = handler(self)
        if isinstance(value, dict) and self.exit_code is None:
            value.pop("exitCode", None)
            value.pop("exit_code", None)
        return value


ProbeObservation = Annotated[
    CliProbeObservation | ApiProbeObservation | McpProbeObservation, Field(discriminator="kind")
]

_REQUEST_ADAPTER: TypeAdapter[Any] = TypeAdapter(ProbeRequest)
_OBSERVATION_ADAPTER: TypeAdapter[Any] = TypeAdapter(ProbeObservation)


def _error_path(root: str, loc: tuple[int | str, ...]) -> str:
    path = root
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _read(adapter: TypeAdapter[Any], data: Any, root: str, code: str, check_domain: bool = True) -> Any:
    if check_domain:
        check_value_domain(data, root)
    try:
        return adapter.validate_python(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        # The discriminator tag is part of pydantic's loc; drop it so the path names wire keys only.
        loc = tuple(part for part in first["loc"] if part not in ("cli", "api", "mcp", "json", "text", "absent", "raw"))
        raise RuntimeFault(code, _error_path(root, loc), f"{first['msg']}{more}") from None  # type: ignore[arg-type]


def read_probe_request(data: Any, artifact_path: str = "ProbeRequest") -> CliProbeRequest | ApiProbeRequest | McpProbeRequest:
    """Validate an untrusted JSON value as a ``ProbeRequest``; ``schema-parse-failure`` otherwise."""
    return _read(_REQUEST_ADAPTER, data, artifact_path, "schema-parse-failure")


def read_probe_observation(
    data: Any,
    artifact_path: str = "ProbeObservation",
    *,
    code: str = "schema-parse-failure",
    check_domain: bool = True,
) -> CliProbeObservation | ApiProbeObservation | McpProbeObservation:
    """Validate a JSON value as a ``ProbeObservation``. An adapter checking its own answer passes
    ``code="port-contract-violation"`` (§3.4 step 4), and may pass ``check_domain=False`` when every
    payload value it holds was already checked against the canonical value domain."""
    return _read(_OBSERVATION_ADAPTER, data, artifact_path, code, check_domain)


def request_to_wire(request: CliProbeRequest | ApiProbeRequest | McpProbeRequest) -> dict[str, Any]:
    """The wire JSON (camelCase, dict order kept) of a request."""
    return request.model_dump(mode="json", by_alias=True)


def observation_to_wire(
    observation: CliProbeObservation | ApiProbeObservation | McpProbeObservation,
) -> dict[str, Any]:
    """The wire JSON of an observation."""
    return observation.model_dump(mode="json", by_alias=True)


def request_cache_key(request: CliProbeRequest | ApiProbeRequest | McpProbeRequest | dict[str, Any]) -> str:
    """§8: ``digest({...request, probeId: ""})`` — the whole request except its correlation label.

    Covers kind, interfaceId, operationId and the kind-specific fields; never a policy or run id
    (the request carries neither). Environment *values* are part of the request and so of the key;
    a caller that must keep credentials out of a persisted key strips them first (harness.md A.6).
    """
    wire = request if isinstance(request, dict) else request_to_wire(request)
    return digest_artifact({**wire, "probeId": ""})


def restamp_observation(
    observation: CliProbeObservation | ApiProbeObservation | McpProbeObservation,
    request: CliProbeRequest | ApiProbeRequest | McpProbeRequest,
) -> CliProbeObservation | ApiProbeObservation | McpProbeObservation:
    """A stored observation re-stamped with this request's correlation triple (§8, harness.md A.6)."""
    return observation.model_copy(
        update={
            "probe_id": request.probe_id,
            "interface_id": request.interface_id,
            "operation_id": request.operation_id,
        }
    )
