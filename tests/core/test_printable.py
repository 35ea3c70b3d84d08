"""The one escaping function every display sink calls (evalquality_core/printable.py), as properties.

The decoder below is written from the rule in the module docstring, not from the code: if
``printable`` reads back to its input for every str, it is injective (a target cannot make its text
show like an escape it did not write), and the shown text never holds a control character.
"""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from evalquality_core.printable import html_literal, markdown_literal, printable

#: Any code point, surrogates included (hypothesis' text() leaves out lone surrogates by default).
ANY_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))
#: Texts made of the characters that matter most, so collisions are actually tried.
TRICKY = st.text(alphabet=st.sampled_from(["\\", "x", "u", "1", "b", "n", "r", "t", "\x1b", "\n", "\r", "\t", "\x9b",
                                           "\x7f", "\ud800", "\u202e", "0", "d"]), max_size=12)

_BAD = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def read_back(shown: str) -> str:
    """Undo the documented rule: ``\\\\``, ``\\t``, ``\\n``, ``\\r``, ``\\xHH``, ``\\uHHHH``."""
    out, i = [], 0
    while i < len(shown):
        char = shown[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        kind = shown[i + 1]
        if kind in "\\tnr":
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}[kind])
            i += 2
        elif kind == "x":
            out.append(chr(int(shown[i + 2:i + 4], 16)))
            i += 4
        elif kind == "u":
            out.append(chr(int(shown[i + 2:i + 6], 16)))
            i += 6
        else:
            raise AssertionError(f"undocumented escape at {i} in {shown!r}")
    return "".join(out)


@settings(max_examples=400)
@given(ANY_TEXT)
def test_shown_text_holds_no_control_and_encodes_as_utf8(text: str) -> None:
    shown = printable(text)
    assert _BAD.search(shown) is None
    assert not any(unicodedata.category(c) == "Cc" for c in shown)
    shown.encode("utf-8")  # strict: no surrogate left


@settings(max_examples=400)
@given(ANY_TEXT)
def test_shown_text_reads_back_to_the_input(text: str) -> None:
    assert read_back(printable(text)) == text


@settings(max_examples=400)
@given(TRICKY, TRICKY)
def test_distinct_texts_stay_distinct(a: str, b: str) -> None:
    if a != b:
        assert printable(a) != printable(b)


def test_a_target_cannot_forge_an_escape() -> None:
    assert printable("\x1b[2J") == "\\x1b[2J"
    assert printable("\\x1b[2J") == "\\\\x1b[2J"  # the literal text stays apart from the real ESC
    assert printable("a\rb\x08\x07\n") == "a\\rb\\x08\\x07\\n"
    assert printable("\x9b31m\u202e") == "\\x9b31m\\u202e"
    assert printable("\udcff") == "\\udcff"
    assert printable("naïve — ✓ 名前") == "naïve — ✓ 名前"  # printable text is left alone


@given(ANY_TEXT)
def test_markdown_literal_escapes_every_ascii_punctuation(text: str) -> None:
    shown = markdown_literal(text)
    assert _BAD.search(shown) is None
    # Dropping each escaping backslash gives back the printable text: it renders literally.
    assert re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", shown) == printable(text)
    assert re.search(r"(?<!\\)(?:\\\\)*[\[\]()<>|`*_]", shown) is None


def test_literals_form_no_link_or_tag() -> None:
    assert markdown_literal("[x](javascript:alert(1))") == "\\[x\\]\\(javascript\\:alert\\(1\\)\\)"
    assert markdown_literal("a|b`c`\n<script>") == "a\\|b\\`c\\`\\\\n\\<script\\>"
    assert html_literal("<script>\x1b") == "&lt;script&gt;\\x1b"
