"""The stage cache policy: keyed on our input digests, namespaced by stage and code version."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.faults import EvalQualityFault
from tasks import caching
from tasks.caching import CODE_VERSION, StageDigest, input_digest, results_dir, stage_cache


def _ctx(name: str) -> SimpleNamespace:
    return SimpleNamespace(task=SimpleNamespace(name=name))


def test_key_depends_on_digests_stage_and_version_only():
    policy = StageDigest(inputs=("contract",))
    key = policy.compute_key(_ctx("compile"), {"contract": {"a": 1}, "ignored": object()}, {})
    assert key.startswith(f"compile-{CODE_VERSION}-")
    # Key order inside an input does not matter (canonical JSON), values do.
    assert key == policy.compute_key(_ctx("compile"), {"contract": {"a": 1}}, {})
    assert key != policy.compute_key(_ctx("compile"), {"contract": {"a": 2}}, {})
    # Two stages with equal inputs never share a result (prefect.md §3 pitfall).
    assert key != policy.compute_key(_ctx("seal"), {"contract": {"a": 1}}, {})
    assert key != StageDigest(inputs=("contract",), version="other").compute_key(_ctx("compile"), {"contract": {"a": 1}}, {})


def test_input_digest_reads_dataclasses_and_lists():
    from evalquality_core.preflight.plan import PreflightPlan

    plan = PreflightPlan(run_id="r", legs=(), checks=())
    assert input_digest(plan) != input_digest(PreflightPlan(run_id="s", legs=(), checks=()))
    assert input_digest([{"b": 1}, {"a": 2}]) != input_digest([{"a": 2}, {"b": 1}])


def test_results_are_stored_under_an_absolute_home():
    settings = stage_cache("x")
    assert settings["result_storage"] == results_dir() and results_dir().is_absolute()
    assert isinstance(settings["cache_policy"], StageDigest)


_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4) | st.integers(0, 9), inner, max_size=3),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=4), _VALUES, max_size=4))
def test_a_mapping_digests_as_its_plain_json_form(value: dict) -> None:
    """A mapping digested as it is (exact plain JSON, the observations a reduce is keyed on) gets the digest
    of the plain form ``_jsonable`` makes (tuples as arrays, keys as text), whatever it holds; a value no
    digest can be made of (an unsafe integral number) is refused the same way by both."""
    try:
        expected = digest_artifact(caching._jsonable(value))
    except EvalQualityFault as refused:
        with pytest.raises(type(refused)):
            input_digest(value)
        return
    assert input_digest(value) == expected


def test_a_leg_result_is_recorded_under_lexically_resolved_storage(tmp_path) -> None:
    """spawn-leg's in-memory results name a path under our storage (resolved lexically, base once), and
    nothing is written there."""
    from tasks.preflight import spawn_leg

    storage = spawn_leg.result_storage
    assert isinstance(storage, caching.VerifiedResultStorage) and spawn_leg.persist_result is False
    assert storage._resolve_path("leg-result") == results_dir().resolve() / "leg-result"
