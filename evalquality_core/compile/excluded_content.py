"""Value-shaped secrets in a declaration (artifacts.md §3.1 #28; AD-18).

Every string *value* of the contract (keys are names and are never scanned) is tested against the
patterns below, category by category; the first hit is reported by category and path only, never
quoted. ``real names`` has no pattern: a personal name has no surface form. Patterns use ASCII
classes, as the reference's JavaScript ones do (``\\d`` and ``\\w`` are ASCII there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evalquality_core.faults import StructuralFailure


@dataclass(frozen=True)
class ExcludedPattern:
    """One AD-18 category, its pattern, and a string it must fire on (tested)."""

    category: str
    regex: re.Pattern[str]
    fires: str


#: AD-18's value-shaped patterns, in category order.
EXCLUDED_VALUE_PATTERNS: tuple[ExcludedPattern, ...] = (
    ExcludedPattern("credentials", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "-----BEGIN RSA PRIVATE KEY-----"),
    ExcludedPattern(
        "tokens",
        re.compile(
            r"(?<![A-Za-z])(?:[Bb]earer\s+[\w.~+/-]{16,}|eyJ[\w-]{8,}\.[\w-]{8,}|sk-[A-Za-z0-9]{16,}"
            r"|gh[pousr]_[A-Za-z0-9]{16,}|AKIA[0-9A-Z]{16})",
            re.ASCII,
        ),
        "Authorization: Bearer abcdefghijklmnopqrstuv",
    ),
    ExcludedPattern(
        "email addresses", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"), '{"contact":"ada@example.com"}'
    ),
    ExcludedPattern(
        "account identifiers",
        re.compile(r"\b[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}\b|\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b", re.ASCII),
        "GB29NWBK60161331926819",
    ),
    ExcludedPattern(
        "transaction content",
        re.compile(r"(?<![0-9A-Za-z])[0-9]{4}(?:[ -][0-9]{4}){3}(?![0-9A-Za-z])"),
        "charged 4111 1111 1111 1111",
    ),
)


#: One pass that any hit must pass, so the common clean string costs one search, not five.
#: (ASCII mode throughout: the patterns that lack the flag use explicit classes only.)
_ANY_EXCLUDED = re.compile("|".join(f"(?:{p.regex.pattern})" for p in EXCLUDED_VALUE_PATTERNS), re.ASCII)


def _all_strings(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _first_hit(value: Any, parts: list[str]) -> tuple[str, str] | None:
    """``(path, category)`` of the first string (document order) shaped like a secret."""
    if isinstance(value, str):
        if _ANY_EXCLUDED.search(value) is None:
            return None
        category = excluded_category(value)
        return None if category is None else ("".join(parts), category)
    if isinstance(value, list):
        children: Any = ((f"[{k}]", child) for k, child in enumerate(value))
    elif isinstance(value, dict):
        children = ((f".{key}", child) for key, child in value.items())
    else:
        return None
    for part, child in children:
        if isinstance(child, bool | int | float) or child is None:
            continue
        parts.append(part)
        hit = _first_hit(child, parts)
        parts.pop()
        if hit is not None:
            return hit
    return None


def excluded_category(text: str) -> str | None:
    """The first AD-18 category whose pattern matches ``text``."""
    for pattern in EXCLUDED_VALUE_PATTERNS:
        if pattern.regex.search(text):
            return pattern.category
    return None


def check_excluded_content(contract: dict[str, Any]) -> None:
    """#28 ``excluded-content-in-declaration``: the first string value shaped like a secret."""
    # No pattern can match across a NUL, so one search over every string joined by NULs answers
    # "is there any hit?"; only then does the walk that builds paths run.
    if _ANY_EXCLUDED.search("\x00".join(_all_strings(contract))) is None:
        return
    hit = _first_hit(contract, ["EvalContract"])
    if hit is not None:
        path, category = hit
        raise StructuralFailure(
            "excluded-content-in-declaration",
            path,
            f"carries a value shaped like {category}, which AD-18 excludes from every artifact this package "
            "produces; store a digest or an opaque reference instead (the matched text is not quoted)",
        )
