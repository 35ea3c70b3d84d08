"""The ``[service]`` command's templates (targets.toml): plain ``{name}`` fields and ``{{``/``}}`` escapes.

A registry is hostile input, and ``str.format`` is a small language: ``{python[999]}`` indexes,
``{x.__class__}`` reads attributes (an information leak), ``{x!r:>9}`` converts and pads. A template
here is only literal text, ``{{`` (a literal ``{``), ``}}`` (a literal ``}``) and ``{name}`` fields whose
name is a placeholder name (``[a-z][a-z0-9_]*``, as everywhere else in the registry). Anything else is
refused when the registry is read, so nothing of it is ever evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["TemplateError", "fill_template", "template_fields"]

#: One token of a template, tried in this order at each position: an escape, a field, literal text
#: without braces; a brace none of them takes is what the template is refused for.
_TOKEN = re.compile(r"(?P<escape>\{\{|\}\})|\{(?P<field>[a-z][a-z0-9_]*)\}|(?P<text>[^{}]+)")


class TemplateError(ValueError):
    """A template holds something other than text, ``{{``, ``}}`` and plain ``{name}`` fields."""


def _tokens(template: str) -> list[tuple[str, str]]:
    """``(kind, value)`` for each token of ``template`` (kind ``text`` or ``field``); :class:`TemplateError`
    names the first brace that is neither an escape nor a plain field."""
    tokens: list[tuple[str, str]] = []
    index = 0
    while index < len(template):
        match = _TOKEN.match(template, index)
        if match is None:
            end = template.find("}", index)
            shown = template[index:end + 1] if template[index] == "{" and end >= 0 else template[index]
            raise TemplateError(
                f"{shown!r} at character {index} is not a plain {{name}} placeholder "
                "(only {name}, {{ and }} are allowed; no indexing, attributes, conversions or formats)"
            )
        if match.group("escape"):
            tokens.append(("text", match.group("escape")[0]))
        elif match.group("field"):
            tokens.append(("field", match.group("field")))
        else:
            tokens.append(("text", match.group("text")))
        index = match.end()
    return tokens


def template_fields(template: str) -> list[str]:
    """The placeholder names ``template`` uses, in order; :class:`TemplateError` when it holds anything
    but text, escapes and plain fields."""
    return [value for kind, value in _tokens(template) if kind == "field"]


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` replaced by ``values[name]`` and the escapes undone; nothing is
    evaluated. :class:`TemplateError` for a malformed template, ``KeyError`` (the name) for a field no
    value is given for."""
    return "".join(value if kind == "text" else str(values[value]) for kind, value in _tokens(template))
