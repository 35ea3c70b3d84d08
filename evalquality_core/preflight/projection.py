"""The AD-11 projection of one observation and what the state-reset check compares (preflight-adapter.md §2.2).

Pure. An operation's ``volatilePointers`` and ``stateResetPointers`` are descriptor pointers (RFC 6901,
relative to the channel its response descriptor describes). A ``*`` token in either matches any one key
of an object or any index of an array at its depth (8.0.0), and so also the literal key ``*``. We read it
so at every contract stamp: the pruning rule as the spec describes it fans out on ``*``, and the
descriptor-pointer grammar has always admitted ``*`` as a token, so an older contract gains nothing it
did not declare.

* ``volatilePointers``: pruned from a ``json`` body before anything reads it (projection, fixture
  digest, witness evidence, the clean-leg drop). ``""`` turns the body absent.
* ``stateResetPointers`` (contract 7, 8.0.0, optional): read by the ``state-reset`` check alone. When
  an operation lists any, the check compares the projection's identity and transport fields (status,
  exit code, tool error) plus only the values at those pointers of the (already pruned) body; a value
  that is ``null`` and one that is missing differ. Absent or ``[]`` compares the whole projection, as
  before 8.0.0 (our reading of "declares no pointers"; the reference's tests show the absent case).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from evalquality_core.evaluate.pointers import decode_tokens

__all__ = [
    "WILDCARD",
    "covering_pointer",
    "described_body",
    "escape_token",
    "project",
    "prune_body",
    "select_values",
    "state_reset_projection",
    "tokens_cover",
]

#: The one-level wildcard token of a volatile or state-reset pointer (8.0.0).
WILDCARD = "*"
_CANONICAL_INDEX = re.compile(r"^(?:0|[1-9][0-9]*)$")


def escape_token(token: str) -> str:
    """RFC 6901 escaping of one token (``~``→``~0`` first, then ``/``→``~1``)."""
    return token.replace("~", "~0").replace("/", "~1")


def tokens_cover(covering: Sequence[str], covered: Sequence[str]) -> bool:
    """True when every location ``covered`` can reach lies at or below one ``covering`` reaches.

    A ``*`` in ``covering`` matches any token; a ``*`` in ``covered`` (any key) is covered only by a
    ``*`` (a literal key does not cover every key). The empty pointer covers everything.
    """
    if len(covering) > len(covered):
        return False
    return all(want == WILDCARD or want == got for want, got in zip(covering, covered, strict=False))


def covering_pointer(pointer: str, pointers: Sequence[str]) -> str | None:
    """The first of ``pointers`` that covers ``pointer`` (:func:`tokens_cover`), or ``None``."""
    tokens = decode_tokens(pointer)
    for candidate in pointers:
        if tokens_cover(decode_tokens(candidate), tokens):
            return candidate
    return None


def _children(value: Any, token: str) -> list[tuple[str, Any]]:
    """``(token, child)`` for each child ``token`` names in ``value``: one, none, or (``*``) every one."""
    if isinstance(value, dict):
        if token == WILDCARD:
            return list(value.items())
        return [(token, value[token])] if token in value else []
    if isinstance(value, list):
        if token == WILDCARD:
            return [(str(index), item) for index, item in enumerate(value)]
        if _CANONICAL_INDEX.match(token) and int(token) < len(value):
            return [(token, value[int(token)])]
    return []


def select_values(value: Any, tokens: Sequence[str], at: str = "") -> Iterator[tuple[str, Any]]:
    """``(concrete pointer, value)`` for every location ``tokens`` reaches in ``value`` (``*`` fans out).

    A location that does not exist yields nothing, so a missing field and a ``null`` one differ.
    """
    if not tokens:
        yield at, value
        return
    for token, child in _children(value, tokens[0]):
        yield from select_values(child, tokens[1:], f"{at}/{escape_token(token)}")


def _prune(value: Any, tokens: tuple[str, ...]) -> None:
    """Remove the value at ``tokens`` in place; ``*`` fans out; a pointer resolving to nothing does nothing."""
    if not tokens:
        return
    head, rest = tokens[0], tokens[1:]
    children = _children(value, head)
    if rest:
        for _, child in children:
            _prune(child, rest)
        return
    if isinstance(value, dict):
        for key, _ in children:
            del value[key]
    elif isinstance(value, list):
        for index in sorted((int(token) for token, _ in children), reverse=True):
            del value[index]


def prune_body(body: Mapping[str, Any], volatile_pointers: Sequence[str]) -> Mapping[str, Any]:
    """AD-11 pruning of a described body: only ``json`` bodies change, on a clone; ``""`` makes it absent."""
    if body.get("kind") != "json" or not volatile_pointers:
        return body
    if "" in volatile_pointers:
        return {"kind": "absent"}
    value = copy.deepcopy(body["value"])
    for pointer in volatile_pointers:
        _prune(value, decode_tokens(pointer))
    return {"kind": "json", "value": value}


def described_body(observation: Mapping[str, Any], operation: Mapping[str, Any]) -> Mapping[str, Any]:
    """The channel the operation's response descriptor describes (§2.2)."""
    kind = observation["kind"]
    if kind == "api":
        return observation["body"]
    if kind == "mcp":
        return observation["result"]
    channel = operation.get("descriptorChannel") or {}
    if channel.get("kind") == "artifact":
        return observation["artifacts"].get(channel["artifactId"], {"kind": "absent"})
    if channel.get("channel") == "stderr":
        return observation["stderr"]
    return observation["stdout"]


def project(observation: Mapping[str, Any], operation: Mapping[str, Any]) -> dict[str, Any]:
    """The AD-11 projection of one observation: identity, status or exit code, tool error, pruned body."""
    kind = observation["kind"]
    return {
        "legId": observation["probeId"],
        "interfaceId": observation["interfaceId"],
        "operationId": observation["operationId"],
        "status": observation["status"] if kind == "api" else None,
        "exitCode": observation.get("exitCode") if kind in ("cli", "mcp") else None,
        "toolError": observation["isError"] if kind == "mcp" else None,
        "body": prune_body(described_body(observation, operation), operation.get("volatilePointers") or []),
    }


def state_reset_projection(projection: Mapping[str, Any], operation: Mapping[str, Any]) -> dict[str, Any]:
    """What the state-reset check compares for one leg (module docstring).

    With ``stateResetPointers`` listed, ``body`` becomes ``{pointer: {concrete pointer: value}}``: the
    values each listed pointer reaches in the pruned ``json`` body (``""`` reaches the whole tagged body,
    so a change of body kind shows; other pointers reach nothing in a ``text`` or absent body). Without
    any, the projection itself.
    """
    pointers = operation.get("stateResetPointers") or []
    if not pointers:
        return dict(projection)
    body = projection["body"]
    selected: dict[str, dict[str, Any]] = {}
    for pointer in pointers:
        if pointer == "":
            selected[pointer] = {"": body}
        elif body.get("kind") == "json":
            selected[pointer] = dict(select_values(body["value"], decode_tokens(pointer)))
        else:
            selected[pointer] = {}
    return {**projection, "body": selected}
