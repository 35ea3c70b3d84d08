"""Volatile parts of an answer (issue 34): what differs run to run by nature, and is never compared.

An operation declares them in two keys of one concept:

* ``volatilePointers`` (the spec's): descriptor pointers into the described body (``/id``, ``/items/*/id``),
  pruned as AD-11 prunes them (``projection.py``: ``*`` fans out, ``""`` is the whole body);
* ``volatileHeaders`` (ours, an optional key of contract 7 on api operations): response header names
  (``Date``, ``ETag``, a ``Location`` that carries a port), matched case-insensitively. A separate key
  because the spec fixes ``volatilePointers`` as *descriptor* pointers, relative to the body, so no entry
  of it can name a header without colliding with a body key of the same spelling.

Both are left out wherever an answer is compared or digested for equality: the generator's
determinism check (clean arm run twice, ``suite/generate.py``); the generator's evidence files, whose
stored bytes stand when a new run differs from them only in volatile parts (so ``suite generate
--check`` holds on a server that stamps a ``Date``, and the evidence stays the raw answer); and the
pre-flight evidence behind the clean-leg drop (``reduce.py``), where volatile headers are removed as
volatile pointers already were. A witness relation may not read either (compile rule 33,
``compile/witnesses.py``), so removing them changes no witness resolution. Oracles are resolved on
the raw answer.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from evalquality_core.evaluate.pointers import decode_tokens
from evalquality_core.preflight.projection import escape_token, prune_body

__all__ = [
    "RunDifference",
    "first_difference",
    "stable_observation",
    "volatile_header_names",
    "without_volatile_headers",
]


def volatile_header_names(operation: Mapping[str, Any]) -> frozenset[str]:
    """The operation's declared volatile header names, lower-cased (header names are case-insensitive)."""
    return frozenset(name.lower() for name in operation.get("volatileHeaders") or [])


def without_volatile_headers(headers: Mapping[str, Any] | None, operation: Mapping[str, Any]) -> dict[str, Any] | None:
    """``headers`` without the operation's volatile ones (``None`` stays ``None``)."""
    if headers is None:
        return None
    volatile = volatile_header_names(operation)
    return {name: value for name, value in headers.items() if name.lower() not in volatile}


def _prune_value(value: Any, pointers: Sequence[str]) -> Any:
    """A record's unwrapped ``responseBody`` with the volatile pointers pruned (``""``: the body is gone)."""
    if not pointers or not isinstance(value, (dict, list)):
        return None if "" in pointers else value
    pruned = prune_body({"kind": "json", "value": value}, pointers)
    return pruned.get("value")


def stable_observation(observation: Mapping[str, Any], operation: Mapping[str, Any] | None) -> dict[str, Any]:
    """A sealed-run-record observation with the operation's volatile parts removed (on a copy).

    The described body loses every ``volatilePointers`` entry: ``responseBody`` for an api or mcp
    operation, the ``descriptorChannel`` stream or artifact for a command; ``responseHeaders`` loses
    every ``volatileHeaders`` name. An observation of no known operation is returned as it is.
    """
    stable = copy.deepcopy(dict(observation))
    if operation is None:
        return stable
    pointers = list(operation.get("volatilePointers") or [])
    channel = operation.get("descriptorChannel") or {}
    if channel.get("kind") == "stream":
        stable[channel["channel"]] = dict(prune_body(stable[channel["channel"]], pointers))
    elif channel.get("kind") == "artifact":
        artifacts = stable.get("artifacts") or {}
        if channel["artifactId"] in artifacts:
            artifacts[channel["artifactId"]] = dict(prune_body(artifacts[channel["artifactId"]], pointers))
    else:
        stable["responseBody"] = _prune_value(stable.get("responseBody"), pointers)
    stable["responseHeaders"] = without_volatile_headers(stable.get("responseHeaders"), operation)
    return stable


class RunDifference:
    """Where two runs of one plan first answered differently: the step and the field."""

    __slots__ = ("field", "step")

    def __init__(self, step: str, field: str) -> None:
        self.step, self.field = step, field

    def __repr__(self) -> str:
        return f"RunDifference(step={self.step!r}, field={self.field!r})"

    def sentence(self) -> str:
        """``step "<step>" answered differently at <field>``."""
        return f'step "{self.step}" answered differently at {self.field}'


def _first_pointer(a: Any, b: Any, at: str = "") -> str | None:
    """The JSON pointer of the first place ``a`` and ``b`` differ (keys in sorted order), or ``None``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{at}/{escape_token(key)}"
            found = _first_pointer(a[key], b[key], f"{at}/{escape_token(key)}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for index, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_pointer(x, y, f"{at}/{index}")
            if found is not None:
                return found
        return None if len(a) == len(b) else f"{at}/{min(len(a), len(b))}"
    same = a == b and type(a) is type(b)
    return None if same else (at or "")


#: How a record field is named in a determinism message (the evidence channel a user writes pointers in).
_FIELD_NAMES: Mapping[str, str] = {
    "responseBody": "response-body",
    "responseStatus": "response-status",
    "exitCode": "exit-code",
    "callInputs": "call-inputs",
}


def _field(pointer: str) -> str:
    """``response header "date"`` for a header; ``response-body /id`` (channel, then the JSON pointer) else."""
    tokens = decode_tokens(pointer)
    head, rest = (tokens[0], tokens[1:]) if tokens else ("", [])
    if head == "responseHeaders" and rest:
        return f'response header "{rest[0]}"'
    tail = "".join("/" + escape_token(token) for token in rest)
    name = _FIELD_NAMES.get(head, head)
    return f"{name} {tail}" if tail else name


def first_difference(
    first: Sequence[Mapping[str, Any]],
    second: Sequence[Mapping[str, Any]],
    operations: Mapping[str, Mapping[str, Any]],
    step_ids: Sequence[str] = (),
) -> RunDifference | None:
    """The first step at which two runs of one plan differ once volatile parts are removed, or ``None``.

    ``operations`` maps an ``operationId`` to its contract operation; ``step_ids`` names the plan step of
    each observation in order (the observation id when missing). Headers are compared by lower-cased
    name; a run with more or fewer observations differs at the first missing one.
    """
    for index in range(max(len(first), len(second))):
        step = step_ids[index] if index < len(step_ids) else None
        if index >= len(first) or index >= len(second):
            present = first[index] if index < len(first) else second[index]
            return RunDifference(step or present["observationId"], "its presence (one run has no observation for it)")
        a, b = (_comparable(o, operations.get(o["operationId"])) for o in (first[index], second[index]))
        pointer = _first_pointer(a, b)
        if pointer is not None:
            return RunDifference(step or first[index]["observationId"], _field(pointer))
    return None


def _comparable(observation: Mapping[str, Any], operation: Mapping[str, Any] | None) -> dict[str, Any]:
    stable = stable_observation(observation, operation)
    headers = stable.get("responseHeaders")
    if isinstance(headers, dict):
        stable["responseHeaders"] = {name.lower(): value for name, value in headers.items()}
    return stable
