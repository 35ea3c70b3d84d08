"""Generated mutants (issue 18, M1): the operator catalogue, find widening, the static filter, selection,
and ``eval-quality mutants generate`` on the corpus systems."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.mutants.catalogue import OPERATOR_NAMES, UnknownOperator, parse_operator_names
from evalquality_core.mutants.edits import edit_between
from evalquality_core.mutants.filter import StaticFilter
from evalquality_core.mutants.generate import generate
from evalquality_core.mutants.operators import candidates
from evalquality_core.suite.load import load_mutations
from evalquality_core.suite.mutants import system_sources
from evalquality_core.suite.staging import stage_workspace

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "corpus" / "suites"
SYSTEM_SUITES = ["notes", "notes-api", "notes-tools", "review", "trace"]  # notes-weak shares notes' system


def _mutated(source: str, operators: list[str]) -> list[tuple[str, str, str]]:
    return [(c.operator, c.original, c.mutated) for c, _ in candidates(source, operators)]


@pytest.mark.parametrize(
    ("source", "operator", "expected"),
    [
        ("x = a + b\n", "arithmetic", [("a + b", "a - b")]),
        ("x = a // b\n", "arithmetic", [("a // b", "a / b")]),
        ("x += 1\n", "arithmetic", [("x += 1", "x -= 1")]),
        ("ok = a == b\n", "comparison", [("a == b", "a != b")]),
        ("ok = a is not b\n", "comparison", [("a is not b", "a is b")]),
        ("ok = a not in b\n", "comparison", [("a not in b", "a in b")]),
        ("ok = a and b\n", "boolean", [("a and b", "a or b")]),
        ("ok = not a\n", "boolean", [("not a", "a")]),
        ("ok = True\n", "constant", [("True", "False")]),
        ("n = 41\n", "number", [("41", "42")]),
        ("s = 'hi'\n", "string", [("'hi'", "'XXhiXX'")]),
        ("def f():\n    return 3\n", "return-value", [("return 3", "return None")]),
        ("save(store)\n", "statement-deletion", [("save(store)", "pass")]),
        ("x = compute()\n", "assignment", [("x = compute()", "x = None")]),
        ("if ready:\n    go()\n", "condition", [("if ready:", "if True:"), ("if ready:", "if False:")]),
        ("for x in xs:\n    go(x)\n", "loop", [("for x in xs:", "for x in []:")]),
        ("while x:\n    break\n", "break-continue", [("break", "continue")]),
    ],
)
def test_each_operator_proposes_its_replacement(source: str, operator: str, expected: list[tuple[str, str]]) -> None:
    found = [(original, mutated) for op, original, mutated in _mutated(source, [operator])]
    assert found == expected


def test_docstrings_and_imports_are_never_mutated() -> None:
    source = '"""Module doc."""\nimport json\n\n\ndef f():\n    """Function doc."""\n    return "value"\n'
    found = _mutated(source, list(OPERATOR_NAMES))
    assert all("doc" not in original for _, original, _ in found)
    assert all("import" not in original for _, original, _ in found)
    assert ("string", '"value"', '"XXvalueXX"') in found


def test_find_is_widened_until_it_occurs_exactly_once() -> None:
    original = "def a():\n    return 1\n\n\ndef b():\n    return 1\n"
    mutated = original.replace("def b():\n    return 1\n", "def b():\n    return None\n")
    edit = edit_between(original, mutated)
    assert original.count(edit.find) == 1
    assert original.replace(edit.find, edit.replace) == mutated
    assert edit.find.startswith("def b():")  # the repeated `return 1` line alone is ambiguous
    assert edit.last_line == 6


def test_static_filter_reports_invalid_and_duplicate() -> None:
    static = StaticFilter()
    assert static.check("m-1", "system/x.py", "x = 1\n", "x = 1\n").status == "Invalid"
    invalid = static.check("m-2", "system/x.py", "x = 1\n", "x = (1\n")
    assert invalid.status == "Invalid" and "does not compile" in invalid.reason
    assert static.check("m-3", "system/x.py", "x = 1\n", "x = 2\n") is None
    duplicate = static.check("m-4", "system/x.py", "x = 1\n", "x = 2\n")
    assert duplicate.status == "Duplicate" and "m-3" in duplicate.reason


def test_generation_reports_a_duplicate_source_and_never_keeps_it() -> None:
    # `if not False:` mutated by `condition` (test -> False) and by `boolean` (drop the not) reads the same.
    generation = generate({"system/x.py": "if not False:\n    print(1)\n"})
    duplicates = [r for r in generation.rejected if r.rejection.status == "Duplicate"]
    assert len(duplicates) == 1
    kept_texts = [m.mutated_text for m in generation.kept]
    assert len(kept_texts) == len(set(kept_texts))
    assert duplicates[0].mutant_id not in {m.mutant_id for m in generation.kept}


@pytest.mark.parametrize("suite", SYSTEM_SUITES)
def test_every_corpus_mutant_applies_once_and_compiles(suite: str) -> None:
    sources = system_sources(SUITES / suite)
    generation = generate(sources)
    lines = sum(generation.lines_of_code.values())
    # The issue measured 1,500-3,100 mutants per thousand lines on these systems.
    assert 1000 <= 1000 * generation.valid_count / lines <= 3500
    assert len({m.mutant_id for m in generation.kept}) == len(generation.kept)
    for mutant in generation.kept:
        text = sources[mutant.target]
        assert text.count(mutant.find) == 1, mutant.mutant_id
        after = text.replace(mutant.find, mutant.replace)
        assert after == mutant.mutated_text and after != text
        compile(after, mutant.target, "exec")


def test_sample_and_per_line_are_seeded_and_reproducible() -> None:
    sources = system_sources(SUITES / "notes")
    everything = generate(sources)
    first = generate(sources, sample_size=10, seed=7)
    again = generate(sources, sample_size=10, seed=7)
    other = generate(sources, sample_size=10, seed=8)
    assert [m.mutant_id for m in first.kept] == [m.mutant_id for m in again.kept]
    assert len(first.kept) == 10 and [m.mutant_id for m in first.kept] != [m.mutant_id for m in other.kept]
    assert {m.mutant_id for m in first.kept} <= {m.mutant_id for m in everything.kept}
    one_per_line = generate(sources, per_line_limit=1)
    lines = [(m.target, m.start[0]) for m in one_per_line.kept]
    assert len(lines) == len(set(lines))
    assert len(one_per_line.kept) == len({(m.target, m.start[0]) for m in everything.kept})


def test_operators_restrict_the_catalogue() -> None:
    generation = generate(system_sources(SUITES / "trace"), operators=parse_operator_names(["comparison"]))
    assert generation.kept and {m.operator for m in generation.kept} == {"comparison"}
    with pytest.raises(UnknownOperator, match="bogus"):
        parse_operator_names(["bogus"])


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalquality_core", *args], capture_output=True, text=True, timeout=120)


def test_cli_writes_mutants_the_stager_applies(tmp_path: Path) -> None:
    suite = tmp_path / "notes"
    shutil.copytree(SUITES / "notes", suite)
    done = _cli("mutants", "generate", str(suite), "--sample", "5", "--seed", "1", "--per-line", "1")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"(\d+) candidates: \1 valid, 0 Invalid, 0 Duplicate; 5 written to .*\n", done.stdout)
    files = sorted(p for p in (suite / "mutants").glob("m-*.json"))
    assert len(files) == 5
    manifest = json.loads((suite / "mutants" / "generated.json").read_text())
    assert manifest["settings"] == {"operators": list(OPERATOR_NAMES), "sample": 5, "seed": 1, "perLine": 1}
    # A generated mutation is in the suite's mutation shape: copied into mutations/, the loader reads it and
    # staging applies it to a fresh workspace, yielding exactly the file the generator rendered.
    chosen = json.loads(files[0].read_text())
    assert chosen["generated"]["by"] == "eval-quality mutants generate"
    (suite / "mutations" / "generated-one.json").write_text(json.dumps(chosen))
    mutation = load_mutations(suite)[chosen["probeId"]]
    staged = stage_workspace(suite, tmp_path / "ws", mutation)
    text = (staged.root / chosen["target"]).read_text()
    original = (suite / chosen["target"]).read_text()
    assert text == original.replace(chosen["find"], chosen["replace"]) and text != original
    ast.parse(text)
    # A smaller sample removes the generated files it no longer selects; an unmarked file stays.
    (suite / "mutants" / "mine.json").write_text("{}")
    assert _cli("mutants", "generate", str(suite), "--sample", "2").returncode == 0
    assert len(list((suite / "mutants").glob("m-*.json"))) == 2
    assert (suite / "mutants" / "mine.json").exists()


def test_cli_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    missing = _cli("mutants", "generate", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "not a suite" in missing.stderr
    bogus = _cli("mutants", "generate", str(SUITES / "notes"), "--operators", "arithmetic,bogus")
    assert bogus.returncode == 64 and "unknown operator(s) bogus" in bogus.stderr
    broken = tmp_path / "broken"
    shutil.copytree(SUITES / "trace", broken)
    (broken / "system" / "trace.py").write_text("def f(:\n")
    failed = _cli("mutants", "generate", str(broken))
    assert failed.returncode == 2 and "does not compile" in failed.stderr and "Traceback" not in failed.stderr


def test_a_mutants_staged_digest_is_what_staging_it_yields(tmp_path: Path) -> None:
    """The flow keys a mutant's legs without staging it; the key must name what the leg will really run."""
    from evalquality_core.canonical.digest import digest_composite
    from evalquality_core.suite.mutants import as_mutation, mutant_staged_digest, system_members

    suite = SUITES / "notes-api"
    generation = generate(system_sources(suite), sample_size=3, seed=5)
    clean = stage_workspace(suite, tmp_path / "clean")
    for index, mutant in enumerate(generation.kept):
        staged = stage_workspace(suite, tmp_path / f"m{index}", as_mutation(mutant, suite))
        real = digest_composite({"system": staged.system_digest, "work": staged.work_digest})
        assert mutant_staged_digest(system_members(suite), clean.work_digest, mutant) == real
        assert real != digest_composite({"system": clean.system_digest, "work": clean.work_digest})


def test_a_suite_that_borrows_its_system_generates_the_siblings_mutants() -> None:
    """notes-weak stages notes' system (system-from): its mutants are notes' mutants, ids and all."""
    from evalquality_core.suite.mutants import system_members

    weak = generate(system_sources(SUITES / "notes-weak"), sample_size=5, seed=2)
    strong = generate(system_sources(SUITES / "notes"), sample_size=5, seed=2)
    assert [m.mutant_id for m in weak.kept] == [m.mutant_id for m in strong.kept]
    assert system_members(SUITES / "notes-weak") == system_members(SUITES / "notes")
