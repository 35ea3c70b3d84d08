"""Every CLI path that stages a system links its dependency layers from the home's store and accepts npm
``.bin`` links confined to their layer (issue 34): ``suite check``, ``suite generate`` (the mutation
cycle), ``mutants generate``. A link leaving its layer is refused on one line by each. Each command is
the real CLI in a child process, its store a temp ``EVALQUALITY_HOME``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.corpus.test_layers import ORIGINAL, layered_suite


def eq(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["eval-quality", *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "EVALQUALITY_HOME": str(home)})


def digests(home: Path) -> list[str]:
    store = home / "layers"
    return sorted(path.name for path in store.iterdir()) if store.is_dir() else []


def test_suite_generate_and_check_run_with_npm_bin_links_staged_from_the_store(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    home = tmp_path / "home"
    generated = eq(home, suite.parent, "suite", "generate", "notes", "--jobs", "2")
    assert generated.returncode == 0, generated.stderr
    assert "notes P-001: qualification admits it" in generated.stdout + generated.stderr
    checked = eq(home, suite.parent, "suite", "check", "notes")
    lines = checked.stdout.splitlines()
    for step in ("staging", "mutations", "generated"):
        assert any(line.startswith(f"ok   {step}:") for line in lines), checked.stdout + checked.stderr
    # Every leg of both commands linked the one stored layer: one digest folder, one generation.
    [layer] = digests(home)
    assert len(list((home / "layers" / layer).glob("gen-*"))) == 1
    assert (suite / "system" / "node_modules" / ".bin" / "tool").is_symlink()


def test_suite_check_stages_a_mutation_inside_a_layer_as_a_layer_of_its_own(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    home = tmp_path / "home"
    path = suite / "mutations" / "store-write-deletion.json"
    mutation = json.loads(path.read_text())
    path.write_text(json.dumps({**mutation, "target": "system/node_modules/dep/index.js",
                                "find": "'original'", "replace": "'mutated'"}))
    checked = eq(home, suite.parent, "suite", "check", "notes")
    assert any(line.startswith("ok   mutations:") for line in checked.stdout.splitlines()), checked.stdout + checked.stderr
    # The clean layer and the mutant's: two digests; the clean one as installed, the suite untouched.
    assert len(digests(home)) == 2
    contents = sorted(next((home / "layers" / name).glob("gen-*")).joinpath("node_modules", "dep", "index.js").read_text()
                      for name in digests(home))
    assert contents == sorted([ORIGINAL, "module.exports = 'mutated';\n"])
    assert (suite / "system" / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL


def test_mutants_generate_accepts_npm_bin_links_and_never_mutates_a_layer(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    (suite / "system" / "node_modules" / "dep" / "helper.py").write_text("def twice(x):\n    return x + x\n")
    done = eq(tmp_path / "home", suite.parent, "mutants", "generate", "notes", "--operators", "arithmetic,comparison")
    assert done.returncode == 0, done.stderr
    targets = {json.loads(path.read_text())["target"] for path in (suite / "mutants").glob("*.json")
               if path.name != "generated.json"}
    assert targets == {"system/notes.py"}, targets


def test_a_link_leaving_its_layer_is_refused_on_one_line_by_every_path(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    (suite / "system" / "node_modules" / ".bin" / "escape").symlink_to("../../../../../../etc/hostname")
    home = tmp_path / "home"
    where = "system/node_modules/.bin/escape: a symlink pointing outside its layer node_modules"
    for command in (("suite", "check", "notes"), ("suite", "generate", "notes", "--jobs", "1"),
                    ("mutants", "generate", "notes", "--operators", "arithmetic")):
        done = eq(home, suite.parent, *command)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        errors = done.stderr.strip().splitlines()
        assert len(errors) == 1 and where in errors[0] and "Traceback" not in done.stderr, (command, done.stderr)
    assert digests(home) == []  # nothing was stored from a system that cannot be staged
