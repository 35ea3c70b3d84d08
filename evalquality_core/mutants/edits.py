"""A mutated file as the suite's mutation shape: a ``find``/``replace`` pair whose ``find`` occurs once.

The pair starts at the smallest span of whole lines that holds every byte the mutation changed, and
is widened one line at a time (below first, then above, alternating) until ``find`` occurs exactly
once in the original file, which is what :meth:`evalquality_core.suite.load.Mutation.apply` demands.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    """``find`` → ``replace`` in the original text, and the 1-based lines ``find`` spans."""

    find: str
    replace: str
    first_line: int
    last_line: int


class NotExpressible(ValueError):
    """Original and mutated text are equal: there is no edit to express."""


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """The index just past the newline ending the line that holds ``index`` (or the end of text)."""
    found = text.find("\n", index)
    return len(text) if found < 0 else found + 1


def edit_between(original: str, mutated: str, *, same_before: int = 0, same_after: int = 0) -> Edit:
    """The one ``find``/``replace`` pair turning ``original`` into ``mutated`` (module docstring).

    ``same_before``/``same_after``: how many leading/trailing characters the caller knows the two texts
    share (a splice's untouched head and tail); the scan for the changed part starts there instead of
    comparing the whole file character by character in Python, which cost about as much per candidate
    as the file is long (issue 34). The edit is the same either way."""
    if original == mutated:
        raise NotExpressible("the mutated text equals the original")
    limit = min(len(original), len(mutated))
    prefix = min(same_before, limit)
    while prefix < limit and original[prefix] == mutated[prefix]:
        prefix += 1
    suffix = min(same_after, limit - prefix)
    while suffix < limit - prefix and original[-1 - suffix] == mutated[-1 - suffix]:
        suffix += 1
    start = _line_start(original, prefix)
    changed_end = len(original) - suffix
    # The last changed character's line (a pure insertion at a line start still takes that line).
    end = _line_end(original, max(changed_end - 1, start)) if changed_end > start else _line_end(original, start)
    growth = len(mutated) - len(original)
    below = True
    while original.count(original[start:end]) != 1:
        grow_down = below and end < len(original) or start == 0
        if grow_down:
            end = _line_end(original, end)
        else:
            start = _line_start(original, start - 1)
        below = not below
    find = original[start:end]
    replace = mutated[start:end + growth]
    return Edit(find, replace, original.count("\n", 0, start) + 1, original.count("\n", 0, max(end - 1, start)) + 1)


def apply_edit(original: str, find: str, replace: str) -> str:
    """``original`` with ``find`` (which must occur exactly once) replaced; the stager's own rule."""
    if original.count(find) != 1:
        raise ValueError(f"the text to replace occurs {original.count(find)} times, not exactly once")
    return original.replace(find, replace)
