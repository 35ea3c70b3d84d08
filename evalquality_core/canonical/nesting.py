"""One nesting bound for every document a suite or a target hands us: JSON and TOML alike.

``MAX_NESTING_DEPTH`` (1024, artifacts.md §1.2) is the deepest canonical JSON goes, so it is the bound of
every reader: a deeper document could not be canonicalized or digested anyway. Python's parsers
(``json``, ``tomllib``) and every walk after them recurse once per level, so a document nested 100k deep
would end in ``RecursionError`` — a traceback, or worse a crash half-way through a run. Each reader
therefore scans the text first, in one linear pass that recurses nowhere, and refuses it before any
parser sees it.

For TOML the document itself is a table, so its depth counts the root: ``x = [[1]]`` nests 3 levels as
JSON would (``{"x": [[1]]}``). Inline arrays and tables are bounded by the text scan; nesting built from
dotted keys and table headers (``[a.b.c]``) never recurses in ``tomllib``, and :func:`value_too_deep`
bounds it after parsing with an iterative walk.
"""

from __future__ import annotations

import tomllib
from typing import Any

from evalquality_core.canonical.json import MAX_NESTING_DEPTH, nesting_too_deep

__all__ = ["MAX_NESTING_DEPTH", "TooDeep", "json_too_deep", "load_toml", "toml_too_deep", "value_too_deep"]


class TooDeep(ValueError):
    """A document nests deeper than :data:`MAX_NESTING_DEPTH`; nothing of it was parsed or used."""

    def __init__(self) -> None:
        super().__init__(f"nests deeper than {MAX_NESTING_DEPTH} levels; nothing was read")


def json_too_deep(text: str | bytes) -> bool:
    """Whether JSON text nests deeper than :data:`MAX_NESTING_DEPTH` (brackets counted, strings skipped)."""
    return nesting_too_deep(text)


def toml_too_deep(text: str) -> bool:
    """Whether TOML text's inline arrays and tables nest so deep that, with the root table, the document
    would be deeper than :data:`MAX_NESTING_DEPTH`. A linear scan that skips the four kinds of string
    and comments; a table header (``[a]``, ``[[a]]``) opens and closes on its line, so it adds nothing."""
    limit = MAX_NESTING_DEPTH - 1  # the root table is one level
    if text.count("[") + text.count("{") <= limit:
        return False  # cannot nest that deep with fewer brackets: skip the character loop
    depth, index, size = 0, 0, len(text)
    while index < size:
        char = text[index]
        if char == "#":  # a comment runs to the end of the line
            end = text.find("\n", index)
            index = size if end < 0 else end + 1
            continue
        if char in "\"'":
            index = _after_string(text, index)
            continue
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
        index += 1
    return False


def _after_string(text: str, start: int) -> int:
    """The index just past the TOML string opening at ``start`` (basic or literal, one line or many);
    the end of the text when it never closes (the parser then refuses it)."""
    quote = text[start]
    triple = text.startswith(quote * 3, start)
    index = start + (3 if triple else 1)
    size = len(text)
    while index < size:
        char = text[index]
        if char == "\\" and quote == '"':
            index += 2  # an escape in a basic string: the next character is never the end
            continue
        if not triple and char == "\n":
            return index + 1  # a one-line string cannot span lines: the parser refuses it
        if char == quote:
            if not triple:
                return index + 1
            if text.startswith(quote * 3, index):
                index += 3
                # up to two more quotes belong to the string (``"""a""""`` is ``a"``)
                for _ in range(2):
                    if index < size and text[index] == quote:
                        index += 1
                return index
        index += 1
    return size


def value_too_deep(value: Any, limit: int = MAX_NESTING_DEPTH) -> bool:
    """Whether a parsed value (dicts and lists) nests deeper than ``limit``, the value itself being level 1.
    Iterative, so it never recurses however deep the value is."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for item in level:
            members = item.values() if isinstance(item, dict) else item
            below.extend(member for member in members if isinstance(member, dict | list))
        level = below
    return False


def load_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads`` under the nesting bound: :class:`TooDeep` before parsing when inline arrays or
    tables nest too deep, and after parsing when dotted keys or headers do; a syntax error is
    ``tomllib.TOMLDecodeError`` as ever."""
    if toml_too_deep(text):
        raise TooDeep()
    document = tomllib.loads(text)
    if value_too_deep(document):
        raise TooDeep()
    return document
