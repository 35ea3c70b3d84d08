"""Interaction-rooted and bound-element pointers (artifacts.md §2.1, AD-26).

An interaction pointer is ``/interactions/{stepId}/`` plus one channel and an RFC 6901 tail. Parsing
decodes every tail token (``~1`` → ``/`` then ``~0`` → ``~``). The ``arguments`` input channel (the
v6 tool-call form) is parsed too, so an mcp contract reaches the interface-kind check rather than
failing earlier as an unparseable pointer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SLUG = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_TOKEN = r"(?:[^/~]|~[01])*"
_INPUT_CHANNELS = r"path|query|header|body|argument|option|environment|stdin|arguments"

_POINTER_RE = re.compile(
    rf"^/interactions/(?P<step>{_SLUG})/(?:"
    rf"(?P<tailed>response-body|response-headers|stdout|stderr)(?P<tail1>(?:/{_TOKEN})*)"
    rf"|(?P<scalar>response-status|exit-code)"
    rf"|call-inputs/(?P<input>{_INPUT_CHANNELS})(?P<tail2>(?:/{_TOKEN})*)"
    rf"|artifact/(?P<artifact>{_SLUG})(?P<tail3>(?:/{_TOKEN})*)"
    rf")$",
    re.DOTALL,
)
_BOUND_ELEMENT_RE = re.compile(rf"^@(?:/{_TOKEN})+$", re.DOTALL)
#: A canonical array index token, as the reachability rules read it (§3.2).
ARRAY_INDEX_RE = re.compile(r"^(?:0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class EvidenceTarget:
    """One parsed interaction pointer: step, channel, input channel or artifact id, decoded tail."""

    pointer: str
    step_id: str
    channel: str
    input_channel: str | None
    artifact_id: str | None
    tail: tuple[str, ...]


def decode_token(token: str) -> str:
    """RFC 6901 token decoding: ``~1`` → ``/`` first, then ``~0`` → ``~``."""
    return token.replace("~1", "/").replace("~0", "~")


def split_tail(tail: str) -> tuple[str, ...]:
    """The decoded tokens of a ``/a/b`` tail; the empty string has none."""
    if not tail:
        return ()
    return tuple(decode_token(token) for token in tail[1:].split("/"))


def parse_interaction_pointer(pointer: str) -> EvidenceTarget | None:
    """Parse an interaction-rooted pointer, or ``None`` when it is not one."""
    match = _POINTER_RE.match(pointer)
    if match is None:
        return None
    step = match.group("step")
    if match.group("tailed"):
        return EvidenceTarget(pointer, step, match.group("tailed"), None, None, split_tail(match.group("tail1")))
    if match.group("scalar"):
        return EvidenceTarget(pointer, step, match.group("scalar"), None, None, ())
    if match.group("input"):
        return EvidenceTarget(
            pointer, step, "call-inputs", match.group("input"), None, split_tail(match.group("tail2"))
        )
    return EvidenceTarget(
        pointer, step, "artifact", None, match.group("artifact"), split_tail(match.group("tail3"))
    )


def is_bound_element(pointer: str) -> bool:
    """True for an ``@…`` pointer (only legal inside a quantifier predicate)."""
    return pointer.startswith("@")


def is_bound_element_pointer(pointer: str) -> bool:
    """True when ``pointer`` matches the bound-element grammar ``^@(/token)+$``."""
    return _BOUND_ELEMENT_RE.match(pointer) is not None


def descriptor_tokens(pointer: str) -> tuple[str, ...]:
    """The decoded tokens of a descriptor pointer (``""`` is the whole body)."""
    return split_tail(pointer)
