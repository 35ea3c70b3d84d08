"""ECMAScript string rules that compile and seal share (artifacts.md §3.1 #25, §4.3).

The reference is TypeScript, so "trim", "blank" and every sort of identifiers follow JavaScript:
``String.prototype.trim`` strips a fixed set of code points (not Python's ``str.strip`` set), and
strings sort by UTF-16 code units (not by code points).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: The code points ``String.prototype.trim`` removes at both ends (and nothing else).
ES_WHITESPACE = frozenset(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: Zero-width characters a rubric's "blank" test removes before trimming (§3.1 #25).
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\ufeff")


def es_trim(text: str) -> str:
    """``text`` with ECMAScript whitespace removed at both ends."""
    start, end = 0, len(text)
    while start < end and text[start] in ES_WHITESPACE:
        start += 1
    while end > start and text[end - 1] in ES_WHITESPACE:
        end -= 1
    return text[start:end]


def is_blank(text: str) -> bool:
    """True when nothing is left after removing zero-width characters and trimming."""
    return es_trim("".join(ch for ch in text if ch not in ZERO_WIDTH)) == ""


def utf16_key(text: str) -> bytes:
    """A sort key that orders strings by UTF-16 code units, as JavaScript's ``<`` does."""
    return text.encode("utf-16-be", errors="surrogatepass")


def utf16_sorted(items: Iterable[str]) -> list[str]:
    """The strings sorted by UTF-16 code units."""
    return sorted(items, key=utf16_key)


def utf16_length(text: str) -> int:
    """JavaScript ``String.length``: the number of UTF-16 code units."""
    return len(utf16_key(text)) // 2


def join_and(items: Sequence[str]) -> str:
    """"A", "A and B", or "A, B, and C" (serial comma), as the direction prose writes lists."""
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + ", and " + items[-1]
