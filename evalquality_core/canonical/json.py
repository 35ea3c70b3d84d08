"""Canonical bytes through ``rfc8785`` and the AD-36 value-domain refusals (artifacts.md §1.1–§1.2).

``rfc8785`` already writes the JCS text (UTF-16 key order, ECMAScript numbers); it does not refuse an
integral float of unsafe magnitude (``1e21``), so every value passes ``check_value_domain`` first.
``scan_json`` is the strict reader for raw bytes: it refuses what ``json.loads`` would let through
(duplicate keys, lone surrogates, unsafe integers, NaN literals, a BOM, excessive nesting).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import rfc8785

from evalquality_core.faults import RuntimeFault

MAX_SAFE_INTEGER = 2**53 - 1
#: The deepest nesting accepted: 1024 containers inside one another are read and canonicalized, 1025
#: are refused (the reference's own test cases; a scalar inside the innermost container adds nothing).
MAX_NESTING_DEPTH = 1024


#: Python frames a parse or dump of a value nested MAX_NESTING_DEPTH deep may use (a few per level);
#: without it a legal 1000-deep document would end in RecursionError instead of being read.
_RECURSION_ROOM = 4 * MAX_NESTING_DEPTH + 1000


def _ensure_recursion_room() -> None:
    if sys.getrecursionlimit() < _RECURSION_ROOM:
        sys.setrecursionlimit(_RECURSION_ROOM)


_ensure_recursion_room()  # at import, so the limit is in place before any caller measures it


def _refuse(path: str, detail: str) -> RuntimeFault:
    return RuntimeFault("non-canonicalizable-value", path, detail)


def _check_string(value: str, path: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _refuse(path, f"{what} holds a lone surrogate at index {exc.start}") from None


_OUTSIDE, _IN_DOMAIN, _PLAIN = 0, 1, 2


def _in_domain(value: Any) -> int:
    """A fast walk (no paths built): ``_OUTSIDE``, ``_IN_DOMAIN``, or ``_PLAIN`` when the value is in
    the domain *and* holds no float and no non-ASCII key. ``check_value_domain`` locates violations.
    Walks level by level, so depth is one counter rather than a field on every item."""
    plain = True
    level: list[Any] = [value]
    depth = 0
    while level:
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if (kind is dict or kind is list) and depth >= MAX_NESTING_DEPTH:
                return _OUTSIDE  # this container is the 1025th level
            if kind is str:
                if not item.isascii() and not _well_formed(item):
                    return _OUTSIDE
            elif kind is dict:
                for key in item:
                    if type(key) is not str:
                        return _OUTSIDE
                    if not key.isascii():
                        plain = False
                        if not _well_formed(key):
                            return _OUTSIDE
                below.extend(item.values())
            elif kind is list:
                below.extend(item)
            elif kind is int:
                if abs(item) > MAX_SAFE_INTEGER:
                    return _OUTSIDE
            elif kind is float:
                plain = False
                if not math.isfinite(item) or (item.is_integer() and abs(item) > MAX_SAFE_INTEGER):
                    return _OUTSIDE
            elif item is not None and kind is not bool:
                return _OUTSIDE  # subclasses, tuples and the rest take the locating walk
        level = below
        depth += 1
    return _PLAIN if plain else _IN_DOMAIN


def _well_formed(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_value_domain(value: Any, path: str = "$") -> None:
    """Raise ``non-canonicalizable-value`` unless ``value`` lies in the AD-36 domain.

    Only dict (string keys), list, str, int, float, bool and None; finite numbers; integral numbers
    within ±(2^53−1); well-formed strings and keys; nesting depth below 1024. Iterative, so a deep
    value cannot exhaust the interpreter stack. A fast yes/no walk runs first; only a value it
    doubts takes the walk that builds paths to name where the violation is.
    """
    if _in_domain(value) != _OUTSIDE:
        return
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, list | tuple | dict) and depth >= MAX_NESTING_DEPTH:
            raise _refuse(where, f"nesting depth exceeds {MAX_NESTING_DEPTH}")
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if abs(item) > MAX_SAFE_INTEGER:
                raise _refuse(where, f"integer {item} is beyond ±(2^53−1)")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise _refuse(where, f"number {item!r} is not finite")
            if item.is_integer() and abs(item) > MAX_SAFE_INTEGER:
                raise _refuse(where, f"integral number {item!r} is beyond ±(2^53−1)")
        elif isinstance(item, str):
            _check_string(item, where, "string")
        elif isinstance(item, list | tuple):
            for index, member in enumerate(item):
                stack.append((member, f"{where}[{index}]", depth + 1))
        elif isinstance(item, dict):
            for key, member in item.items():
                if not isinstance(key, str):
                    raise _refuse(where, f"object key {key!r} is not a string")
                _check_string(key, where, f"key {key!r}")
                stack.append((member, f"{where}.{key}", depth + 1))
        else:
            raise _refuse(where, f"{type(item).__name__} is not a JSON value")


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of ``value``, after the value-domain check."""
    domain = _in_domain(value)
    if domain == _OUTSIDE:
        check_value_domain(value)  # names where the value leaves the domain
    if domain == _PLAIN:
        # Without floats and with ASCII keys, JCS and the C json encoder agree byte for byte:
        # code-point key order equals UTF-16 order, and both escape strings exactly like
        # JSON.stringify. The differential test in tests/core/canonical holds them equal.
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")
    _ensure_recursion_room()
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:  # the domain check should have caught it first
        raise _refuse("$", str(exc)) from None


def serialize_artifact(value: Any) -> bytes:
    """An artifact as written to disk or stdout: canonical bytes plus one ``\\n`` (artifacts.md §1.5)."""
    return canonical_bytes(value) + b"\n"


def _max_depth_exceeded(text: str) -> bool:
    """True when brackets nest deeper than ``MAX_NESTING_DEPTH`` (a linear scan, strings skipped)."""
    if text.count("[") + text.count("{") <= MAX_NESTING_DEPTH:
        return False  # cannot nest that deep with fewer brackets: skip the character loop
    depth = 0
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def nesting_too_deep(text: str | bytes) -> bool:
    """Whether JSON text nests deeper than ``MAX_NESTING_DEPTH`` (what ``scan_json`` refuses as too deep)."""
    return _max_depth_exceeded(text if isinstance(text, str) else text.decode("utf-8", errors="replace"))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, member in pairs:
        if key in result:
            raise _refuse("$", f"duplicate object key {key!r}")
        result[key] = member
    return result


def _shown(literal: str) -> str:
    """A literal as quoted in a diagnostic: long ones are cut, so the error stays one short line."""
    return literal if len(literal) <= 24 else f"{literal[:20]}… ({len(literal)} characters)"


def _parse_int(literal: str) -> int:
    digits = literal.lstrip("-")
    # The length test comes first: int() of a huge literal is slow and, past 4300 digits, refused.
    if len(digits) > 16 or int(literal) > MAX_SAFE_INTEGER or int(literal) < -MAX_SAFE_INTEGER:
        raise _refuse("$", f"integer literal {_shown(literal)} is beyond ±(2^53−1)")
    return int(literal)


def _parse_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise _refuse("$", f"number literal {_shown(literal)} overflows")
    if number.is_integer() and abs(number) > MAX_SAFE_INTEGER:
        raise _refuse("$", f"number literal {_shown(literal)} is an unsafe integer")
    return number


def _parse_constant(literal: str) -> Any:
    raise RuntimeFault("schema-parse-failure", "$", f"{literal} is not JSON")


def scan_json(data: bytes | str, artifact_path: str = "$") -> Any:
    """Parse raw JSON strictly (artifacts.md §1.2, the lexical scanner).

    Syntax errors (including a leading BOM and invalid UTF-8) raise ``schema-parse-failure`` with the
    offset; duplicate keys, lone surrogates, unsafe integers and nesting of 1024 or more raise
    ``non-canonicalizable-value``. ``artifact_path`` names the input in the fault.
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise RuntimeFault(
                "schema-parse-failure", artifact_path, f"invalid UTF-8 at offset {exc.start}"
            ) from None
    else:
        text = data
    if text.startswith("\ufeff"):
        raise RuntimeFault("schema-parse-failure", artifact_path, "unexpected byte order mark at offset 0")
    if _max_depth_exceeded(text):
        raise _refuse(artifact_path, f"nesting depth exceeds {MAX_NESTING_DEPTH}")
    _ensure_recursion_room()
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except RuntimeFault as fault:
        raise type(fault)(fault.code, artifact_path, fault.detail) from None  # type: ignore[arg-type]
    except json.JSONDecodeError as exc:
        zero = _leading_zero_at(text, exc.pos)
        message = f"leading zero in a number at offset {zero}" if zero is not None else f"{exc.msg} at offset {exc.pos}"
        raise RuntimeFault("schema-parse-failure", artifact_path, message) from None
    except RecursionError:
        raise _refuse(artifact_path, f"nesting depth exceeds {MAX_NESTING_DEPTH}") from None
    try:
        check_value_domain(value, "$")
    except RuntimeFault as fault:  # every scanner fault names the given artifact path; the detail says where
        inside = "" if fault.artifact_path == "$" else f" (at {fault.artifact_path})"
        raise type(fault)(fault.code, artifact_path, f"{fault.detail}{inside}") from None  # type: ignore[arg-type]
    return value


def _leading_zero_at(text: str, pos: int) -> int | None:
    """The offset of a leading ``0`` that made the parser stop at ``pos`` (``[01]``, ``-01``), or None."""
    start = pos - 1
    if start < 0 or pos >= len(text) or text[start] != "0" or not text[pos].isdigit():
        return None
    before = text[start - 1] if start >= 1 else ""
    if before and (before.isdigit() or before in ".eE+"):
        return None  # a zero inside a number (10, 1.05, 1e05) is not a leading zero
    return start
