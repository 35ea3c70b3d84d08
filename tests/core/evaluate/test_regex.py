"""The bounded regex: budget estimate and refusals, RE2 linear-time matching, ECMA translation."""

from __future__ import annotations

import pytest

from evalquality_core.evaluate.regex import (
    UnsupportedPattern,
    compile_pattern,
    estimate_steps,
    has_nested_quantifier,
    regex_test,
    translate_pattern,
    utf16_length,
)
from evalquality_core.faults import RuntimeFault

PATH = "EvalContract.oracles[id=O-001].check"
BUDGET = 1_000_000


def test_catastrophic_pattern_is_refused_deterministically() -> None:
    # The classic exponential-backtracking shape is rejected before any matching, every time.
    value = "a" * 50_000 + "!"
    for _ in range(3):
        with pytest.raises(RuntimeFault) as caught:
            regex_test(value, "^(a+)+$", BUDGET, PATH)
        assert caught.value.code == "budget-exhausted"
        assert caught.value.artifact_path == PATH


def test_re2_runs_a_backtracking_bomb_in_linear_time() -> None:
    # Compiled directly (bypassing the nested-quantifier refusal): RE2 answers without backtracking.
    # A backtracking engine would take ~2^40 steps here; the answer must be the same every time.
    compiled = compile_pattern("^(a+)+$")
    value = "a" * 40 + "!"
    assert [compiled.search(value) is None for _ in range(3)] == [True, True, True]
    assert compiled.search("a" * 100_000) is not None


def test_alternation_bomb_within_budget_answers() -> None:
    # (a|aa)* is not nested-quantified, so it is estimated and run: Fibonacci backtracking elsewhere.
    value = "a" * 200_000 + "b"
    assert estimate_steps("^(a|aa)*$", value) == 2 * len(value)
    assert regex_test(value, "^(a|aa)*$", BUDGET, PATH) is False
    assert regex_test("a" * 200_000, "^(a|aa)*$", BUDGET, PATH) is True


def test_estimate_above_budget_is_a_fault() -> None:
    # (1 + 2 markers) × 10 = 30 steps
    assert estimate_steps("^a+b*$", "x" * 10) == 30
    assert regex_test("aaaaaaaaab", "^a+b*$", 30, PATH) is True
    with pytest.raises(RuntimeFault) as caught:
        regex_test("aaaaaaaaab", "^a+b*$", 29, PATH)
    assert caught.value.code == "budget-exhausted"


def test_estimate_ignores_class_contents_and_escapes_and_counts_utf16() -> None:
    assert estimate_steps("^[*+?]\\*$", "ab") == 2
    assert estimate_steps("^x{2,3}$", "ab") == 4
    assert utf16_length("\U0001f600a") == 3
    assert estimate_steps("^.*$", "\U0001f600") == 4


@pytest.mark.parametrize(
    ("pattern", "nested"),
    [
        ("^(a+)+$", True),
        ("^(?:a*b)*$", True),
        ("^(a{2})?$", True),
        ("^(?<n>a+)*$", True),
        ("^(a|b)+$", False),
        ("^(a+)$", False),
        ("^([+*])+$", False),  # quantifier characters inside a class are stripped
        ("^(\\+)+$", False),  # escaped pairs are dropped
        ("^(?:ab)+$", False),  # the group marker's ? is not a quantifier
    ],
)
def test_nested_quantifier_rule(pattern: str, nested: bool) -> None:
    assert has_nested_quantifier(pattern) is nested


def test_non_string_value_is_false_before_any_pattern_work() -> None:
    assert regex_test(None, "^(a+)+$", BUDGET, PATH) is False
    assert regex_test(["a"], "^a$", BUDGET, PATH) is False


@pytest.mark.parametrize(
    "pattern",
    ["^(?=a)a$", "^(?!b)a$", "^(?<=a)b$", "^(a)\\1$", "^(?<x>a)\\k<x>$", "^a{2000}$", "^(a$", "^\\uD83D$"],
)
def test_unsupported_or_invalid_pattern_is_operator_cannot_accept_operand(pattern: str) -> None:
    with pytest.raises(RuntimeFault) as caught:
        regex_test("a", pattern, BUDGET, PATH)
    assert caught.value.code == "operator-cannot-accept-operand"
    with pytest.raises(UnsupportedPattern):
        compile_pattern(pattern)


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("^a.b$", "a\nb", False),  # ECMA '.' excludes line terminators
        ("^a.b$", "a\u2028b", False),
        ("^a.b$", "a-b", True),
        ("^\\s$", "\u00a0", True),  # ECMA \s is Unicode white space
        ("^\\s$", "\ufeff", True),
        ("^\\S$", "\u3000", False),
        ("^[\\s\\S]+$", "x\ny", True),
        ("^\\p{L}$", "p{L}", True),  # identity escape in non-unicode mode
        ("^\\z$", "z", True),
        ("^[^]$", "\n", True),
        ("^[]$", "", False),
        ("^a{$", "a{", True),  # a brace that is not a quantifier is literal
        ("^a]$", "a]", True),
        ("^(?<word>x)\\u0041$", "xA", True),
        ("^\\uD83D\\uDE00$", "\U0001f600", True),  # surrogate pair escape
        ("^[\\b]$", "\b", True),  # backspace inside a class
        ("^\\x41\\v\\0$", "A\x0b\x00", True),
        ("^\\cJ$", "\n", True),
        ("^a$", "a\n", False),  # $ without the m flag is the end of input only
        ("^n-[0-9]{3}$", "n-123", True),
    ],
)
def test_ecma_meanings_are_kept(pattern: str, value: str, expected: bool) -> None:
    assert regex_test(value, pattern, BUDGET, PATH) is expected


def test_translation_is_plain_for_common_patterns() -> None:
    assert translate_pattern("^[a-z0-9]+(?:-[a-z0-9]+)*$") == "^[a-z0-9]+(?:-[a-z0-9]+)*$"
