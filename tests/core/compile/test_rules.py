"""Unit tests for the rules inside the checks: regex subset, secret patterns, ECMAScript strings,
reachability against root collections, and the scripting-bound limits."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from evalquality_core.compile import compile_contract
from evalquality_core.compile.excluded_content import EXCLUDED_VALUE_PATTERNS, excluded_category
from evalquality_core.compile.expressions import regex_defect
from evalquality_core.compile.plan_index import PlanIndex
from evalquality_core.compile.pointers import parse_interaction_pointer
from evalquality_core.compile.reachability import pointer_reason
from evalquality_core.compile.rubrics import REASONING_PROSE_RE
from evalquality_core.compile.strings import es_trim, is_blank, join_and, utf16_sorted
from evalquality_core.faults import StructuralFailure
from tests.core.compile.cases import API_BASE, CLI_BASE, load, step

_UNANCHORED = "is not anchored over the whole expression"


@pytest.mark.parametrize(
    ("pattern", "defect"),
    [
        ("^abc$", None),
        ("^(a|b)c$", None),
        ("^[a|b]$", None),
        ("^a\\$b$", None),
        ("^(?<word>a+)$", None),
        ("^$", None),
        ("^abc\\\\$", None),
        ("abc$", _UNANCHORED),
        ("^abc", _UNANCHORED),
        ("^abc\\$", _UNANCHORED),
        ("^a|b$", _UNANCHORED),
        ("^(a)\\1$", "carries a backreference"),
        ("^(?<x>a)\\k<x>$", "carries a backreference"),
        ("^[1-2\\1]$", "carries a backreference"),  # searched in the raw text, as the reference does
        ("^(?<=a)b$", "carries a lookbehind"),
        ("^(?<!a)b$", "carries a lookbehind"),
        ("^(a$", "is not a syntactically valid ECMA-262 pattern"),
    ],
)
def test_regex_subset(pattern: str, defect: str | None) -> None:
    assert regex_defect(pattern) == defect


@pytest.mark.parametrize("pattern", EXCLUDED_VALUE_PATTERNS, ids=lambda p: p.category)
def test_every_secret_pattern_fires_on_its_sample(pattern) -> None:  # type: ignore[no-untyped-def]
    assert pattern.regex.search(pattern.fires)
    assert excluded_category(pattern.fires) == pattern.category


@pytest.mark.parametrize(
    "text",
    [
        "sha256:7ca80def8afa456f9afa171dbdbe7be9c7c9c9b799cf7bedfa5f6a0db71cd0a9",
        "task-runner-abcdefghijklmnopqrstuvwxyz",
        "An Authorization header carrying a bearer token",
        "2027-01-01T00:00:00Z",
        "call at most 1234 times",
    ],
)
def test_ordinary_values_are_not_secrets(text: str) -> None:
    assert excluded_category(text) is None


@pytest.mark.parametrize(
    "text",
    ["chain of thought", "Chains-of-thoughts", "train\u2011of\u2011thought", "thought process", "thought-processing",
     "thinking processes", "inner monologue", "Internal  monologues", "self-explanation", "its reasoning", "Rationales"],
)
def test_reasoning_prose_wording(text: str) -> None:
    assert REASONING_PROSE_RE.search(text)


@pytest.mark.parametrize("text", ["reasonable output", "thoughtful", "chain of custody", "rational number"])
def test_reasoning_prose_is_word_bounded(text: str) -> None:
    assert REASONING_PROSE_RE.search(text) is None


def test_es_trim_differs_from_python_strip() -> None:
    assert es_trim("\ufeff x \u00a0") == "x"
    assert es_trim("\x1c x \x85") == "\x1c x \x85"  # Python's strip() would remove these
    assert is_blank("\u200b\u200d \t")
    assert not is_blank("\u200bx")


def test_utf16_order_and_join_and() -> None:
    # Code-point order puts U+E000 first; UTF-16 order puts U+1F600 (lead unit 0xD83D) first.
    assert utf16_sorted(["\ue000", "\U0001f600"]) == ["\U0001f600", "\ue000"]
    assert join_and(["a"]) == "a"
    assert join_and(["a", "b"]) == "a and b"
    assert join_and(["a", "b", "c"]) == "a, b, and c"


def test_pointer_parsing_decodes_tokens() -> None:
    target = parse_interaction_pointer("/interactions/s-1/response-body/a~1b/c~0d/~01")
    assert target is not None and target.tail == ("a/b", "c~d", "~1")
    assert parse_interaction_pointer("/interactions/s/response-status/x") is None
    assert parse_interaction_pointer("/interactions/s/call-inputs/cookie/x") is None
    empty = parse_interaction_pointer("/interactions/s/response-body/")
    assert empty is not None and empty.tail == ("",)


def _with_root_collection(mode: str, bound: int) -> dict:
    contract = load(CLI_BASE)
    descriptor = contract["permittedInterfaces"][0]["operations"][0]["responseDescriptor"]
    cardinality = {"mode": mode, "count": bound} if mode == "exact" else {"mode": mode, "max": bound}
    descriptor["collectionLocations"] = [{"pointer": "", "expectedCardinality": cardinality, "referenceSet": None}]
    return contract


@pytest.mark.parametrize("mode", ["exact", "at-most", "page-bounded"])
def test_root_collection_index_bound(mode: str, conformance: Path) -> None:
    index = PlanIndex(_with_root_collection(mode, 3))
    assert pointer_reason("/interactions/frontend-case/stdout/2", index) is None
    assert pointer_reason("/interactions/frontend-case/stdout/3", index) is not None


def test_reachability_table(conformance: Path) -> None:
    index = PlanIndex(load(API_BASE))
    reachable = [
        "/interactions/create/response-body",
        "/interactions/create/response-headers/x-anything",
        "/interactions/create/response-status",
        "/interactions/create/exit-code",
        "/interactions/create/call-inputs/header",
        "/interactions/create/call-inputs/stdin",
        "/interactions/list/response-body/items/0/id",
        "/interactions/create/stdout",
    ]
    unreachable = [
        "/interactions/ghost/response-body",
        "/interactions/create/response-body/missing",
        "/interactions/create/response-body/ok/deeper",
        "/interactions/create/call-inputs/stdin/x",
        "/interactions/create/call-inputs/body/other",
        "/interactions/create/stdout/field",
    ]
    assert [p for p in reachable if pointer_reason(p, index) is not None] == []
    assert [p for p in unreachable if pointer_reason(p, index) is None] == []


def test_duplicate_step_ids_resolve_as_absent(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["interactionPlan"].append(copy.deepcopy(step(contract, "list")))
    assert pointer_reason("/interactions/list/response-body/items", PlanIndex(contract)) is not None


def test_two_pairs_per_anchor_is_within_the_bound(conformance: Path) -> None:
    contract = load(API_BASE)
    step(contract, "malformed-create")["after"] = "malformed-list"
    compile_contract(contract)  # create anchors list, malformed-list anchors malformed-create: fine


def test_five_two_step_components_exceed_the_bound(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["interactionPlan"] = []
    for n in range(5):
        contract["interactionPlan"].append(
            {"stepId": f"a-{n}", "operationId": "list-things", "after": None, "cardinality": "any",
             "inputBinding": {"path": None, "query": None, "header": None, "body": None}}
        )
        contract["interactionPlan"].append(
            {"stepId": f"b-{n}", "operationId": "list-things", "after": f"a-{n}", "cardinality": "any",
             "inputBinding": {"path": None, "query": None, "header": None, "body": None}}
        )
    from evalquality_core.compile.temporal import check_scripting_bound

    with pytest.raises(StructuralFailure) as caught:
        check_scripting_bound(contract)
    assert "5 mutually disjoint two-step pairs" in caught.value.detail
    contract["interactionPlan"] = contract["interactionPlan"][:8]
    check_scripting_bound(contract)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("\u00e9GB29NWBK60161331926819", "account identifiers"),  # \b is ASCII-based, as in JavaScript
        ("key: -----BEGIN EC PRIVATE KEY-----", "credentials"),
        ("token ghp_abcdefghijklmnopqrstuvwx", "tokens"),
        ("x AKIAABCDEFGHIJKLMNOP", "tokens"),
        ("ssn 123-45-6789", "account identifiers"),
    ],
)
def test_secret_shapes_found_by_the_contract_walk(text: str, category: str, conformance: Path) -> None:
    contract = load(API_BASE)
    contract["interactionPlan"][1]["inputBinding"]["query"]["limit"] = {"literal": {"note": [1, text]}}
    with pytest.raises(StructuralFailure) as caught:
        compile_contract(contract, strict_inputs=False)
    assert caught.value.code == "excluded-content-in-declaration"
    assert caught.value.artifact_path == "EvalContract.interactionPlan[1].inputBinding.query.limit.literal.note[1]"
    assert category in caught.value.detail and text not in caught.value.detail


def test_bare_bound_element_is_the_collection_itself() -> None:
    from evalquality_core.compile.check_tree import substitute_bound

    quantifier = {"op": "for-all", "collection": {"pointer": "/interactions/s/stdout/items"}}
    assert substitute_bound("@/", (quantifier,)) == "/interactions/s/stdout/items"
    assert substitute_bound("@/a~1b", (quantifier,)) == "/interactions/s/stdout/items/a~1b"
    assert substitute_bound("@/x", ()) is None
