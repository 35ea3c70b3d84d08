"""Observation assembly: the json/text/absent tags and the cli observation (preflight-adapter.md §4.7).

Pure: an adapter hands in the bytes it captured and gets back a schema-checked ``CliProbeObservation``
(or ``port-contract-violation``). Text that JavaScript's ``JSON.parse`` would accept becomes ``json``;
the empty string and everything else is ``text``. Like the reference we refuse ``NaN``/``Infinity``,
and also integers outside ±(2^53−1) and values outside the canonical domain (they stay ``text``).
Bytes are decoded as UTF-8 with replacement, as a streaming JavaScript decoder does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalquality_core.artifacts.port_messages import (
    AbsentPayload,
    CliProbeObservation,
    CliProbeRequest,
    JsonPayload,
    TextPayload,
    read_probe_observation,
)
from evalquality_core.canonical.json import MAX_SAFE_INTEGER, check_value_domain
from evalquality_core.faults import RuntimeFault

__all__ = [
    "NOT_JSON",
    "assemble_cli_observation",
    "json_value_of_text",
    "decode_output",
    "observation_to_wire_payload",
    "observed_from_bytes",
    "observed_from_text",
]


class NotJson(Exception):
    """A text that parses as JSON only by Python's extensions (``NaN``, ``Infinity``) or past the safe
    integer range: it is not an interchange JSON value (artifacts.md §1.2)."""


def refuse_json_constant(literal: str) -> Any:
    """``json.loads(parse_constant=...)``: refuse ``NaN``/``Infinity`` instead of making a float of them."""
    raise NotJson(literal)


def _safe_int(literal: str) -> int:
    number = int(literal)
    if abs(number) > MAX_SAFE_INTEGER:
        raise NotJson(literal)
    return number


def decode_output(data: bytes) -> str:
    """Captured bytes as text: UTF-8, invalid sequences replaced by U+FFFD."""
    return data.decode("utf-8", errors="replace")


#: One decoder for every call (building one per call costs more than decoding a small body);
#: ``decode`` is what ``json.loads(text, parse_constant=..., parse_int=...)`` runs.
_DECODER = json.JSONDecoder(parse_constant=refuse_json_constant, parse_int=_safe_int)
#: What ``json_value_of_text`` answers for text that is not JSON under ``bodyFromText``.
NOT_JSON: Any = object()


def json_value_of_text(text: str) -> Any:
    """The JSON value of ``text`` under ``bodyFromText``'s rules (in the canonical domain), or
    ``NOT_JSON`` (the empty string, invalid JSON, ``NaN``/``Infinity``, an unsafe integer)."""
    if text == "":
        return NOT_JSON
    try:
        value = _DECODER.decode(text)
        check_value_domain(value)
    except (ValueError, NotJson, RecursionError, RuntimeFault):
        return NOT_JSON
    return value


def observed_from_text(text: str) -> JsonPayload | TextPayload:
    """``bodyFromText``: ``""`` → text; JSON → json; anything else → text."""
    value = json_value_of_text(text)
    if value is NOT_JSON:
        return TextPayload(kind="text", value=text)
    return JsonPayload(kind="json", value=value)


def observed_from_bytes(data: bytes | None) -> JsonPayload | TextPayload | AbsentPayload:
    """``None`` (a file that was not there) → absent; bytes → ``observed_from_text`` of their text."""
    if data is None:
        return AbsentPayload(kind="absent")
    return observed_from_text(decode_output(data))


def assemble_cli_observation(
    request: CliProbeRequest,
    exit_code: int,
    stdout: bytes,
    stderr: bytes,
    artifacts: Mapping[str, bytes | None],
) -> CliProbeObservation:
    """Echo the request's correlation triple and check the result against the observation schema;
    a failure is ``port-contract-violation`` at ``ProbeObservation`` (§3.4 step 4)."""
    wire = {
        "kind": "cli",
        "probeId": request.probe_id,
        "interfaceId": request.interface_id,
        "operationId": request.operation_id,
        "exitCode": exit_code,
        "stdout": observation_to_wire_payload(observed_from_bytes(stdout)),
        "stderr": observation_to_wire_payload(observed_from_bytes(stderr)),
        "artifacts": {key: observation_to_wire_payload(observed_from_bytes(data)) for key, data in artifacts.items()},
    }
    # Payload values were domain-checked by observed_from_text, and decoding with replacement never
    # yields a lone surrogate, so only the shape is checked here.
    observation = read_probe_observation(wire, "ProbeObservation", code="port-contract-violation", check_domain=False)
    if not isinstance(observation, CliProbeObservation):  # the wire above always says "cli"
        raise RuntimeFault("port-contract-violation", "ProbeObservation", "assembled a non-cli observation")
    return observation


def observation_to_wire_payload(payload: JsonPayload | TextPayload | AbsentPayload) -> dict[str, Any]:
    """The wire form of one tagged payload."""
    return payload.model_dump(mode="json", by_alias=True)
