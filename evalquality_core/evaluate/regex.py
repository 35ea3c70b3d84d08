"""The bounded, deterministic ``regex`` operator: step-budget estimate, then an RE2 match (scoring.md §1.4).

The reference tests an ECMA-262 pattern with a backtracking engine after a static budget estimate. We keep
the estimate and its two ``budget-exhausted`` refusals exactly, and match with RE2 (``google-re2``), whose
running time is linear in the input: no wall-clock timeout exists anywhere, so a result never depends on
machine speed. The pattern is first translated from ECMA-262 (non-unicode mode) to RE2 syntax, keeping
ECMA meanings where the two differ (see ``translate_pattern``). A pattern RE2 cannot express (lookahead,
lookbehind, backreferences, a repeat count above 1000, a lone surrogate escape) or that is not a valid
pattern at all raises the runtime fault ``operator-cannot-accept-operand`` — never a silent ``false``.

Remaining documented difference: ECMA non-unicode patterns see UTF-16 code units, RE2 sees code points,
so a pattern that splits an astral character (``^.$`` over one emoji) can differ. The budget estimate
still counts UTF-16 units, as the reference does.
"""

from __future__ import annotations

import functools
import re
from typing import Final

import re2

from evalquality_core.faults import RuntimeFault

__all__ = [
    "UnsupportedPattern",
    "compile_pattern",
    "estimate_steps",
    "has_nested_quantifier",
    "regex_test",
    "translate_pattern",
    "utf16_length",
]


class UnsupportedPattern(ValueError):
    """The pattern is invalid ECMA-262 or uses a construct RE2 cannot run; the message says which."""


# ECMA WhiteSpace + LineTerminator (ECMA-262 §22.2.2.9 CharacterClassEscape \s), as RE2 class members.
_ECMA_SPACE_MEMBERS: Final = (
    r"\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
)
# ECMA '.' without the s flag: anything but a line terminator.
_ECMA_DOT: Final = r"[^\n\r\x{2028}\x{2029}]"
_ANY_CHAR: Final = r"[\x{0}-\x{10FFFF}]"
_NO_CHAR: Final = r"[^\x{0}-\x{10FFFF}]"
_QUANTIFIER_BRACE = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_HEX = frozenset("0123456789abcdefABCDEF")
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_OPTIONS.max_mem = 64 << 20


def _literal(char: str) -> str:
    """One literal character in RE2 syntax."""
    if char.isascii() and not char.isalnum():
        return "\\" + char
    return char


def _read_hex(pattern: str, start: int, count: int) -> int | None:
    digits = pattern[start : start + count]
    if len(digits) == count and all(c in _HEX for c in digits):
        return int(digits, 16)
    return None


def translate_pattern(pattern: str) -> str:
    """Translate an ECMA-262 (non-unicode, Annex B) pattern to RE2 syntax with the same meaning.

    Kept ECMA meanings: ``.`` excludes all four line terminators; ``\\s``/``\\S`` use the ECMA white-space set
    (inside a class ``\\S`` keeps RE2's ASCII meaning); ``\\v``, ``\\0``, ``\\cX``, ``\\xHH``, ``\\uHHHH`` and a
    ``\\uD83D\\uDE00`` surrogate pair become code points; an identity escape (``\\p``, ``\\z``, ``\\A``, ``\\Q``…) is
    the literal letter; ``[^]`` matches any character and ``[]`` none; a ``{``, ``}`` or ``]`` that is not
    syntax is literal; ``(?<name>`` becomes ``(?P<name>``. Raises ``UnsupportedPattern`` for lookahead,
    lookbehind, backreferences (numbered or named) and lone surrogates.
    """
    has_named_groups = "(?<" in pattern.replace("(?<=", "").replace("(?<!", "")
    out: list[str] = []
    in_class = False
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            if i + 1 >= n:
                raise UnsupportedPattern("pattern ends with a lone backslash")
            piece, i = _translate_escape(pattern, i + 1, in_class, has_named_groups)
            out.append(piece)
            continue
        if in_class:
            if char == "]":
                in_class = False
                out.append("]")
            elif char == "[":
                out.append(r"\[")
            else:
                out.append(char if char not in "&~" else "\\" + char)
            i += 1
            continue
        if char == "[":
            if pattern.startswith("[^]", i):
                out.append(_ANY_CHAR)
                i += 3
            elif pattern.startswith("[]", i):
                out.append(_NO_CHAR)
                i += 2
            else:
                in_class = True
                if pattern.startswith("[^", i):
                    out.append("[^")
                    i += 2
                else:
                    out.append("[")
                    i += 1
            continue
        if char == "(":
            if pattern.startswith("(?=", i) or pattern.startswith("(?!", i):
                raise UnsupportedPattern("lookahead is not supported by the linear-time matcher")
            if pattern.startswith("(?<=", i) or pattern.startswith("(?<!", i):
                raise UnsupportedPattern("lookbehind is not allowed (AD-4)")
            if pattern.startswith("(?<", i):
                out.append("(?P<")
                i += 3
            elif pattern.startswith("(?:", i):
                out.append("(?:")
                i += 3
            elif pattern.startswith("(?", i):
                raise UnsupportedPattern(f"invalid group syntax at offset {i}")
            else:
                out.append("(")
                i += 1
            continue
        if char == "{":
            match = _QUANTIFIER_BRACE.match(pattern, i)
            if match and out:
                out.append(match.group(0))
                i = match.end()
            else:
                out.append(r"\{")
                i += 1
            continue
        if char in "}]":
            out.append("\\" + char)
        elif char == ".":
            out.append(_ECMA_DOT)
        else:
            out.append(char)
        i += 1
    if in_class:
        raise UnsupportedPattern("unterminated character class")
    return "".join(out)


def _translate_escape(pattern: str, i: int, in_class: bool, has_named_groups: bool) -> tuple[str, int]:
    """Translate the escape whose character is at ``i``; return the RE2 text and the next offset."""
    char = pattern[i]
    if char in "123456789":
        raise UnsupportedPattern("backreferences are not allowed (AD-4)")
    if char == "0":
        if i + 1 < len(pattern) and pattern[i + 1].isdigit():
            raise UnsupportedPattern("legacy octal escapes are not supported")
        return r"\x{0}", i + 1
    if char in "dDwW":
        return "\\" + char, i + 1
    if char in "bB":
        # Inside a class ECMA \b is backspace; outside it is a word boundary in both dialects.
        return (r"\x{8}" if in_class and char == "b" else "\\" + char), i + 1
    if char == "s":
        return (_ECMA_SPACE_MEMBERS if in_class else f"[{_ECMA_SPACE_MEMBERS}]"), i + 1
    if char == "S":
        return (r"\S" if in_class else f"[^{_ECMA_SPACE_MEMBERS}]"), i + 1
    if char in "fnrt":
        return "\\" + char, i + 1
    if char == "v":
        return r"\x{B}", i + 1
    if char == "c":
        if i + 1 < len(pattern) and pattern[i + 1].isascii() and pattern[i + 1].isalpha():
            return f"\\x{{{ord(pattern[i + 1]) % 32:X}}}", i + 2
        return _literal("\\") + "c", i + 1
    if char == "x":
        value = _read_hex(pattern, i + 1, 2)
        return (f"\\x{{{value:X}}}", i + 3) if value is not None else ("x", i + 1)
    if char == "u":
        value = _read_hex(pattern, i + 1, 4)
        if value is None:
            return "u", i + 1
        if 0xD800 <= value <= 0xDBFF and pattern.startswith("\\u", i + 5):
            low = _read_hex(pattern, i + 7, 4)
            if low is not None and 0xDC00 <= low <= 0xDFFF:
                combined = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                return f"\\x{{{combined:X}}}", i + 11
        if 0xD800 <= value <= 0xDFFF:
            raise UnsupportedPattern("a lone surrogate escape cannot be matched over code points")
        return f"\\x{{{value:X}}}", i + 5
    if char == "k" and has_named_groups:
        raise UnsupportedPattern("named backreferences are not allowed (AD-4)")
    # Annex B identity escape: the character itself.
    return _literal(char), i + 1


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re2._Regexp:
    """Translate and compile once (cached); raises ``UnsupportedPattern`` when RE2 refuses the result."""
    translated = translate_pattern(pattern)
    try:
        return re2.compile(translated, _RE2_OPTIONS)
    except re2.error as exc:
        raise UnsupportedPattern(f"RE2 refuses the pattern: {exc}") from None


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units (how ECMA measures a string)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _strip_classes(pattern: str) -> str:
    """``[...]`` → ``[]`` (escape-aware), for estimation only (scoring.md §1.4 step 3)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        char = pattern[i]
        if char == "\\" and i + 1 < n:
            if not in_class:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
                out.append("]")
        elif char == "[":
            in_class = True
            out.append("[")
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _drop_escaped_pairs(text: str) -> str:
    return re.sub(r"\\[\s\S]", "", text)


_GROUP_MARKER = re.compile(r"^\?(?::|=|!|<=|<!|<[^>]*>)")
_FOLLOWING_QUANTIFIER = re.compile(r"[*+?]|\{[0-9]+(?:,[0-9]*)?\}")
_QUANTIFIER_MARKERS = re.compile(r"[*+?]|\{[0-9]+(?:,[0-9]*)?\}")


def has_nested_quantifier(pattern: str) -> bool:
    """scoring.md §1.4 step 4: a quantified group whose contents hold a quantifier character.

    Scans the class-stripped pattern with escape awareness; each matched ``( … )`` group's contents lose
    a leading group marker and escaped pairs; the group is nested-quantified when they still contain one of
    ``* + ? {`` and the group is immediately followed by a quantifier.
    """
    stripped = _strip_classes(pattern)
    opens: list[int] = []
    i, n = 0, len(stripped)
    while i < n:
        char = stripped[i]
        if char == "\\":
            i += 2
            continue
        if char == "(":
            opens.append(i)
        elif char == ")" and opens:
            start = opens.pop()
            contents = _drop_escaped_pairs(_GROUP_MARKER.sub("", stripped[start + 1 : i], count=1))
            if any(c in contents for c in "*+?{") and _FOLLOWING_QUANTIFIER.match(stripped, i + 1):
                return True
        i += 1
    return False


def estimate_steps(pattern: str, value: str) -> int:
    """scoring.md §1.4 step 5: (1 + quantifier markers in the stripped pattern) × UTF-16 length of value."""
    markers = len(_QUANTIFIER_MARKERS.findall(_drop_escaped_pairs(_strip_classes(pattern))))
    return (1 + markers) * utf16_length(value)


def regex_test(value: object, pattern: str, step_budget: int, artifact_path: str) -> bool:
    """The ``regex`` operator over a resolved value (scoring.md §1.4), two-valued.

    Not a string (ABSENT included) → ``False``. An invalid or unsupported pattern → fault
    ``operator-cannot-accept-operand``. A nested quantifier, or an estimate above ``step_budget`` →
    fault ``budget-exhausted``. Otherwise RE2 searches the pattern (compile guarantees ``^…$`` anchoring).
    """
    if not isinstance(value, str):
        return False
    try:
        compiled = compile_pattern(pattern)
    except UnsupportedPattern as exc:
        raise RuntimeFault(
            "operator-cannot-accept-operand", artifact_path, f"regex pattern {pattern!r} cannot be run: {exc}"
        ) from None
    if has_nested_quantifier(pattern):
        raise RuntimeFault(
            "budget-exhausted",
            artifact_path,
            f"regex pattern {pattern!r} nests a quantifier inside a quantified group",
        )
    estimate = estimate_steps(pattern, value)
    if estimate > step_budget:
        raise RuntimeFault(
            "budget-exhausted",
            artifact_path,
            f"regex pattern {pattern!r} over a value of {utf16_length(value)} UTF-16 units is estimated at "
            f"{estimate} steps, above the budget of {step_budget}",
        )
    return compiled.search(value) is not None
