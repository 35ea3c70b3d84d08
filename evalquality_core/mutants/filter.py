"""The static filter: what is never run.

* **Invalid** — the mutated file does not compile (``compile()``), or the mutation changes nothing;
* **Duplicate** — the mutated file is byte-identical to one an earlier mutant (in source order) produced.

Both are reported with their reason and never staged.

Cost (issue 34): compiling the whole mutated file for every candidate made generation grow with
candidates x file size. A mutation changes the lines of one edit (:mod:`.edits`), so only the statements
those lines touch are compiled: in the innermost class or function body that holds the whole edit, under
a stand-in header of the same kind (``class _:``, ``def _():``, ``async def _():``), else at the top level;
preceded by as many empty lines as precede them in the file (error line numbers stay the file's) and
under the file's ``from __future__`` flags. A passing part is the whole file's verdict: the untouched
statements compiled before, statements of one block join at line boundaries, and no operator introduces
a name, a ``global``/``nonlocal``, a ``yield``/``await`` or an import that a check across statements could
see; the one thing an operator removes that such a check sees, a binding (a deleted ``n += 1``), matters
only to a ``nonlocal``, so a function holding a ``nonlocal``, ``global`` or ``yield`` anywhere is compiled
whole within its own block. A refused part is compiled whole before it is reported (rare: most candidates compile), so an
Invalid reason is always the whole file's. Duplicates are remembered by a digest of the edit, which the mutated file determines and
which determines it (``find`` occurs once in the original), never by the mutated text itself.
"""

from __future__ import annotations
import __future__

import ast
import bisect
import hashlib
import re
import warnings
from dataclasses import dataclass

from evalquality_core.mutants.edits import Edit, edit_between

_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Rejection:
    """Why a candidate is not run: ``status`` Invalid or Duplicate, and one line of reason."""

    status: str
    reason: str


def _compile(text: str, filename: str, flags: int = 0) -> str | None:
    try:
        with warnings.catch_warnings():  # the original's own warnings, once per candidate: noise
            warnings.simplefilter("ignore")
            compile(text, filename, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as problem:
        return f"does not compile: {problem.msg} at line {problem.lineno}"
    except ValueError as problem:  # e.g. a NUL byte in the source
        return f"does not compile: {problem}"
    return None


def compile_problem(text: str, filename: str) -> str | None:
    """Why ``text`` does not compile as Python (one line), or None when it does."""
    return _compile(text, filename)


def _first_line(statement: ast.stmt) -> int:
    return min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))])


#: The header a block's statements are compiled under when the edit lies inside a class or function body.
_WRAPPERS: dict[type, str] = {ast.ClassDef: "class _:", ast.FunctionDef: "def _():", ast.AsyncFunctionDef: "async def _():"}


#: What makes a function's statements depend on each other at compile time.
_CROSS_STATEMENT = (ast.Nonlocal, ast.Global, ast.Yield, ast.YieldFrom)


class SourceOutline:
    """One original file's line offsets, statement lines per block and ``__future__`` flags."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0, *(match.end() for match in _NEWLINE.finditer(text))]
        self.flags = 0
        try:
            self.module: ast.Module | None = ast.parse(text)
        except (SyntaxError, ValueError):
            self.module = None  # not Python: every candidate is compiled whole (and the original's error shows)
        self._blocks: dict[int, tuple[list[int], list[int]]] = {}
        # Functions whose statements are not compiled apart: a ``nonlocal`` or ``global`` below them checks
        # bindings across their statements (deleting ``n += 1`` can leave a ``nonlocal n`` unbound), and a
        # ``yield`` makes every ``return`` of the function a generator's.
        self._opaque = {
            id(node) for node in ast.walk(self.module) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(isinstance(inner, _CROSS_STATEMENT) for inner in ast.walk(node))
        } if self.module is not None else set()
        for statement in self.module.body if self.module is not None else []:
            if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
                for alias in statement.names:
                    feature = getattr(__future__, alias.name, None)
                    self.flags |= getattr(feature, "compiler_flag", 0)

    def _lines(self, body: list[ast.stmt]) -> tuple[list[int], list[int]]:
        """The first and last lines of each statement of ``body`` (in order, never overlapping)."""
        known = self._blocks.get(id(body))
        if known is None:
            known = self._blocks[id(body)] = ([_first_line(s) for s in body], [s.end_lineno or s.lineno for s in body])
        return known

    def _offset_of_line(self, line: int) -> int:
        """The offset where 1-based ``line`` starts (the text's length past its last line)."""
        return self.line_starts[line - 1] if line - 1 < len(self.line_starts) else len(self.text)

    def unit(self, first: int, last: int) -> tuple[int, int, str | None]:
        """The lines of the statements lines ``first``..``last`` touch in the innermost block that holds
        them all, and the header of that block (None: the module's top level)."""
        assert self.module is not None
        body, header = self.module.body, None
        while True:
            starts, ends = self._lines(body)
            low = bisect.bisect_left(ends, first)  # the first statement ending at or after ``first``
            high = bisect.bisect_right(starts, last) - 1  # the last statement starting at or before ``last``
            if low > high:
                return first, last, header
            inner = body[low]
            if low == high and type(inner) in _WRAPPERS and inner.body and id(inner) not in self._opaque:
                inner_starts, _ = self._lines(inner.body)
                if inner_starts[0] > inner.lineno and first >= inner_starts[0]:
                    body, header = inner.body, _WRAPPERS[type(inner)]
                    continue
            return min(first, starts[low]), max(last, ends[high]), header

    def compile_problem(self, edit: Edit, filename: str) -> str | None:
        """Why the original with ``edit`` applied does not compile (module docstring), or None."""
        at = self._offset_of_line(edit.first_line)

        def whole() -> str:
            return self.text[:at] + self.text[at:].replace(edit.find, edit.replace, 1)

        if self.module is None or not self.text.startswith(edit.find, at):
            return _compile(whole(), filename, self.flags)
        first, last, header = self.unit(edit.first_line, edit.last_line)
        begin, end = self._offset_of_line(first), self._offset_of_line(last + 1)
        if at + len(edit.find) > end or (header is not None and first < 2):
            return _compile(whole(), filename, self.flags)
        lead = "\n" * (first - 1) if header is None else "\n" * (first - 2) + header + "\n"
        snippet = lead + self.text[begin:at] + edit.replace + self.text[at + len(edit.find):end]
        if _compile(snippet, filename, self.flags) is None:
            return None
        return _compile(whole(), filename, self.flags)  # refused: the whole file's verdict and words


class StaticFilter:
    """Remembers the edits it has seen (per target file, by digest) to name duplicates."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}
        self._outlines: dict[str, SourceOutline] = {}

    def _outline(self, target: str, original: str) -> SourceOutline:
        outline = self._outlines.get(target)
        if outline is None or outline.text is not original and outline.text != original:
            outline = self._outlines[target] = SourceOutline(original)
        return outline

    def check(self, mutant_id: str, target: str, original: str, mutated: str, edit: Edit | None = None) -> Rejection | None:
        """The rejection of one candidate, or None when it is to be run. Call in source order.
        ``edit``: the candidate's :func:`edit_between` of ``original`` and ``mutated``, when known."""
        if mutated == original:
            return Rejection("Invalid", "the mutation changes nothing")
        if edit is None:
            edit = edit_between(original, mutated)
        problem = self._outline(target, original).compile_problem(edit, target)
        if problem is not None:
            return Rejection("Invalid", problem)
        key = (target, hashlib.sha256(f"{len(edit.find)}\0{edit.find}{edit.replace}".encode()).hexdigest())
        first = self._seen.get(key)
        if first is not None:
            return Rejection("Duplicate", f"the same source as {first}")
        self._seen[key] = mutant_id
        return None
