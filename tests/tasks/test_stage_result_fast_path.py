"""The byte-level fast path of a stored stage result (``tasks/caching.py`` ``_fast_value``) rebuilds exactly
what the strict path rebuilds, and leaves to the strict path everything it is not sure of."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalquality_core.canonical.json import MAX_SAFE_INTEGER
from evalquality_core.preflight.plan import PreflightPlan
from tasks.caching import _MISSING, StageResultRejected, VerifiedJsonSerializer, _fast_value, decode_result

SERIALIZER = VerifiedJsonSerializer()

_scalars = (
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer() or abs(f) <= MAX_SAFE_INTEGER)
    | st.text()
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


def _strict(blob: bytes) -> object:
    """What the strict path alone rebuilds (the fast path disabled by a layout it does not take)."""
    envelope = json.loads(blob)
    return SERIALIZER._verify(json.dumps(envelope, indent=1).encode("utf-8"))


@settings(max_examples=150, deadline=None)
@given(_values)
def test_the_fast_path_rebuilds_what_the_strict_path_rebuilds(value: object) -> None:
    blob = SERIALIZER.dumps(value)
    assert _fast_value(blob)[0] is not _MISSING  # what dumps writes always takes the fast path
    assert SERIALIZER._verify(blob) == _strict(blob) == value


def test_a_plan_round_trips_through_the_fast_path() -> None:
    plan = PreflightPlan("r-1", (), (), {"k": [1, "two"]}, {"k": ["a"]})
    rebuilt = SERIALIZER._verify(SERIALIZER.dumps(plan))
    assert isinstance(rebuilt, PreflightPlan) and rebuilt.reference_sets == {"k": [1, "two"]}
    assert SERIALIZER.dumps(rebuilt) == SERIALIZER.dumps(plan)


def _with_value(blob: bytes, value: bytes, *, rehash: bool) -> bytes:
    """``blob`` with its value bytes replaced (and the recorded digest recomputed over them, or not)."""
    head = blob[: blob.index(b',"value":') + len(b',"value":')]
    if rehash:
        head = head.replace(head[11:82], b"sha256:" + hashlib.sha256(value).hexdigest().encode())
    return head + value + b"}"


def test_altered_value_bytes_leave_the_fast_path_and_are_refused() -> None:
    blob = SERIALIZER.dumps({"verdict": "passed"})
    altered = _with_value(blob, b'{"$map":{"verdict":"failed"}}', rehash=False)
    assert _fast_value(altered)[0] is _MISSING
    with pytest.raises(StageResultRejected, match="digest does not match"):
        SERIALIZER._verify(altered)


@pytest.mark.parametrize("value", [b"NaN", b'{"$map":{"x":Infinity}}', b"[1e400]", b"[9007199254740993]",
                                   b'["\\ud800"]', b"[" + b"9" * 30 + b"]", b"[" * 5000 + b"]" * 5000, b'{"$map":'])
def test_what_plain_json_cannot_read_safely_goes_to_the_strict_path(value: bytes) -> None:
    blob = _with_value(SERIALIZER.dumps(1), value, rehash=True)
    assert _fast_value(blob)[0] is _MISSING
    with pytest.raises(StageResultRejected):
        SERIALIZER._verify(blob)


def test_only_our_own_classes_are_rebuilt_on_the_fast_path_too() -> None:
    blob = _with_value(SERIALIZER.dumps(1), b'{"$dataclass":"os:system","fields":{}}', rehash=True)
    assert _fast_value(blob)[0] is not _MISSING
    with pytest.raises(StageResultRejected, match="not one of ours"):
        SERIALIZER._verify(blob)
    with pytest.raises(StageResultRejected):
        decode_result({"$model": "subprocess:Popen", "wire": {}})


def _generic_jsonable(value: object) -> object:
    """The wire form by the generic checks only (dataclass, Mapping, sequence, model), no type fast path."""
    from collections.abc import Mapping
    from dataclasses import fields, is_dataclass

    from evalquality_core.evaluate.pointers import as_wire

    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _generic_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _generic_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_generic_jsonable(item) for item in value]
    return as_wire(value)


@settings(max_examples=150, deadline=None)
@given(_values)
def test_the_key_walk_by_exact_type_equals_the_generic_walk(value: object) -> None:
    from tasks.caching import _jsonable

    plan = PreflightPlan("r", (), (), {"k": [value]}, {"k": ["a"]})
    assert _jsonable(value) == _generic_jsonable(value)
    assert _jsonable(plan) == _generic_jsonable(plan)


def test_every_corpus_plan_walks_the_same_both_ways() -> None:
    from pathlib import Path

    from evalquality_core.preflight.plan import plan_preflight
    from tasks.caching import _jsonable
    from tasks.contract import compile_task
    from tasks.suites import find_suites, load_suite

    suites = find_suites(Path(__file__).resolve().parents[2] / "corpus" / "suites")
    assert len(suites) >= 5
    for directory in suites:
        suite = load_suite(directory)
        plan = plan_preflight(compile_task.fn(suite.contract), [dict(p) for p in suite.probes], "r")
        assert plan.legs and _jsonable(plan) == _generic_jsonable(plan)


def test_plain_json_mappings_are_stored_as_is_and_the_rest_stays_tagged() -> None:
    request = {"kind": "cli", "channels": {"argument": {"a": "1"}, "stdin": {"kind": "absent"}}, "n": [1, 2.5, None]}
    value = {"plain": request, "tupled": {"t": (1, 2)}}
    encoded = json.loads(SERIALIZER.dumps(value))["value"]
    assert encoded["$map"]["plain"] == {"$json": request}  # read back without a walk
    assert encoded["$map"]["tupled"] == {"$map": {"t": {"$tuple": [1, 2]}}}  # a tuple must come back a tuple
    rebuilt = SERIALIZER._verify(SERIALIZER.dumps(value))
    assert rebuilt == value and type(rebuilt["tupled"]["t"]) is tuple


@pytest.mark.parametrize("payload", [b'{"$json":[1]}', b'{"$json":"x"}', b'{"$json":{},"extra":1}'])
def test_a_json_tag_around_anything_but_one_object_is_refused(payload: bytes) -> None:
    blob = _with_value(SERIALIZER.dumps({"x": 1}), payload, rehash=True)
    with pytest.raises(StageResultRejected, match="tagged value"):
        SERIALIZER._verify(blob)
