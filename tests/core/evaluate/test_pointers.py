"""Pointer resolution on every evidence channel, for api and cli observations (scoring.md §1.2–§1.3)."""

from __future__ import annotations

from typing import Any

import pytest

from evalquality_core.evaluate import ABSENT, decode_tokens, parse_evidence_pointer, resolve_operand, walk

from .factories import context, observation

API = observation(
    "obs-api",
    1,
    "patch-note",
    body={
        "note": {"title": "Revised", "tags": ["a", "b"]},
        "a/b": 1,
        "m~n": 2,
        "__proto__": "own",
        "nil": None,
    },
    headers={"content-type": "application/json"},
    status=200,
    call_inputs={
        "path": {"id": "n-1"},
        "query": {"page": 2},
        "header": {"x-trace": "t"},
        "body": {"title": "Revised"},
    },
)
CLI = observation(
    "obs-cli",
    2,
    "run-skill",
    stdout={"kind": "json", "value": {"selected": ["frontend-rules"]}},
    stderr={"kind": "text", "value": "warning: slow"},
    exit_code=3,
    artifacts={
        "report": {"kind": "json", "value": {"ok": True}},
        "log": {"kind": "text", "value": "line one"},
        "gone": {"kind": "absent"},
    },
    call_inputs={
        "argument": {"target": "frontend"},
        "option": {"verbose": True},
        "environment": {"LANG": "C"},
        "stdin": {"kind": "text"},
    },
)
NULL_BODY = observation("obs-null", 3, "op", body=None)
CTX = context({"write": API, "run": CLI, "empty": NULL_BODY, "unbound": None})

CASES: list[tuple[str, Any]] = [
    # api channels
    ("/interactions/write/response-body", API["responseBody"]),
    ("/interactions/write/response-body/note/title", "Revised"),
    ("/interactions/write/response-body/note/tags/1", "b"),
    ("/interactions/write/response-body/a~1b", 1),
    ("/interactions/write/response-body/m~0n", 2),
    ("/interactions/write/response-body/__proto__", "own"),  # an own key like any other
    ("/interactions/write/response-body/constructor", ABSENT),
    ("/interactions/write/response-body/nil", None),  # null is present
    ("/interactions/write/response-body/nil/x", ABSENT),  # token left at null
    ("/interactions/write/response-body/note/title/x", ABSENT),  # token left at a scalar
    ("/interactions/write/response-body/note/tags/-", ABSENT),
    ("/interactions/write/response-body/note/tags/01", ABSENT),  # leading zero
    ("/interactions/write/response-body/note/tags/2", ABSENT),  # out of range
    ("/interactions/write/response-headers/content-type", "application/json"),
    ("/interactions/write/response-status", 200),
    ("/interactions/write/call-inputs/path/id", "n-1"),
    ("/interactions/write/call-inputs/query/page", 2),
    ("/interactions/write/call-inputs/header/x-trace", "t"),
    ("/interactions/write/call-inputs/body", {"title": "Revised"}),
    ("/interactions/write/call-inputs/argument", None),  # transport not used: null root
    ("/interactions/write/call-inputs/argument/x", ABSENT),
    ("/interactions/write/stdout", None),  # {kind: absent} → null
    ("/interactions/write/exit-code", None),
    # cli channels
    ("/interactions/run/stdout", {"selected": ["frontend-rules"]}),
    ("/interactions/run/stdout/selected/0", "frontend-rules"),
    ("/interactions/run/stderr", "warning: slow"),
    ("/interactions/run/stderr/0", ABSENT),  # a tail over text resolves ABSENT
    ("/interactions/run/exit-code", 3),
    ("/interactions/run/response-body", None),
    ("/interactions/run/response-status", None),
    ("/interactions/run/call-inputs/argument/target", "frontend"),
    ("/interactions/run/call-inputs/option/verbose", True),
    ("/interactions/run/call-inputs/environment/LANG", "C"),
    ("/interactions/run/call-inputs/stdin/kind", "text"),
    ("/interactions/run/artifact/report/ok", True),
    ("/interactions/run/artifact/log", "line one"),
    ("/interactions/run/artifact/gone", None),
    ("/interactions/run/artifact/missing", None),  # missing artifact → null root
    ("/interactions/run/artifact/missing/x", ABSENT),
    # binding
    ("/interactions/empty/response-body", None),  # an empty tail over a null root is present null
    ("/interactions/unbound/response-body", ABSENT),
    ("/interactions/undeclared/response-body", ABSENT),
]


@pytest.mark.parametrize(("pointer", "expected"), CASES)
def test_pointer_resolution(pointer: str, expected: Any) -> None:
    resolved = resolve_operand({"pointer": pointer}, CTX)
    if expected is ABSENT:
        assert resolved is ABSENT
    else:
        assert resolved is not ABSENT and resolved == expected and type(resolved) is type(expected)


def test_every_channel_is_exercised_for_both_kinds() -> None:
    channels = {(p.split("/")[2], parse_evidence_pointer(p).channel) for p, _ in CASES}  # type: ignore[union-attr]
    for kind in ("write", "run"):
        assert {c for k, c in channels if k == kind} >= {
            "response-body",
            "response-status",
            "call-inputs",
            "stdout",
            "exit-code",
        }
    assert {c for _, c in channels} == {
        "response-body",
        "response-headers",
        "response-status",
        "call-inputs",
        "stdout",
        "stderr",
        "exit-code",
        "artifact",
    }


def test_bound_element_pointers() -> None:
    element = {"id": "n-1", "tags": ["x"]}
    assert resolve_operand({"pointer": "@/"}, CTX, element) == element
    assert resolve_operand({"pointer": "@/tags/0"}, CTX, element) == "x"
    assert resolve_operand({"pointer": "@/nope"}, CTX, element) is ABSENT
    assert resolve_operand({"pointer": "@/id"}, CTX) is ABSENT  # no element bound at the root


def test_literal_and_reference_set_operands() -> None:
    ctx = context({}, reference_sets={"kinds": {"keys": ["k"], "members": [{"k": "a"}]}})
    assert resolve_operand({"literal": None}, ctx) is None
    assert resolve_operand({"referenceSet": "kinds"}, ctx) == [{"k": "a"}]
    assert resolve_operand({"referenceSet": "undeclared"}, ctx) is ABSENT


def test_pointer_grammar() -> None:
    assert decode_tokens("") == ()
    assert decode_tokens("/a~1b/~01") == ("a/b", "~1")
    assert walk({"": 1}, ("",)) == 1
    assert parse_evidence_pointer("/interactions/s/response-status/x") is None  # scalar channel, no tail
    assert parse_evidence_pointer("/interactions/s/call-inputs") is None
    assert parse_evidence_pointer("/elsewhere/s/response-body") is None
    parsed = parse_evidence_pointer("/interactions/s/artifact/report/a~1b")
    assert parsed is not None and (parsed.channel, parsed.sub, parsed.tokens) == (
        "artifact",
        "report",
        ("a/b",),
    )
