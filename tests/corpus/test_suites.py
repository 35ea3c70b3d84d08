"""Every suite's declarations hold together: the contract compiles and seals through our CLI, the
target registry cross-checks against it both ways, fixtures are named after their content, and every
probe names a behaviour with exactly one oracle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.probe.targets import (
    cross_check_api_targets,
    cross_check_mcp_targets,
    cross_check_targets,
    parse_targets,
)
from evalquality_core.suite.load import load_mutations, suite_names
from tests.corpus.conftest import PROJECT_ROOT, SUITE_NAMES, SUITES, probe_ids, read

CLI = [sys.executable, "-m", "evalquality_core"]


def test_the_weak_suite_is_the_notes_suite_without_its_read_back_oracle() -> None:
    """notes-weak reuses notes' probes byte for byte (probes-from) and drops only O-001, the read-back."""
    strong, weak = read(SUITES / "notes" / "contract.json"), read(SUITES / "notes-weak" / "contract.json")
    assert [o["id"] for o in strong["oracles"] if o["id"] not in {w["id"] for w in weak["oracles"]}] == ["O-001"]
    assert {b["id"]: b["oracles"] for b in weak["behaviors"]}["B-001"] == []
    for probe_id in probe_ids("notes"):
        name = f"probes/{probe_id}.json"
        assert (SUITES / "notes-weak" / name).read_bytes() == (SUITES / "notes" / name).read_bytes(), name


def test_the_baselines_cover_exactly_the_suites_in_the_corpus() -> None:
    """The suite set is read from corpus/suites/; adding one changes what the tests check, and the two
    baselines must be rewritten with it deliberately (each flow's ``--update-baseline``)."""
    assert SUITE_NAMES == suite_names(SUITES) and SUITE_NAMES, "the corpus holds at least one suite"
    preflight = read(PROJECT_ROOT / "corpus" / "expected-preflight.json")["probes"]
    assert sorted({key.split("/")[0] for key in preflight}) == SUITE_NAMES, "rewrite: python -m flows.preflight --update-baseline"
    strength = read(PROJECT_ROOT / "corpus" / "expected-strength.json")
    assert sorted(strength) == SUITE_NAMES, "rewrite: python -m flows.contract_strength --update-baseline"


@pytest.mark.parametrize("suite", SUITE_NAMES)
@pytest.mark.parametrize("command", ["compile", "seal"])
def test_contract_compiles_and_seals_through_the_cli(suite: str, command: str) -> None:
    result = subprocess.run(
        [*CLI, command, "--in", str(SUITES / suite / "contract.json")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("\n") and "\n" not in result.stdout[:-1], "one canonical JSON line"


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_target_registry_cross_checks_with_the_contract(suite: str) -> None:
    registry = parse_targets((SUITES / suite / "targets.toml").read_text(encoding="utf-8"), f"{suite}/targets.toml")
    contracts = [read(SUITES / suite / "contract.json")]
    for check in (cross_check_targets, cross_check_api_targets, cross_check_mcp_targets):
        coverage = check(registry, contracts)
        assert coverage.ok, coverage.problems()
    policy = registry.to_policy({"python": sys.executable})
    for authorization in policy.authorizations:
        assert authorization.permitted_environment_keys == [], "no suite's commands need the host environment"
        assert authorization.cwd == "work", "commands run in the staged working directory, not beside the system"


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_fixture_sets_are_named_after_their_content(suite: str) -> None:
    names = [p.name for p in (SUITES / suite / "fixtures").iterdir() if p.is_dir()]
    assert names, "every suite stages at least one fixture set"
    for name in names:
        # harness.md A.7: a root naming a role tells the agent the answer.
        assert not {"clean", "seeded", "mutant", "mutated", "baseline", "defect"} & set(name.split("-")), name


#: Suites that earn their own probes: a ``probes-from`` suite (notes-weak) borrows another's on purpose,
#: with a contract too weak for them (its own test above).
OWN_PROBES = [name for name in SUITE_NAMES if "probes-from" not in (SUITES / name / "suite.toml").read_text()]


@pytest.mark.parametrize("suite", OWN_PROBES)
def test_every_probe_names_a_behaviour_with_exactly_one_oracle(suite: str) -> None:
    contract = read(SUITES / suite / "contract.json")
    oracles_of = {b["id"]: b["oracles"] for b in contract["behaviors"]}
    for probe_id in probe_ids(suite):
        probe = read(SUITES / suite / "probes" / f"{probe_id}.json")
        assert probe["probeId"] == probe_id
        assert len(oracles_of[probe["behaviorId"]]) == 1, f"{suite} {probe_id}"


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_every_non_clean_probe_has_exactly_one_mutation_and_no_clean_control_has_one(suite: str) -> None:
    mutations = load_mutations(SUITES / suite)
    for probe_id in probe_ids(suite):
        probe = read(SUITES / suite / "probes" / f"{probe_id}.json")
        assert (probe_id in mutations) == (not probe["expectedClean"]), f"{suite} {probe_id}"


def test_the_suites_carry_the_probe_mix_the_corpus_promises() -> None:
    def classes(suite: str) -> list[str]:
        return sorted(read(SUITES / suite / "probes" / f"{p}.json")["probeClass"] for p in probe_ids(suite))

    assert classes("notes") == ["defect"] * 4 + ["gameability", "zero-action"]
    assert classes("review") == ["defect"] * 6 + ["gameability", "zero-action"]
    assert classes("trace") == ["defect"] * 3 + ["zero-action"]


def test_review_fixture_plants_six_different_defect_kinds_beside_a_clean_file(tmp_path) -> None:
    """Run the real reviewer over each fixture file: six files draw one gating finding each, of six
    different rules, and one file draws none."""
    work = SUITES / "review" / "fixtures" / "checkout-service"
    rules, clean = [], []
    for test_file in sorted((work / "tests").glob("test_*.py")):
        result = subprocess.run(
            [sys.executable, str(SUITES / "review" / "system" / "review.py"), "--files", str(test_file)],
            cwd=tmp_path, capture_output=True, text=True, timeout=30,
        )
        findings = read(tmp_path / "verdict.json")["findings"]
        if not findings:
            assert result.returncode == 0
            clean.append(test_file.name)
        else:
            assert result.returncode == 1 and len(findings) == 1 and findings[0]["gating"]
            rules.append(findings[0]["rule"])
    assert len(rules) >= 6 and len(set(rules)) == len(rules)
    assert clean == ["test_cart_totals.py"]


def _public_references(node: object) -> list[dict[str, object]]:
    if isinstance(node, dict):
        own = [node] if node.get("storage") == "public" and "path" in node and "digest" in node else []
        return own + [ref for value in node.values() for ref in _public_references(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _public_references(value)]
    return []


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_every_stored_reference_is_relative_to_the_suite_folder_and_verifies(suite: str) -> None:
    """A suite can be moved or copied anywhere: every public reference its probes and trials store is a
    path relative to the suite folder, and the file there has the digest the reference declares."""
    from evalquality_core.canonical import digest_bytes
    from evalquality_core.suite.load import referenced_file

    root = SUITES / suite
    stored = sorted((root / "probes").glob("*.json")) + sorted((root / "trials").rglob("sealed-run-record.json"))
    references = [(path, ref) for path in stored for ref in _public_references(read(path))]
    assert references, "the suite stores references"
    for path, ref in references:
        target = referenced_file(root, str(ref["path"]))  # system/ may be a sibling's (system-from)
        assert not str(ref["path"]).startswith(("/", "corpus/")) and ".." not in str(ref["path"]).split("/"), (path, ref)
        assert target.is_file(), (path, ref["path"])
        assert digest_bytes(target.read_bytes()) == ref["digest"], (path, ref["path"])


def test_the_docs_explain_every_coverage_rule_with_the_corpus_example() -> None:
    """docs/reference/coverage-rules.md holds one paragraph per AD-20 rule, the same words `eval-quality explain` prints."""
    from evalquality_core.coverage.explanations import EXPLANATIONS
    from evalquality_core.coverage.rules import COVERAGE_RULES

    assert [row.rule for row in EXPLANATIONS] == [rule.id for rule in COVERAGE_RULES]
    readme = " ".join((PROJECT_ROOT / "docs" / "reference" / "coverage-rules.md").read_text(encoding="utf-8").split())
    for row in EXPLANATIONS:
        assert f"**`{row.rule}`** — {row.summary}" in readme, row.rule
        assert " ".join(row.example.split()) in readme, row.rule


def test_the_suite_init_starter_is_the_notes_suite_cut_to_one_probe_per_class() -> None:
    """``eval-quality suite init`` ships the notes suite's system, fixture, contract and evaluator choices,
    so the starter stays exactly as strong as the corpus's PASS suite (restamp both together)."""
    from evalquality_core.suite.init import STARTER

    notes = SUITES / "notes"
    for name in ("contract.json", "evaluator.json", "system/notes.py", "fixtures/three-notes/notes.json"):
        assert (STARTER / name).read_bytes() == (notes / name).read_bytes(), name
    classes = sorted(read(p)["probeClass"] for p in (STARTER / "probes").glob("P-*.json"))
    assert classes == ["defect", "gameability", "zero-action"]


@pytest.mark.parametrize(("kind", "corpus_suite", "system"), [
    ("http", "notes-api", "system/notes_api.py"), ("mcp", "notes-tools", "system/notes_tool_server.py")])
def test_each_kinds_starter_is_its_corpus_suite_cut_down(kind: str, corpus_suite: str, system: str) -> None:
    """``suite init --kind http|mcp`` ships the notes-api / notes-tools suite's system, registry, contract,
    evaluator choices and fixtures byte for byte, with a defect and a clean control (restamp both together)."""
    from evalquality_core.suite.init import starter_of

    starter, source = starter_of(kind), SUITES / corpus_suite
    fixtures = [p.relative_to(source).as_posix() for p in (source / "fixtures").rglob("*") if p.is_file()]
    shipped = [p.relative_to(starter).as_posix() for p in (starter / "fixtures").rglob("*") if p.is_file()]
    assert set(shipped) <= set(fixtures) and shipped, kind
    for name in ("contract.json", "evaluator.json", "targets.toml", "suite.toml", system, *shipped):
        assert (starter / name).read_bytes() == (source / name).read_bytes(), (kind, name)
    classes = sorted(read(p)["probeClass"] for p in (starter / "probes").glob("P-*.json"))
    assert {"defect", "zero-action"} <= set(classes), kind


def test_the_agent_starter_borrows_the_cli_starters_notes_system(tmp_path: Path) -> None:
    """The stand-in agent answers as the cli starter's notes system: ``copy_starter`` gives it that file,
    byte for byte, and the package ships no second copy."""
    from evalquality_core.suite.init import copy_starter, starter_of

    assert not (starter_of("agent") / "system" / "notes.py").exists()
    suite = copy_starter("agent", tmp_path / "agent")
    assert (suite / "system" / "notes.py").read_bytes() == (starter_of("cli") / "system" / "notes.py").read_bytes()
    assert (suite / "system" / "agent.py").is_file()
