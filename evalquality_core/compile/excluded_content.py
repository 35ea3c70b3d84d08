"""Value-shaped secrets in a declaration (artifacts.md §3.1 #28; AD-18).

Every string *value* of the contract (keys are names and are never scanned) is tested against the
patterns below, category by category; the first hit is reported by category and path only, never
quoted. ``real names`` has no pattern: a personal name has no surface form. Patterns use ASCII
classes, as the reference's JavaScript ones do (``\\d`` and ``\\w`` are ASCII there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, str):
            yield at, node
        elif isinstance(node, list):
            stack.extend((child, f"{at}[{k}]") for k, child in reversed(list(enumerate(node))))
        elif isinstance(node, dict):
            stack.extend((child, f"{at}.{key}") for key, child in reversed(list(node.items())))


def excluded_category(text: str) -> str | None:
    """The first AD-18 category whose pattern matches ``text``."""
    for pattern in EXCLUDED_VALUE_PATTERNS:
        if pattern.regex.search(text):
            return pattern.category
    return None


def check_excluded_content(contract: dict[str, Any]) -> None:
    """#28 ``excluded-content-in-declaration``: the first string value shaped like a secret."""
    for path, text in _strings(contract, "EvalContract"):
        category = excluded_category(text)
        if category is not None:
            raise StructuralFailure(
                "excluded-content-in-declaration",
                path,
                f"carries a value shaped like {category}, which AD-18 excludes from every artifact this package "
                "produces; store a digest or an opaque reference instead (the matched text is not quoted)",
            )
