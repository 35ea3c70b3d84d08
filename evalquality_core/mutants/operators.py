"""The mutation operators: where a Python source file can be mutated, and into what (libcst).

In the spirit of mutmut's and cosmic-ray's operators (their ideas, not their code): each operator
visits the concrete syntax tree and proposes replacement nodes. libcst keeps every other byte of the
file (comments, spacing, quotes), so a mutated file differs from the original only at the node, and
the difference becomes one ``find``/``replace`` pair (:mod:`.edits`).

The table of operators (name, ``mutatorName``, what each does) is :mod:`.catalogue`, which needs no
libcst. Docstrings are never mutated (changing one is equivalent by construction), nor are imports
deleted (a missing import only ever fails at start-up).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider

from evalquality_core.mutants.catalogue import OPERATOR_NAMES

try:  # libcst's code generation state: what Module.code_for_node renders with (no indentation)
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - another libcst layout: every multi-line node is re-rendered
    CodegenState = None  # type: ignore[assignment,misc]


@dataclass(frozen=True, eq=False)
class Candidate:
    """One proposed mutation: the node, what replaces it, and where it is (1-based line, 0-based column)."""

    operator: str
    node: cst.CSTNode
    replacement: cst.CSTNode
    original: str
    mutated: str
    start: tuple[int, int]
    end: tuple[int, int]


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


_ARITHMETIC: dict[type, type] = {
    cst.Add: cst.Subtract, cst.Subtract: cst.Add, cst.Multiply: cst.Divide, cst.Divide: cst.Multiply,
    cst.FloorDivide: cst.Divide, cst.Modulo: cst.Multiply, cst.Power: cst.Multiply,
}
_AUGMENTED: dict[type, type] = {
    cst.AddAssign: cst.SubtractAssign, cst.SubtractAssign: cst.AddAssign, cst.MultiplyAssign: cst.DivideAssign,
    cst.DivideAssign: cst.MultiplyAssign, cst.FloorDivideAssign: cst.DivideAssign, cst.ModuloAssign: cst.MultiplyAssign,
}
_COMPARISON: dict[type, type] = {
    cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal, cst.LessThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.LessThan, cst.GreaterThan: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.GreaterThan,
    cst.Is: cst.IsNot, cst.IsNot: cst.Is, cst.In: cst.NotIn, cst.NotIn: cst.In,
}


def _swap_operator(operator: cst.CSTNode, table: dict[type, type]) -> cst.CSTNode | None:
    """The operator node ``table`` maps ``operator`` to, keeping its surrounding whitespace."""
    target = table.get(type(operator))
    if target is None:
        return None
    before = getattr(operator, "whitespace_before", cst.SimpleWhitespace(" "))
    after = getattr(operator, "whitespace_after", cst.SimpleWhitespace(" "))
    if target in (cst.IsNot, cst.NotIn):
        return target(whitespace_before=before, whitespace_between=cst.SimpleWhitespace(" "), whitespace_after=after)
    if hasattr(operator, "whitespace_before"):
        return target(whitespace_before=before, whitespace_after=after)
    return target(whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=after)


def _docstring_of(body: Sequence[cst.CSTNode]) -> cst.CSTNode | None:
    """The docstring expression of a module/class/function body, if its first statement is one."""
    if not body:
        return None
    first = body[0]
    if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 and isinstance(first.body[0], cst.Expr):
        value = first.body[0].value
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
            return first.body[0]
    return None


class _Collector(cst.CSTVisitor):
    """Walks one module and records every candidate of the chosen operators."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, operators: Sequence[str]) -> None:
        super().__init__()
        self.operators = set(operators)
        self.found: list[tuple[str, cst.CSTNode, cst.CSTNode]] = []
        self.skipped: set[int] = set()  # ids of docstring nodes and what lies inside them

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Visit ``node``; a replacement libcst refuses to build (its spacing would not parse) is no candidate."""
        try:
            return super().on_visit(node)
        except cst.CSTValidationError:
            return True

    def _add(self, operator: str, node: cst.CSTNode, replacement: cst.CSTNode | None) -> None:
        if operator in self.operators and replacement is not None and id(node) not in self.skipped:
            self.found.append((operator, node, replacement))

    def _skip_docstring(self, body: Sequence[cst.CSTNode]) -> None:
        docstring = _docstring_of(body)
        if docstring is not None:
            self.skipped.add(id(docstring))
            self.skipped.add(id(docstring.value))  # type: ignore[attr-defined]

    def visit_Module(self, node: cst.Module) -> None:
        self._skip_docstring(node.body)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            self._skip_docstring(node.body.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            self._skip_docstring(node.body.body)

    def visit_Annotation(self, node: cst.Annotation) -> bool:
        return False  # annotations do not run

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        swapped = _swap_operator(node.operator, _ARITHMETIC)
        self._add("arithmetic", node, None if swapped is None else node.with_changes(operator=swapped))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        swapped = _swap_operator(node.operator, _AUGMENTED)
        self._add("arithmetic", node, None if swapped is None else node.with_changes(operator=swapped))
        self._add("statement-deletion", node, cst.Pass(semicolon=node.semicolon))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        for index, target in enumerate(node.comparisons):
            swapped = _swap_operator(target.operator, _COMPARISON)
            if swapped is None:
                continue
            comparisons = list(node.comparisons)
            comparisons[index] = target.with_changes(operator=swapped)
            self._add("comparison", node, node.with_changes(comparisons=comparisons))

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        other: cst.BaseBooleanOp
        if isinstance(node.operator, cst.And):
            other = cst.Or(whitespace_before=node.operator.whitespace_before, whitespace_after=node.operator.whitespace_after)
        else:
            other = cst.And(whitespace_before=node.operator.whitespace_before, whitespace_after=node.operator.whitespace_after)
        self._add("boolean", node, node.with_changes(operator=other))

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._add("boolean", node, node.expression.with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else node.expression)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in ("True", "False"):
            self._add("constant", node, node.with_changes(value="False" if node.value == "True" else "True"))

    def visit_Integer(self, node: cst.Integer) -> None:
        try:
            value = int(node.value, 0)
        except ValueError:
            return
        self._add("number", node, node.with_changes(value=str(value + 1)))

    def visit_Float(self, node: cst.Float) -> None:
        try:
            value = float(node.value)
        except ValueError:
            return
        self._add("number", node, node.with_changes(value=repr(value + 1)))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if id(node) in self.skipped:
            return
        prefix, quote = node.prefix, node.quote
        body = node.value[len(prefix) + len(quote): len(node.value) - len(quote)]
        self._add("string", node, node.with_changes(value=f"{prefix}{quote}XX{body}XX{quote}"))

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is None or (isinstance(node.value, cst.Name) and node.value.value == "None"):
            return
        self._add("return-value", node, node.with_changes(value=cst.Name("None"),
                                                          whitespace_after_return=cst.SimpleWhitespace(" ")))

    def visit_Expr(self, node: cst.Expr) -> None:
        if id(node) in self.skipped:
            return
        value = node.value
        if isinstance(value, cst.Await):
            value = value.expression
        if isinstance(value, cst.Call):
            self._add("statement-deletion", node, cst.Pass(semicolon=node.semicolon))

    def visit_Assign(self, node: cst.Assign) -> None:
        if not (isinstance(node.value, cst.Name) and node.value.value == "None"):
            self._add("assignment", node, node.with_changes(value=cst.Name("None")))

    def _conditions(self, node: cst.CSTNode, test: cst.BaseExpression, field: str) -> None:
        for literal in ("True", "False"):
            if not (isinstance(test, cst.Name) and test.value == literal):
                try:
                    replacement = node.with_changes(**{field: cst.Name(literal)})
                except cst.CSTValidationError:  # ``if(x):``: no space after ``if``, so the parentheses stay
                    replacement = node.with_changes(**{field: cst.Name(literal, lpar=test.lpar, rpar=test.rpar)})
                self._add("condition", node, replacement)

    def visit_If(self, node: cst.If) -> None:
        self._conditions(node, node.test, "test")

    def visit_While(self, node: cst.While) -> None:
        self._conditions(node, node.test, "test")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._conditions(node, node.test, "test")

    def visit_For(self, node: cst.For) -> None:
        self._add("loop", node, node.with_changes(iter=cst.List(elements=[])))

    def visit_Break(self, node: cst.Break) -> None:
        self._add("break-continue", node, cst.Continue(semicolon=node.semicolon))

    def visit_Continue(self, node: cst.Continue) -> None:
        self._add("break-continue", node, cst.Break(semicolon=node.semicolon))


def _summary(node: cst.CSTNode) -> str:
    """A short one-line rendering of a node for the report's ``replacement`` and descriptions."""
    if isinstance(node, (cst.If, cst.While)):
        return f"{type(node).__name__.lower()} {_code(node.test)}:"
    if isinstance(node, cst.For):
        return f"for {_code(node.target)} in {_code(node.iter)}:"
    text = " ".join(_code(node).split())
    return text if len(text) <= 120 else text[:117] + "..."


_NEWLINE = re.compile(r"\r\n|\r|\n")


def parse_module(source: str) -> cst.Module:
    """The concrete syntax tree of ``source``; a syntax error is a :class:`libcst.ParserSyntaxError`."""
    return cst.parse_module(source)


def candidates(
    source: str, operators: Sequence[str] = OPERATOR_NAMES, *, splice: bool = True
) -> Iterator[tuple[Candidate, Renderer]]:
    """Every candidate mutation of ``source`` under ``operators``, in source order, each with a
    :class:`Renderer` of the whole mutated file (rendered lazily: most callers sample before they render).
    ``splice=False`` always re-renders the whole tree (tests compare the two)."""
    return iter(candidate_list(source, operators, splice=splice))


def candidate_list(
    source: str, operators: Sequence[str] = OPERATOR_NAMES, *, splice: bool = True
) -> list[tuple[Candidate, Renderer]]:
    """:func:`candidates` as a list: the file is parsed and walked once, so its length (the file's
    candidate count, for progress) is known before any candidate is rendered."""
    module = parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    collector = _Collector(operators)
    wrapper.visit(collector)
    positions = wrapper.resolve(PositionProvider)
    spans = wrapper.resolve(WhitespaceInclusivePositionProvider)
    # Lines as libcst (and Python's tokenizer) count them: only \n, \r\n and \r end one. ``splitlines``
    # would also split at a form feed or U+2028 inside a string and shift every offset after it.
    line_starts = [0, *(match.end() for match in _NEWLINE.finditer(source))]

    def offset(node: cst.CSTNode) -> tuple[int, int] | None:
        span = spans.get(node)
        if span is None:
            return None
        return (line_starts[span.start.line - 1] + span.start.column, line_starts[span.end.line - 1] + span.end.column)

    order = {name: index for index, name in enumerate(OPERATOR_NAMES)}
    found = sorted(
        collector.found,
        key=lambda item: (positions[item[1]].start.line, positions[item[1]].start.column, order[item[0]]),
    )
    out = []
    for operator, node, replacement in found:
        where = positions[node]
        candidate = Candidate(
            operator=operator,
            node=node,
            replacement=replacement,
            original=_summary(node),
            mutated=_summary(replacement),
            start=(where.start.line, where.start.column),
            end=(where.end.line, where.end.column),
        )
        out.append((candidate, Renderer(module, source, offset, node, replacement, splice, line_starts)))
    return out


#: An indentation no file uses: a node that renders the same inside it as alone emits no indentation,
#: so its code is the same wherever it stands (a multi-line string literal, say).
_PROBE_INDENT = "\t \f"
#: How far up, and how many distinct indentations, :meth:`Renderer._indents` looks.
_INDENT_LOOKBACK = 400
_INDENT_GUESSES = 8


def _render_at(module: cst.Module, node: cst.CSTNode, indent: str) -> str:
    """The code of ``node`` as the module renders it inside a block indented by ``indent``."""
    assert CodegenState is not None
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline,
                         indent_tokens=[indent] if indent else [])
    node._codegen(state)
    return "".join(state.tokens)


def _narrowed(node: cst.CSTNode, replacement: cst.CSTNode) -> tuple[cst.CSTNode, cst.CSTNode]:
    """The smallest pair of (original, replacing) descendants that holds the whole change.

    A replacement made by ``with_changes`` shares every unchanged child object with the original; while
    the two are of one type and exactly one child differs (by identity), the change lies inside that
    child. ``if x:`` -> ``if True:`` narrows to the test, ``a < b`` -> ``a <= b`` to the operator."""
    while type(node) is type(replacement):
        before, after = node.children, replacement.children
        if len(before) != len(after):
            break
        differing = [index for index, (a, b) in enumerate(zip(before, after, strict=True)) if a is not b]
        if len(differing) != 1:
            break
        node, replacement = before[differing[0]], after[differing[0]]
    return node, replacement


class Renderer:
    """Renders one candidate's mutated file, by splicing the replacement's code into the original text
    where that is provably what re-rendering the whole tree gives, else by re-rendering it.

    Re-rendering (``deep_replace``) visits the whole module for every candidate, so generation grew with
    candidates x file size: all operators on a 9.8k-line system ran 20 minutes (issue 34). The change is
    first narrowed to the smallest differing descendant (:func:`_narrowed`: the test of an ``if``, the
    iterable of a ``for``, the operator of a comparison), so a compound statement's block is neither
    rendered nor re-rendered. A splice is the same text when the narrowed node renders on its own
    exactly as it stands in the file (its code does not depend on the surrounding indentation) and its
    replacement emits no indentation (it starts no new line, or renders the same inside a probe
    indentation as alone: a multi-line string literal); a node spanning indented lines is rendered at
    the indentation that reproduces it (``_render_at``); otherwise the tree is re-rendered. (Where libcst does not round-trip a file, as one ending in a bare ``\r``, the splice
    keeps the original bytes the re-render would have changed: the edit stays the mutation alone.)
    """

    def __init__(self, module: cst.Module, source: str, offset: Callable[[cst.CSTNode], tuple[int, int] | None],
                 node: cst.CSTNode, replacement: cst.CSTNode, splice: bool, line_starts: Sequence[int] = (0,)) -> None:
        self._module, self._source, self._offset = module, source, offset
        self._node, self._replacement, self._splice = node, replacement, splice
        self._line_starts = line_starts

    def _indents(self, at: int) -> list[str]:
        """The leading whitespace of the lines from the one holding offset ``at`` upwards (distinct, nearest
        first, a bounded few): one of them is the block indentation the node is rendered at."""
        line = bisect.bisect_right(self._line_starts, at) - 1
        found: list[str] = []
        for index in range(line, max(line - _INDENT_LOOKBACK, -1), -1):
            begin = self._line_starts[index]
            text = self._source[begin:self._line_starts[index + 1] if index + 1 < len(self._line_starts) else len(self._source)]
            indent = text[:len(text) - len(text.lstrip(" \t\f"))]
            if indent not in found:
                found.append(indent)
                if len(found) == _INDENT_GUESSES:
                    break
        return found

    def splice(self) -> tuple[int, int, str] | None:
        """``(start, end, code)``: the mutated file is ``source[:start] + code + source[end:]``; None
        when only a re-render is known to give the mutated file."""
        if not self._splice:
            return None
        node, replacement = _narrowed(self._node, self._replacement)
        span = self._offset(node)
        if span is None:
            return None
        start, end = span
        code = self._module.code_for_node(replacement)
        alone = self._module.code_for_node(node)
        if alone == self._source[start:end] and (
            "\n" not in code and "\r" not in code
            or CodegenState is not None and _render_at(self._module, replacement, _PROBE_INDENT) == code
        ):
            return start, end, code
        # A node spanning lines renders the enclosing block's indentation after each of its newlines (a
        # parenthesised condition, a call's arguments): rendered at the indentation that reproduces its
        # text exactly (and differently from alone, so the indentation was emitted and is the file's), the
        # replacement renders as a re-render would put it there.
        for indent in self._indents(start) if CodegenState is not None else ():
            if (rendered := _render_at(self._module, node, indent)) == self._source[start:end] and rendered != alone:
                return start, end, _render_at(self._module, replacement, indent)
        return None

    def __call__(self) -> str:
        """The whole mutated file."""
        spliced = self.splice()
        if spliced is not None:
            start, end, code = spliced
            return self._source[:start] + code + self._source[end:]
        return self._module.deep_replace(self._node, self._replacement).code  # type: ignore[union-attr]
