"""Printable text: what a target produced, or a user named, as it may be shown to an operator.

A system under test is hostile, and so is a suite folder's name: a target's stderr, stdout, answer
body or error text, and a suite, probe or operation name, can hold terminal escapes (``ESC ]0;title
BEL`` sets the window title, ``ESC[2J`` clears the screen, ``ESC[1A`` and ``\\r`` overwrite a line
already printed, ``\\b`` erases what came before it) or Markdown/HTML that forms a link or a tag. Any
of them would let a target change what the operator sees, a verdict included, unseen.

So every such text is passed through :func:`printable` where it is *shown* (the CLI's stdout and
stderr, the flows' console and tables, Prefect's run logs and artifacts, the HTML report); what is
*stored* (artifacts, JSON files, the leg cache) keeps the raw text.

The rule, one for every sink (:data:`NAMED_ESCAPES`, :data:`ESCAPED_RANGES`):

* ``\\`` is shown as ``\\\\``, so a target cannot forge an escaped-looking text: the mapping is
  injective (distinct texts stay distinct) and can be read back unambiguously.
* ``\\t``, ``\\n``, ``\\r`` are shown as ``\\t``, ``\\n``, ``\\r``; every other C0 control
  (U+0000-U+001F), DEL (U+007F) and every C1 control (U+0080-U+009F) as ``\\xHH`` (``ESC`` is ``\\x1b``).
  Newlines and tabs are escaped too, never kept: one shown text is one line, so a target cannot
  start a line that looks like ours.
* A lone surrogate (U+D800-U+DFFF, a str decoded with ``surrogateescape``), and the Unicode
  bidirectional and line-breaking format characters (U+061C, U+200E, U+200F, U+2028, U+2029,
  U+202A-U+202E, U+2066-U+2069), which reorder or break the text around them, as ``\\uHHHH``.
* Every other character is shown as itself.

:func:`markdown_literal` and :func:`html_literal` add the Markdown and HTML layers on top.
"""

from __future__ import annotations

import html

#: Characters shown by a short name instead of ``\xHH``.
NAMED_ESCAPES: dict[str, str] = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}

#: Inclusive code point ranges shown as ``\xHH`` (below U+0100) or ``\uHHHH``: C0, DEL, C1, lone
#: surrogates, and the bidirectional / line-breaking format characters.
ESCAPED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F),  # C0 controls: ESC, BEL, BS, CR, ...
    (0x007F, 0x009F),  # DEL and the C1 controls (U+009B is a one-character CSI)
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x200E, 0x200F),  # LRM, RLM
    (0x2028, 0x2029),  # LINE SEPARATOR, PARAGRAPH SEPARATOR
    (0x202A, 0x202E),  # LRE, RLE, PDF, LRO, RLO
    (0x2066, 0x2069),  # LRI, RLI, FSI, PDI
    (0xD800, 0xDFFF),  # lone surrogates (not encodable as UTF-8)
)

#: ASCII punctuation: every character CommonMark lets a backslash escape, and so every character
#: that can start Markdown syntax (links, emphasis, code, tables' ``|``, HTML's ``<``, entities' ``&``).
_MARKDOWN_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _escaped(code: int) -> bool:
    return any(low <= code <= high for low, high in ESCAPED_RANGES)


def _build_table() -> dict[int, str]:
    table = {ord(char): shown for char, shown in NAMED_ESCAPES.items()}
    for low, high in ESCAPED_RANGES:
        for code in range(low, high + 1):
            table.setdefault(code, f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return table


#: ``str.translate`` table built from the two data tables above (one C-speed pass per text).
_TABLE = _build_table()


def printable(text: str) -> str:
    """``text`` as it may be shown on a terminal, in a log or a rendered page (module docstring).

    Total over ``str`` (lone surrogates included), injective, and the result holds no control,
    bidirectional or line-breaking character and is always encodable as UTF-8.
    """
    return text.translate(_TABLE)


def markdown_literal(text: str) -> str:
    """``text`` for a Markdown artifact: :func:`printable`, then every ASCII punctuation character
    backslash-escaped, so it renders as the literal text (no link, emphasis, code span, HTML tag,
    heading or list, and no ``|`` that would end a table cell)."""
    return "".join(f"\\{char}" if char in _MARKDOWN_PUNCTUATION else char for char in printable(text))


def html_literal(text: str) -> str:
    """``text`` for an HTML page or attribute value: :func:`printable`, then ``html.escape``
    (``& < > " '``)."""
    return html.escape(printable(text))
