"""Property tests: canonical JSON is a fixed point, digests ignore spelling, and compile never crashes.

``compile_contract`` must answer every JSON value with a contract or one of the two faults; both
arbitrary JSON and mutations of the reference's own contracts (which reach the deep checks) are tried.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalquality_core.canonical import MAX_SAFE_INTEGER, canonical_bytes, digest_artifact, digest_json
from evalquality_core.compile import compile_contract
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.seal import seal_contract
from tests.core.compile.cases import CONFORMANCE


def _in_domain(number: float) -> bool:
    return not (number.is_integer() and abs(number) > MAX_SAFE_INTEGER)


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False).filter(_in_domain)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)


# No deadlines: the host is shared and timings vary; these tests are about answers, not speed.
@settings(deadline=None)
@given(json_values)
def test_canonical_bytes_is_a_fixed_point(value: Any) -> None:
    once = canonical_bytes(value)
    assert canonical_bytes(json.loads(once)) == once


def _spell(value: Any, rng: random.Random) -> Any:
    """The same value with object members in a random order (recursively)."""
    if isinstance(value, dict):
        items = [(key, _spell(member, rng)) for key, member in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [_spell(member, rng) for member in value]
    return value


@settings(deadline=None)
@given(json_values, st.randoms(use_true_random=False), st.sampled_from([None, 0, 1, 4]), st.booleans())
def test_digest_json_ignores_key_order_and_whitespace(value: Any, rng: random.Random, indent: int | None, ascii_: bool) -> None:
    text = json.dumps(_spell(value, rng), indent=indent, ensure_ascii=ascii_, separators=None if indent is not None else (" , ", " : "))
    assert digest_json(text) == digest_json(text.encode("utf-8")) == digest_artifact(value)
    assert digest_json("\n\t " + text + " \r\n") == digest_artifact(value)


def _compile_answers(value: Any) -> None:
    try:
        compile_contract(value)
    except (StructuralFailure, RuntimeFault):
        return
    try:
        seal_contract(value)
    except (StructuralFailure, RuntimeFault):
        return


contractish = st.fixed_dictionaries(
    {"schemaVersion": st.sampled_from([4, 5])},
    optional={
        key: json_values
        for key in ("parentDigest", "revisionCount", "contractId", "behaviors", "oracles", "interactionPlan", "testData")
    },
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values | contractish)
def test_compile_on_arbitrary_json_raises_only_faults(value: Any) -> None:
    _compile_answers(value)


def _contracts() -> list[Any]:
    paths = sorted((CONFORMANCE / "corpus-dev" / "contracts").glob("*.json"))
    paths += [CONFORMANCE / "chains" / p for p in ("skill-defect/eval-contract.json", "tutorial-workflow/eval-contract.json")]
    return [json.loads(Path(p).read_text()) for p in paths if p.is_file()]


CONTRACTS = _contracts()


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, member in value.items():
            found += _nodes(member, (*path, key))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            found += _nodes(member, (*path, index))
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for member in value.values() for s in _strings(member)]
    if isinstance(value, list):
        return [s for member in value for s in _strings(member)]
    return []


@st.composite
def mutated_contracts(draw: st.DrawFn) -> Any:
    """A real contract with a few random edits that keep most of it plausible."""
    contract = json.loads(json.dumps(draw(st.sampled_from(CONTRACTS))))
    vocabulary = _strings(contract)
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _nodes(contract) if p]
        path = draw(st.sampled_from(paths))
        parent = contract
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        edit = draw(st.sampled_from(["delete", "null", "value", "word", "duplicate", "empty", "number"]))
        if edit == "delete":
            del parent[key]
        elif edit == "null":
            parent[key] = None
        elif edit == "value":
            parent[key] = draw(json_values)
        elif edit == "word":
            parent[key] = draw(st.sampled_from(vocabulary))
        elif edit == "duplicate" and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[key])))
        elif edit == "empty":
            parent[key] = [] if isinstance(parent[key], list) else {}
        elif edit == "number":
            parent[key] = draw(st.integers(-3, 50))
    return contract


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_contracts())
def test_compile_on_mutated_conformance_contracts_raises_only_faults(contract: Any) -> None:
    _compile_answers(contract)


def test_mutation_source_is_the_conformance_data() -> None:
    assert len(CONTRACTS) >= 17 and math.isfinite(len(CONTRACTS))


ascii_keyed = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(alphabet=st.characters(max_codepoint=127), max_size=8), children, max_size=4),
    max_leaves=25,
)


@settings(deadline=None)
@given(ascii_keyed | json_values)
def test_canonical_bytes_equals_the_rfc8785_reference_text(value: Any) -> None:
    # canonical_bytes takes a fast path for float-free, ASCII-keyed values; it must never differ.
    import rfc8785

    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_canonical_bytes_fast_path_edge_strings() -> None:
    import rfc8785

    value = {"\u007f": "\x00\x1f\b\f\n\r\t\"\\/\u2028\u2029\ufeff\U0001f600é", "a": [True, False, None, -0, 9007199254740991]}
    assert canonical_bytes(value) == rfc8785.dumps(value)
