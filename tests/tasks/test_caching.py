"""The stage cache policy: keyed on our input digests, namespaced by stage and code version."""

from __future__ import annotations

from types import SimpleNamespace

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
