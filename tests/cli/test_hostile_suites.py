"""A suite is hostile input (issue 33): ``eval-quality suite ...`` run as a child process on suites in a temp
folder that escape through a linked ``fixtures/``, a ``probes-from`` or ``system-from`` that leaves the suites
folder, a ``[service]`` command that asks ``str.format`` to index or read attributes, documents nested 100k
deep, and a 16 MB ``suite.toml``. Each is one line naming the file and key, exit 2, no traceback; the big
file is parsed once per run, counted by an instrumented child process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.canonical import MAX_NESTING_DEPTH

PROJECT = Path(__file__).resolve().parents[2]
EQ = [sys.executable, "-m", "evalquality_core"]
DEEP = 100_000


def eq(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``eval-quality <args>`` as a child process in ``cwd``."""
    return subprocess.run([*EQ, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_line(proc: subprocess.CompletedProcess[str], code: int, *names: str) -> str:
    """Exactly one stderr line, the exit code, no traceback, and every name in the line."""
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == code, (proc.returncode, proc.stderr[-3000:])
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def suites(tmp_path: Path, *names: str) -> Path:
    """``<tmp>/corpus/suites`` holding copies of the corpus suites ``names`` (and the corpus scoring policy)."""
    root = tmp_path / "corpus" / "suites"
    for name in names:
        shutil.copytree(PROJECT / "corpus" / "suites" / name, root / name)
    shutil.copy(PROJECT / "corpus" / "scoring-policy.json", root.parent / "scoring-policy.json")
    return root


def set_key(settings: Path, line: str) -> None:
    """Put ``line`` (a top-level ``key = value``) into a suite.toml, before its first table."""
    text = settings.read_text()
    head, sep, tail = text.partition("\n[")
    settings.write_text(head + "\n" + line + "\n" + sep + tail)


# ------------------------------------------------------------------ 1. staged folders that are links


def test_a_fixtures_folder_that_is_a_symlink_out_of_the_suite_is_refused(tmp_path: Path) -> None:
    root = suites(tmp_path, "notes")
    suite = root / "notes"
    # Outside the suite: a copy of its fixtures plus a host secret; fixtures/ becomes a link to it.
    outside = tmp_path / "host"
    shutil.copytree(suite / "fixtures", outside)
    (outside / "three-notes" / "secret.txt").write_text("host secret\n")
    shutil.rmtree(suite / "fixtures")
    (suite / "fixtures").symlink_to(outside, target_is_directory=True)
    for command in (("suite", "generate", "--check"), ("suite", "trials", "--probe", "P-001")):
        line = one_line(eq(*command, "notes", cwd=root), 2, "notes/fixtures: a symlink")
        assert line.startswith(f"eval-quality: suite {command[1]}: "), line


def test_a_system_from_sibling_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    root = suites(tmp_path, "notes")
    # "borrower" is notes without a system/ of its own, borrowing "lender"'s: a link to a faithful copy of
    # notes outside the suites folder, so only the link itself can be refused.
    shutil.copytree(root / "notes", tmp_path / "elsewhere")
    (root / "lender").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    shutil.move(root / "notes", root / "borrower")
    shutil.rmtree(root / "borrower" / "system")
    set_key(root / "borrower" / "suite.toml", 'system-from = "lender"')
    one_line(eq("suite", "trials", "--probe", "P-001", "--trials", "1", "borrower", cwd=root), 2,
             "borrower/suite.toml: system-from = 'lender': lender is a symlink")


# ------------------------------------------------------------------ 2. probes-from stays among the siblings


@pytest.mark.parametrize("where", ["../../elsewhere", "ABSOLUTE", "notes/../../../elsewhere"])
def test_probes_from_naming_a_path_out_of_the_suites_folder_is_refused(tmp_path: Path, where: str) -> None:
    root = suites(tmp_path, "notes", "notes-weak")
    # What it points at is a faithful copy of notes, so only the confinement can refuse it.
    shutil.copytree(root / "notes", tmp_path / "elsewhere")
    where = str(tmp_path / "elsewhere") if where == "ABSOLUTE" else where
    settings = root / "notes-weak" / "suite.toml"
    settings.write_text(settings.read_text().replace('probes-from = "notes"', f"probes-from = {json.dumps(where)}"))
    one_line(eq("suite", "generate", "--check", "notes-weak", cwd=root), 2, "notes-weak/suite.toml: ",
             "probes-from must be the name of a sibling suite folder", where)


def test_probes_from_naming_a_symlinked_sibling_is_refused(tmp_path: Path) -> None:
    root = suites(tmp_path, "notes", "notes-weak")
    shutil.copytree(root / "notes", tmp_path / "elsewhere")
    (root / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    settings = root / "notes-weak" / "suite.toml"
    settings.write_text(settings.read_text().replace('probes-from = "notes"', 'probes-from = "linked"'))
    one_line(eq("suite", "generate", "--check", "notes-weak", cwd=root), 2,
             "notes-weak/suite.toml: probes-from = 'linked': linked is a symlink")


# ------------------------------------------------------------------ 3. the [service] command's templates


@pytest.mark.parametrize("part", ["{python[999]}", "{python.__class__}", "{port!r}", "{port:>9}", "{python", "x}"])
def test_a_service_command_field_that_is_not_a_plain_name_is_refused_when_the_registry_is_read(
    tmp_path: Path, part: str
) -> None:
    root = suites(tmp_path, "notes-api")
    targets = root / "notes-api" / "targets.toml"
    text = targets.read_text()
    assert 'command = ["{python}",' in text
    targets.write_text(text.replace('command = ["{python}",', f"command = [{json.dumps(part)},", 1))
    one_line(eq("suite", "generate", "--check", "notes-api", cwd=root), 2, "notes-api/targets.toml", "[service] command[0]",
             "is not a plain {name} placeholder")


def test_a_service_placeholder_nobody_fills_is_refused_before_any_probe_runs(tmp_path: Path) -> None:
    """The command's plain fields join the registry's placeholders: one no value is given for is named
    when the registry becomes a policy, before a service is started for any probe (not per probe)."""
    root = suites(tmp_path, "notes-api")
    targets = root / "notes-api" / "targets.toml"
    targets.write_text(targets.read_text().replace('"--port", "{port}"', '"--port", "{port}", "{nosuch}"', 1))
    line = one_line(eq("suite", "generate", "--check", "notes-api", cwd=root), 2, "notes-api/targets.toml",
                    "no value given for placeholder(s) {nosuch}")
    assert "P-0" not in line, line  # no probe was started


# ------------------------------------------------------------------ 4. nesting depth


def _deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


#: What each deep file holds (built in the test: a 200 kB parameter would be the test's id, and pytest puts
#: the id in the environment of every child process).
DEEP_FILES = {
    "contract.json": lambda: _deep_json(DEEP),
    "evaluator.json": lambda: '{"about": ' + _deep_json(DEEP) + ', "baselineSteps": [], "choices": {}}',
    "probes/P-001.json": lambda: _deep_json(DEEP),
    "suite.toml": lambda: 'system-id = "notes-cli"\nx = ' + _deep_json(DEEP) + '\n[fixtures]\nthree-notes = "."\n',
    "suite.toml#inline-tables": lambda: (
        'system-id = "notes-cli"\nx = ' + "{a = " * DEEP + "1" + "}" * DEEP + '\n[fixtures]\nthree-notes = "."\n'
    ),
    "targets.toml": lambda: "x = " + _deep_json(DEEP) + "\n",
}


@pytest.mark.parametrize("case", sorted(DEEP_FILES))
def test_a_suite_file_nested_100k_deep_is_one_line_before_it_is_parsed(tmp_path: Path, case: str) -> None:
    root = suites(tmp_path, "notes")
    name = case.split("#")[0]
    path = root / "notes" / name
    path.write_text(DEEP_FILES[case]())
    line = one_line(eq("suite", "generate", "--check", "notes", cwd=root), 2, f"notes/{name}")
    assert f"nests deeper than {MAX_NESTING_DEPTH} levels" in line, line


def test_the_nesting_bound_is_1024_levels_counting_the_document_itself(tmp_path: Path) -> None:
    """evaluator.json's ``about`` is free-form and the object itself is level 1: ``about`` may hold 1023
    more levels (the suite still generates), and one more is refused by name. Only structure counts:
    brackets in a JSON string or a TOML comment (thousands of them here) are not nesting."""
    for levels, refused in ((MAX_NESTING_DEPTH, False), (MAX_NESTING_DEPTH + 1, True)):
        root = suites(tmp_path / str(levels), "notes")
        path = root / "notes" / "evaluator.json"
        settings = json.loads(path.read_text())
        text = json.dumps({**settings, "about": ["[{" * 5000, "HERE"]}).replace('"HERE"', _deep_json(levels - 2))
        path.write_text(text)
        toml = root / "notes" / "suite.toml"
        toml.write_text(toml.read_text() + "# " + "[{" * 5000 + "\n")
        assert json.loads(text)["choices"] == settings["choices"]
        proc = eq("suite", "generate", "--check", "notes", cwd=root)
        if refused:
            one_line(proc, 2, f"notes/evaluator.json: nests deeper than {MAX_NESTING_DEPTH} levels")
        else:
            assert proc.returncode == 0 and "file(s) up to date" in proc.stdout, proc.stderr[-3000:]


# ------------------------------------------------------------------ 5. a big suite.toml is parsed once per run

#: Runs a module as ``python -m`` would, counting ``tomllib.loads`` calls on text holding the marker.
COUNTING = """
import os, runpy, sys, tomllib
calls = 0
parse = tomllib.loads
def counted(text, *args, **kwargs):
    global calls
    if {marker!r} in text:
        calls += 1
    return parse(text, *args, **kwargs)
tomllib.loads = counted
module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
finally:
    with open({report!r}, "w") as report:
        report.write(str(calls))
"""


def test_a_16_mb_suite_toml_is_parsed_once_by_suite_generate_check(tmp_path: Path) -> None:
    """Counted structurally, not timed: the same CLI in a child process whose ``tomllib.loads`` counts the
    calls that parse this suite.toml (it holds a marker no other file does). Every step, probe and trial
    asks for the settings; only the first parses."""
    root = suites(tmp_path, "notes")
    settings = root / "notes" / "suite.toml"
    marker = "# marker-of-the-big-suite-toml\n"
    settings.write_text(settings.read_text() + marker + ("# " + "x" * 1022 + "\n") * (16 * 1024))
    assert settings.stat().st_size > 16 * 1024 * 1024
    report = tmp_path / "parses.txt"
    driver = tmp_path / "counting.py"
    driver.write_text(COUNTING.format(marker=marker, report=str(report)))
    proc = subprocess.run([sys.executable, str(driver), "evalquality_core", "suite", "generate", "--check", "notes"],
                          cwd=root, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(PROJECT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "file(s) up to date" in proc.stdout
    assert report.read_text() == "1"
