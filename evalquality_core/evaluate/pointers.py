"""Pointer grammars and evidence roots: the ABSENT sentinel, RFC 6901 tail walking, channel roots.

scoring.md §1.1–§1.3 and artifacts.md §2.1. Everything here works on the *wire* form of artifacts (plain
JSON values: dicts, lists, scalars), because evidence is JSON; a pydantic model is turned into its wire
value once by ``as_wire`` at the entry of a stage. ABSENT ("the pointer did not resolve") is a distinct
sentinel, never ``None``: a JSON ``null`` is a present value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel

from evalquality_core.artifacts.base import to_wire

__all__ = [
    "ABSENT",
    "Absent",
    "EvidencePointer",
    "as_wire",
    "channel_root",
    "decode_tokens",
    "is_bound_element_pointer",
    "parse_evidence_pointer",
    "walk",
]


class Absent:
    """The type of ABSENT: a pointer that did not resolve (scoring.md §1.1). Falsy, singleton."""

    _instance: Absent | None = None

    def __new__(cls) -> Absent:
        """The one ABSENT: every construction returns the same instance, so ``is ABSENT`` holds."""
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


#: The one ABSENT value; compare with ``is``.
ABSENT: Final[Absent] = Absent()


def as_wire(value: Any) -> Any:
    """The wire (camelCase JSON) value of a model, or ``value`` itself when it is already plain JSON."""
    if isinstance(value, BaseModel):
        return to_wire(value)
    return value


def decode_tokens(tail: str) -> tuple[str, ...]:
    """Split an RFC 6901 pointer (``""`` or ``/a/b``) into decoded tokens (``~1``→``/`` then ``~0``→``~``)."""
    if tail == "":
        return ()
    if not tail.startswith("/"):
        raise ValueError(f"not an RFC 6901 pointer: {tail!r}")
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in tail[1:].split("/"))


_CANONICAL_INDEX = re.compile(r"^(?:0|[1-9][0-9]*)$")


def walk(root: Any, tokens: tuple[str, ...]) -> Any:
    """Walk decoded tokens into a JSON value (scoring.md §1.2 tail walking); ABSENT when it leaves the value.

    Arrays accept only a canonical in-range index (``-`` and leading zeros are ABSENT); objects only own
    keys (``__proto__`` is an ordinary key); a token left over at a scalar or ``null`` is ABSENT. The
    empty tail returns the root itself, so a ``null`` root stays ``null``.
    """
    current = root
    for token in tokens:
        if isinstance(current, list):
            if not _CANONICAL_INDEX.match(token):
                return ABSENT
            index = int(token)
            if index >= len(current):
                return ABSENT
            current = current[index]
        elif isinstance(current, Mapping):
            if token not in current:
                return ABSENT
            current = current[token]
        else:
            return ABSENT
    return current


_TAIL_CHANNELS: Final = ("response-body", "response-headers", "stdout", "stderr")
_SCALAR_CHANNELS: Final = ("response-status", "exit-code")


@dataclass(frozen=True, slots=True)
class EvidencePointer:
    """A parsed interaction-rooted pointer ``/interactions/<step>/<channel>[/<sub>][/tail…]``.

    ``step_id`` is the raw (still-escaped) second segment, as scoring.md §2.4 names addressed steps;
    ``sub`` is the input transport for ``call-inputs`` and the artifact id for ``artifact`` (else None);
    ``tokens`` is the decoded tail after the channel (and sub).
    """

    step_id: str
    channel: str
    sub: str | None
    tokens: tuple[str, ...]


def is_bound_element_pointer(pointer: str) -> bool:
    """True for an ``@``-rooted pointer (bound element of a quantifier, artifacts.md §2.1)."""
    return pointer.startswith("@")


def parse_evidence_pointer(pointer: str) -> EvidencePointer | None:
    """Parse an interaction-rooted pointer; None when it is not one (compile refuses such pointers).

    Accepts the artifacts.md §2.1 channels. A scalar channel with a tail, an unknown channel or a
    ``call-inputs``/``artifact`` pointer without its sub-segment returns None.
    """
    if not pointer.startswith("/interactions/"):
        return None
    segments = pointer.split("/")
    # ['', 'interactions', step, channel, ...]
    if len(segments) < 4:
        return None
    step_id, channel, rest = segments[2], segments[3], segments[4:]
    tokens = tuple(token.replace("~1", "/").replace("~0", "~") for token in rest)
    if channel in _TAIL_CHANNELS:
        return EvidencePointer(step_id, channel, None, tokens)
    if channel in _SCALAR_CHANNELS:
        return EvidencePointer(step_id, channel, None, ()) if not rest else None
    if channel in ("call-inputs", "artifact"):
        if not rest:
            return None
        return EvidencePointer(step_id, channel, tokens[0], tokens[1:])
    return None


def _tagged_value(tagged: Any) -> Any:
    """The root of a tagged observed body: ``{kind: absent}`` → ``null``; else its ``value`` (scoring.md §1.3).

    Older records (schema 3) carried plain strings or ``null``; those are returned as they are.
    """
    if isinstance(tagged, Mapping) and "kind" in tagged:
        if tagged["kind"] == "absent":
            return None
        return tagged.get("value")
    return tagged


def channel_root(observation: Mapping[str, Any], channel: str, sub: str | None) -> Any:
    """The evidence root of one observation for a channel (scoring.md §1.3 table), as a JSON value.

    ``call-inputs/<transport>`` is ``callInputs[transport]`` (a transport the record does not carry
    is ``null``); ``artifact/<id>`` is ``null`` when the artifact is missing, else its tagged value.
    A text body is a string, so any further tail over it walks to ABSENT.
    """
    if channel == "response-body":
        return observation.get("responseBody")
    if channel == "response-headers":
        return observation.get("responseHeaders")
    if channel == "response-status":
        return observation.get("responseStatus")
    if channel == "exit-code":
        return observation.get("exitCode")
    if channel in ("stdout", "stderr"):
        return _tagged_value(observation.get(channel))
    if channel == "call-inputs":
        inputs = observation.get("callInputs") or {}
        return inputs.get(sub) if isinstance(inputs, Mapping) else None
    if channel == "artifact":
        artifacts = observation.get("artifacts") or {}
        if not isinstance(artifacts, Mapping) or sub not in artifacts:
            return None
        return _tagged_value(artifacts[sub])
    raise ValueError(f"unknown evidence channel {channel!r}")
