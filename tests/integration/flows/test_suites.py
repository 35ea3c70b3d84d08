"""Loading suites: the corpus layout, staged digests per mutation, and a broken suite reported, not raised."""

from __future__ import annotations

from tasks.suites import find_suites, load_suites
from tests.fixtures.skill_suite import build_skill_suite


def test_a_built_suite_loads_with_one_staged_digest_per_mutation(conformance, tmp_path):
    suite_dir, _ = build_skill_suite(conformance, tmp_path, probes=2)
    suites, problems = load_suites(tmp_path)
    assert problems == [] and [suite.name for suite in suites] == ["skill"]
    suite = suites[0]
    assert suite.probe_ids() == ["P-001", "P-002"]
    assert set(suite.staged_digests) == {None, "insert-1", "insert-2"}
    assert len(set(suite.staged_digests.values())) == 3
    probe = suite.probes[1]
    assert suite.mutation_of_leg(probe, "skill-defect-leg-2") == "insert-2"
    assert suite.mutation_of_leg(probe, "witness-frontend") is None
    assert find_suites(suite_dir) == [suite_dir]  # a suite folder given directly


def test_a_broken_registry_is_a_problem_naming_the_file(conformance, tmp_path):
    suite_dir, _ = build_skill_suite(conformance, tmp_path)
    (suite_dir / "targets.toml").write_text('[[target]]\ninterface_id = "skill-runner"\n')
    suites, problems = load_suites(tmp_path)
    assert suites == [] and len(problems) == 1
    assert "targets.toml" in problems[0].message and "lacks required key" in problems[0].message


def test_a_probe_that_is_not_json_is_a_problem(conformance, tmp_path):
    suite_dir, _ = build_skill_suite(conformance, tmp_path)
    (suite_dir / "probes" / "P-001.json").write_text("{not json")
    _, problems = load_suites(tmp_path)
    assert len(problems) == 1 and "P-001.json" in problems[0].message


def test_the_policy_comes_from_the_suite_else_beside_the_suites_folder(tmp_path):
    """A suite's own scoring-policy.json wins; the corpus-wide file beside the suites folder is the
    fallback; no policy anywhere is one sentence saying where to put it."""
    import json
    import shutil
    from pathlib import Path

    import pytest

    from tasks.suite_run import policy_of

    project = Path(__file__).resolve().parents[3]
    suites = tmp_path / "suites"
    shutil.copytree(project / "corpus" / "suites" / "notes", suites / "notes", ignore=shutil.ignore_patterns("trials", "evidence"))
    suite = type("S", (), {"directory": suites / "notes"})()
    with pytest.raises(ValueError, match="put one at .*notes/scoring-policy.json"):
        policy_of(suite, suites)
    corpus_policy = json.loads((project / "corpus" / "scoring-policy.json").read_text())
    (tmp_path / "scoring-policy.json").write_text(json.dumps(corpus_policy))
    assert policy_of(suite, suites).policy_id == "corpus-policy"
    (suites / "notes" / "scoring-policy.json").write_text(json.dumps({**corpus_policy, "policyId": "suite-policy"}))
    assert policy_of(suite, suites).policy_id == "suite-policy"
