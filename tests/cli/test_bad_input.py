"""Bad input gets one clear line and the documented exit code, and nothing is lost (non-negotiable 4).

Every row drives a command as a user would, given one broken input while every other input is valid
(the notes suite's stored trials of P-001). The first row of each command runs it as a real child
process (the console boundary: imports, the top-level handler, stdin closed); the other rows are about
what the command decides and run the same entry point in the test process (``tests/cli_in_process.py``),
which saves a child interpreter's ~0.6 s of CPU per row. The legs a ``probe`` or a corpus tool runs are
real child processes either way. Each row asserts the exit
code (preflight-adapter.md §7.4: 3 invalid, 4 structural or refused aggregation, 5 runtime fault,
64 usage; for the corpus tools harness.md A.10's 2 "could not run"), that stderr is exactly one
line in the documented shape naming what and where, and that no traceback is printed. The
``eval-quality`` rows also keep a sentinel ``--out`` file and check it is untouched afterwards; the
corpus-tool rows check the suite's stored trials and evidence are unchanged.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from corpus.tools.evaluator import main as evaluator_main
from corpus.tools.generate import main as generate_main
from evalquality_core.cli.main import main as evalquality_main
from evalquality_core.suite.load import tree_digest
from tests.adapters.command_subject import FIXTURES, request
from tests.cli_in_process import streams

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NOTES = PROJECT_ROOT / "corpus" / "suites" / "notes"
TRIALS = NOTES / "trials" / "P-001"
POLICY = PROJECT_ROOT / "corpus" / "scoring-policy.json"
SENTINEL = b"an earlier artifact that a failed run must not touch\n"


def run(argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with this interpreter as a child process (stdin closed)."""
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


#: The ``-m`` modules rows run, and their entry points (each returns its exit code).
ENTRY_POINTS: dict[str, Callable[[list[str]], int]] = {
    "evalquality_core": evalquality_main,
    "corpus.tools.generate": generate_main,
    "corpus.tools.evaluator": evaluator_main,
}


def run_row(argv: list[str], cwd: Path, *, child: bool, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m <module> ...`` (``argv`` starts with ``-m``): a child process when ``child``, else the
    module's entry point in this process, in ``cwd``, with stdin empty and the streams captured."""
    if child:
        return run(argv, cwd, timeout)
    assert argv[0] == "-m", argv
    with contextlib.chdir(cwd), streams() as (out, err):
        try:
            code = ENTRY_POINTS[argv[1]](argv[2:])
        except SystemExit as exit_:  # argparse's usage errors exit (corpus tools' ToolArgumentParser)
            code = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(argv, code, out.getvalue().decode(), err.getvalue().decode())


def assert_one_line(proc: subprocess.CompletedProcess[str], code: int, prefix: str, names: tuple[str, ...]) -> str:
    """The exit code, exactly one stderr line starting with ``prefix`` that holds every ``names``, no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.returncode == code, proc.stderr
    line = lines[0]
    assert line.startswith(prefix), line
    for name in names:
        assert name in line, (name, line)
    return line


@dataclass(frozen=True)
class Row:
    """One bad input: how to break the valid invocation, the exit code, and what the line must name."""

    case: str
    change: Callable[[Path], dict[str, Any]]
    code: int
    names: tuple[str, ...]


def write(path: Path, data: str | bytes) -> str:
    """Write ``data`` to ``path`` and return the path as a string."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return str(path)


def edited(source: Path, target: Path, **changes: Any) -> str:
    """A copy of the JSON file ``source`` at ``target`` with top-level keys set."""
    value = json.loads(source.read_text(encoding="utf-8"))
    value.update(changes)
    return write(target, json.dumps(value))


# ---------------------------------------------------------------- eval-quality score

def score_inputs() -> dict[str, Any]:
    """A valid ``score`` invocation (flag → value or list of values); it scores exit 0."""
    return {
        "record": [str(TRIALS / f"trial-{i}" / "sealed-run-record.json") for i in (1, 2, 3)],
        "contract": str(NOTES / "contract.json"),
        "probe": str(NOTES / "probes" / "P-001.json"),
        "preflight-verdict": str(TRIALS / "preflight-verdict.json"),
        "policy": str(POLICY),
        "isolation-manifest": str(TRIALS / "trial-1" / "isolation-manifest.json"),
        "evaluator-configuration": str(TRIALS / "trial-1" / "evaluator-configuration.json"),
        "corpus-digest": tree_digest(NOTES / "trials"),
    }


def flags(values: dict[str, Any]) -> list[str]:
    """``{"a": "x", "b": ["y", "z"]}`` → ``--a x --b y --b z``; a ``None`` value leaves the flag out;
    the key ``--`` gives ``-- <value>`` (a positional after the end of the flags), the key ``raw`` the
    value as one token."""
    out: list[str] = []
    for flag, value in values.items():
        for one in value if isinstance(value, list) else [value]:
            if one is not None:
                out += [one] if flag == "raw" else ["--" if flag == "--" else f"--{flag}", one]
    return out


SCORE_ROWS = [
    Row("record is malformed JSON", lambda t: {"record": [write(t / "r.json", '{"runId": ')]},
        5, ("schema-parse-failure: SealedRunRecord:", "r.json", "is not JSON")),
    Row("record has an unknown key", lambda t: {"record": [edited(TRIALS / "trial-1" / "sealed-run-record.json", t / "r.json", bogus=1)]},
        5, ("schema-parse-failure: SealedRunRecord[0].bogus:",)),
    Row("contract has a wrong schemaVersion", lambda t: {"contract": edited(NOTES / "contract.json", t / "c.json", schemaVersion=99)},
        5, ("schema-version-mismatch: EvalContract.schemaVersion:", "99")),
    Row("probe has an unknown key", lambda t: {"probe": edited(NOTES / "probes" / "P-001.json", t / "p.json", extra=True)},
        5, ("schema-parse-failure: Probe.extra:",)),
    Row("policy repeats a key", lambda t: {"policy": write(t / "pol.json", '{"schemaVersion": 2, "schemaVersion": 2}')},
        5, ("non-canonicalizable-value: ScoringPolicy:", "duplicate")),
    Row("evaluator configuration is empty", lambda t: {"evaluator-configuration": write(t / "e.json", "")},
        5, ("schema-parse-failure: EvaluatorConfiguration:", "--evaluator-configuration is not JSON: ")),
    Row("isolation manifest has a wrong schemaVersion",
        lambda t: {"isolation-manifest": edited(TRIALS / "trial-1" / "isolation-manifest.json", t / "i.json", schemaVersion=0)},
        5, ("schema-version-mismatch: IsolationManifest.schemaVersion:",)),
    Row("corpus digest is not a digest", lambda t: {"corpus-digest": "sha256:xyz"},
        5, ("schema-parse-failure: corpusDigest:", "sha256:xyz")),
    Row("pre-flight verdict is missing", lambda t: {"preflight-verdict": str(t / "absent.json")},
        64, ("usage:", "absent.json", "ENOENT")),
    Row("isolation manifest is a directory", lambda t: {"isolation-manifest": str(t)},
        64, ("usage:", "EISDIR")),
    Row("an unknown flag", lambda t: {"colour": "red"}, 64, ('usage: unknown flag "--colour" for score',)),
    Row("an unknown flag in the = form", lambda t: {"raw": "--colour=red"},
        64, ('usage: unknown flag "--colour" in "--colour=red"',)),
    Row("a positional after --", lambda t: {"--": "extra.json"},
        64, ('usage: score takes no positional argument, but got "extra.json"',)),
    Row("a flag where --out's value belongs", lambda t: {"out": "--strict"},
        64, ('usage: --out needs a value, but the next token is "--strict"', "--out=<value>")),
    Row("a required flag is missing", lambda t: {"policy": None}, 64, ("usage: score requires --policy",)),
    Row("two inputs read stdin", lambda t: {"contract": "-", "probe": "-"}, 64, ("usage:", "--contract", "--probe")),
    Row("--out is an input", lambda t: {"out": str(NOTES / "contract.json")}, 64, ("usage:", "--out", "--contract")),
    Row("designated oracle the behaviour does not list", lambda t: {"designated-oracle": "O-999"},
        64, ("usage:", "O-999")),
    Row("the same trial twice (invalid)", lambda t: {"record": [str(TRIALS / "trial-1" / "sealed-run-record.json")] * 2},
        3, ("invalid:", "trialIndex")),
]


@pytest.mark.parametrize("row", SCORE_ROWS, ids=[row.case for row in SCORE_ROWS])
def test_score_bad_input(row: Row, tmp_path: Path) -> None:
    """``eval-quality score``: one line, the documented exit, the earlier ``--out`` file untouched."""
    out = tmp_path / "evidence-artifact.json"
    out.write_bytes(SENTINEL)
    given = {"out": str(out), **score_inputs(), **row.change(tmp_path)}
    proc = run_row(["-m", "evalquality_core", "score", *flags(given)], tmp_path, child=row is SCORE_ROWS[0])
    assert_one_line(proc, row.code, "eval-quality: ", row.names)
    assert proc.stdout == ""
    assert out.read_bytes() == SENTINEL


# ---------------------------------------------------------------- eval-quality aggregate-strength

@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real evidence artifact: the notes suite's P-001 scored through the CLI."""
    path = tmp_path_factory.mktemp("evidence") / "evidence-artifact.json"
    proc = run(["-m", "evalquality_core", "score", *flags({**score_inputs(), "out": str(path)})], PROJECT_ROOT)
    assert proc.returncode == 0, proc.stderr
    return path


AGGREGATE_ROWS = [
    Row("evidence is malformed JSON", lambda t: {"evidence": [write(t / "ev.json", "[1,")]},
        5, ("schema-parse-failure: EvidenceArtifact:", "ev.json")),
    Row("evidence has a wrong schemaVersion", lambda t: {"evidence": [edited(t / "good.json", t / "ev.json", schemaVersion=99)]},
        5, ("schema-version-mismatch: EvidenceArtifact[0].schemaVersion:",)),
    Row("evidence has an unknown key", lambda t: {"evidence": [edited(t / "good.json", t / "ev.json", bogus=[])]},
        5, ("schema-parse-failure: EvidenceArtifact[0].bogus:",)),
    Row("evidence is missing", lambda t: {"evidence": [str(t / "nope.json")]}, 64, ("usage:", "nope.json", "ENOENT")),
    Row("floors is a directory", lambda t: {"floors": str(t)}, 64, ("usage:", "EISDIR")),
    Row("floors names an unknown class", lambda t: {"floors": write(t / "f.json", '{"defects": 0.5}')},
        5, ("schema-parse-failure: StrengthFloors.defects:",)),
    Row("a floor outside [0, 1]", lambda t: {"floors": write(t / "f.json", '{"defect": 2}')},
        5, ("schema-parse-failure: StrengthFloors.defect:",)),
    Row("policy has a wrong schemaVersion", lambda t: {"policy": edited(POLICY, t / "pol.json", schemaVersion=1)},
        5, ("schema-version-mismatch: ScoringPolicy.schemaVersion:",)),
    Row("the same probe twice (refused)", lambda t: {"evidence": [str(t / "good.json"), str(t / "good.json")]},
        4, ("strength-inputs-disagree: EvidenceArtifact[1]:",)),
    Row("an unknown flag", lambda t: {"strict-inputs": "x"}, 64, ("usage:", "--strict-inputs")),
    Row("a flag where --floors' value belongs", lambda t: {"floors": "--policy"},
        64, ('usage: --floors needs a value, but the next token is "--policy"',)),
]


@pytest.mark.parametrize("row", AGGREGATE_ROWS, ids=[row.case for row in AGGREGATE_ROWS])
def test_aggregate_strength_bad_input(row: Row, evidence: Path, tmp_path: Path) -> None:
    """``eval-quality aggregate-strength``: one line, the documented exit, the earlier ``--out`` untouched."""
    shutil.copyfile(evidence, tmp_path / "good.json")
    out = tmp_path / "strength-aggregate.json"
    out.write_bytes(SENTINEL)
    given = {
        "evidence": [str(tmp_path / "good.json")],
        "floors": write(tmp_path / "floors.json", '{"defect": 0.8}'),
        "policy": str(POLICY),
        "out": str(out),
        **row.change(tmp_path),
    }
    proc = run_row(["-m", "evalquality_core", "aggregate-strength", *flags(given)], tmp_path, child=row is AGGREGATE_ROWS[0])
    assert_one_line(proc, row.code, "eval-quality: ", row.names)
    assert out.read_bytes() == SENTINEL


# ---------------------------------------------------------------- eval-quality probe

def target(executable: str, script: str, *, env: str = "[]", elapsed: int = 20000, output: int = 1 << 20,
           extra: str = "") -> str:
    """One ``[[target]]`` table running a fixture script under ``{python}``."""
    return f"""
[[target]]
interface_id = "fixture-cli"
executable = "{executable}"
target = "{{python}}"
target_args = ["{FIXTURES / script}"]
permitted_subcommand_paths = [[]]
permitted_environment_keys = {env}
cwd = "."
max_elapsed_ms = {elapsed}
max_output_bytes = {output}
artifacts = {{}}
{extra}"""


TARGETS = (
    target("argv-echo", "print_argv.py", env='["EVALQ_COLOUR"]')
    + target("sleeper", "sleep_tree.py", elapsed=300)
    + target("flood", "flood.py", output=1024)
)


def _request(t: Path, **kwargs: Any) -> dict[str, Any]:
    return {"request": write(t / "req.json", json.dumps(request(**kwargs)))}


PROBE_ROWS = [
    Row("request is malformed JSON", lambda t: {"request": write(t / "req.json", "{")},
        5, ("schema-parse-failure: ProbeRequest:", "--request is not JSON: ")),
    Row("request has an unknown key", lambda t: {"request": write(t / "req.json", json.dumps({**request("argv-echo"), "bogus": 1}))},
        5, ("schema-parse-failure: ProbeRequest.bogus:",)),
    Row("request carries a schemaVersion it has none of",
        lambda t: {"request": write(t / "req.json", json.dumps({**request("argv-echo"), "schemaVersion": 1}))},
        5, ("schema-parse-failure: ProbeRequest.schemaVersion:",)),
    Row("request is missing", lambda t: {"request": str(t / "nope.json")}, 64, ("usage:", "nope.json", "ENOENT")),
    Row("request is a directory", lambda t: {"request": str(t)}, 64, ("usage:", "EISDIR")),
    Row("executable outside the policy", lambda t: _request(t, executable="rm"),
        5, ("forbidden-target: ProbeRequest:", '"rm"')),
    Row("environment key not permitted", lambda t: _request(t, executable="argv-echo", environment={"HOME": "/"}),
        5, ("forbidden-target: ProbeRequest:", '"HOME"')),
    Row("PATH in the request's environment", lambda t: _request(t, executable="argv-echo", environment={"PATH": "/"}),
        5, ("forbidden-target: ProbeRequest:", '"PATH"')),
    Row("the process hangs", lambda t: _request(t, executable="sleeper"),
        5, ("budget-exhausted:", "maxElapsedMs (300ms)")),
    Row("the process floods its output", lambda t: _request(t, executable="flood"),
        5, ("budget-exhausted:", "maxOutputBytes (1024)")),
    Row("targets.toml is not TOML", lambda t: {"targets": write(t / "targets.toml", "[[target]\n")},
        5, ("schema-parse-failure:", "targets.toml", "not TOML")),
    Row("targets.toml permits PATH", lambda t: {"targets": write(t / "targets.toml", target("argv-echo", "print_argv.py", env='["PATH"]'))},
        5, ("schema-parse-failure:", "targets.toml", "PATH")),
    Row("targets.toml has an unknown field",
        lambda t: {"targets": write(t / "targets.toml", target("argv-echo", "print_argv.py", extra="retries = 3"))},
        5, ("schema-parse-failure:", "targets.toml", "unknown key(s) retries")),
    Row("targets.toml is not UTF-8", lambda t: {"targets": write(t / "targets.toml", b"\xff\xfe")},
        5, ("schema-parse-failure:", "targets.toml", "UTF-8")),
    Row("targets.toml is missing", lambda t: {"targets": str(t / "none.toml")}, 64, ("usage:", "none.toml", "ENOENT")),
    Row("--set without a value", lambda t: {"set": "python"}, 64, ("usage:", "--set")),
    Row("a flag where --request's value belongs", lambda t: {"request": "--targets"},
        64, ('usage: --request needs a value, but the next token is "--targets"',)),
    Row("--workdir is not a directory", lambda t: {"workdir": str(t / "nowhere")}, 64, ("usage:", "--workdir")),
    Row("an empty --out", lambda t: {"out": ""}, 64, ("usage: --out needs a non-empty value",)),
    Row("an empty --workdir", lambda t: {"workdir": ""}, 64, ("usage: --workdir needs a non-empty value",)),
]


@pytest.mark.parametrize("row", PROBE_ROWS, ids=[row.case for row in PROBE_ROWS])
def test_probe_bad_input(row: Row, tmp_path: Path) -> None:
    """``eval-quality probe``: one line, the documented exit, the earlier ``--out`` untouched."""
    out = tmp_path / "probe-observation.json"
    out.write_bytes(SENTINEL)
    given = {
        "request": write(tmp_path / "req.json", json.dumps(request("argv-echo"))),
        "targets": write(tmp_path / "targets.toml", TARGETS),
        "workdir": str(tmp_path),
        "out": str(out),
        **row.change(tmp_path),
    }
    proc = run_row(["-m", "evalquality_core", "probe", *flags(given)], tmp_path, child=row is PROBE_ROWS[0], timeout=60)
    assert_one_line(proc, row.code, "eval-quality: ", row.names)
    assert out.read_bytes() == SENTINEL


# ---------------------------------------------------------------- corpus tools

def set_key(relative: str, key: str, value: Any) -> Callable[[Path], None]:
    """Set a top-level key of one JSON file of the suite."""
    def change(suite: Path) -> None:
        edited(suite / relative, suite / relative, **{key: value})
    return change


def replace_file(relative: str, data: str | None) -> Callable[[Path], None]:
    """Replace one suite file with ``data``, or with a directory of that name (``None``)."""
    def change(suite: Path) -> None:
        path = suite / relative
        path.unlink()
        if data is None:
            path.mkdir()
        else:
            write(path, data)
    return change


def remove(relative: str) -> Callable[[Path], None]:
    """Delete one suite file."""
    return lambda suite: (suite / relative).unlink()


def in_targets(old: str, new: str) -> Callable[[Path], None]:
    """Edit the suite's targets.toml (``old`` must occur)."""
    def change(suite: Path) -> None:
        path = suite / "targets.toml"
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return change


@dataclass(frozen=True)
class SuiteRow:
    """One broken suite file, and what the tools' one line must name."""

    case: str
    change: Callable[[Path], None]
    names: tuple[str, ...]


SUITE_ROWS = [
    SuiteRow("contract.json is malformed JSON", replace_file("contract.json", '{"contractId": '), ("contract.json: not JSON",)),
    SuiteRow("contract.json has a wrong schemaVersion", set_key("contract.json", "schemaVersion", 99),
             ("contract.json: schema-version-mismatch: EvalContract.schemaVersion",)),
    SuiteRow("a probe has an unknown key", set_key("probes/P-002.json", "bogus", 1),
             ("P-002.json: schema-parse-failure: Probe.bogus",)),
    SuiteRow("a probe is a directory", replace_file("probes/P-002.json", None), ("P-002.json: is a directory",)),
    SuiteRow("evaluator.json is missing", remove("evaluator.json"), ("evaluator.json: no such file",)),
    SuiteRow("evaluator.json has an unknown key", set_key("evaluator.json", "choice", {}), ("evaluator.json: unknown key(s) choice",)),
    SuiteRow("a mutation has an unknown key", set_key("mutations/response-echo.json", "naive_check", None),
             ("response-echo.json: unknown key(s) naive_check",)),
    SuiteRow("suite.toml is not TOML", replace_file("suite.toml", "[fixtures\n"), ("suite.toml: not TOML",)),
    SuiteRow("targets.toml is not TOML", replace_file("targets.toml", "[[target]\n"),
             ("schema-parse-failure:", "targets.toml: not TOML")),
    SuiteRow("targets.toml permits PATH", in_targets("permitted_environment_keys = []", 'permitted_environment_keys = ["PATH"]'),
             ("schema-parse-failure:", "targets.toml", '"PATH"')),
    SuiteRow("targets.toml has an unknown field", in_targets('cwd = "work"', 'cwd = "work"\nshell = true'),
             ("schema-parse-failure:", "targets.toml", "unknown key(s) shell")),
    SuiteRow("the contract's executable is not registered", in_targets('executable = "notes"', 'executable = "notebook"'),
             ("forbidden-target: ProbeRequest:", '"notes"')),
    SuiteRow("the system hangs", in_targets("max_elapsed_ms = 10000", "max_elapsed_ms = 1"),
             ("budget-exhausted:", "maxElapsedMs (1ms)")),
    SuiteRow("the system floods its output", in_targets("max_output_bytes = 1048576", "max_output_bytes = 1"),
             ("budget-exhausted:", "maxOutputBytes (1)")),
]

TOOLS = {
    "generate": ["-m", "corpus.tools.generate", "--jobs", "2"],
    "evaluator": ["-m", "corpus.tools.evaluator", "--regenerate", "--trials", "1", "--jobs", "2"],
}


def suite_copy(tmp_path: Path, tool: str) -> Path:
    """A copy of the notes suite (with what ``tool`` writes: evidence for generate, trials for evaluator)."""
    skip = "evidence" if tool == "evaluator" else "trials"
    suite = tmp_path / "notes"
    shutil.copytree(NOTES, suite, ignore=shutil.ignore_patterns(skip))
    return suite


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("row", SUITE_ROWS, ids=[row.case for row in SUITE_ROWS])
def test_corpus_tools_bad_suite(tool: str, row: SuiteRow, tmp_path: Path) -> None:
    """``python -m corpus.tools.{generate,evaluator}``: one line naming the file, exit 2, nothing written."""
    suite = suite_copy(tmp_path, tool)
    row.change(suite)
    before = tree_digest(suite)
    proc = run_row([*TOOLS[tool], "--suite", str(suite)], PROJECT_ROOT, child=row is SUITE_ROWS[0], timeout=300)
    assert_one_line(proc, 2, f"{tool}: ", row.names)
    assert tree_digest(suite) == before  # nothing written, and set-aside trials put back byte for byte


TOOL_USAGE_ROWS = [
    ("generate", ["--bogus"], ("usage: unrecognized arguments: --bogus",)),
    ("generate", ["--jobs", "0"], ("usage: argument --jobs",)),
    ("evaluator", [], ("usage: nothing to do: pass --regenerate",)),
    ("evaluator", ["--regenerate", "--trials", "0"], ("usage: argument --trials",)),
    ("evaluator", ["--regenerate", "--suite", "no-such-suite"], ("no-such-suite: not a suite",)),
]


@pytest.mark.parametrize(("tool", "argv", "names"), TOOL_USAGE_ROWS, ids=[" ".join([t, *a]) for t, a, _ in TOOL_USAGE_ROWS])
def test_corpus_tools_usage(tool: str, argv: list[str], names: tuple[str, ...]) -> None:
    """A usage error of a corpus tool is one line (not argparse's usage block) and exit 2."""
    proc = run_row([*TOOLS[tool][:2], *argv], PROJECT_ROOT, child=(tool, argv) == TOOL_USAGE_ROWS[0][:2])
    assert_one_line(proc, 2, f"{tool}: ", names)


def test_score_diagnostics_quoting_author_text_stay_one_line_each(tmp_path: Path) -> None:
    """A probe whose signature pointer holds a newline: the qualification line quoting it is still one
    line (the newline is written as ``\\n``), so every stderr line is a whole diagnostic."""
    probe = json.loads((NOTES / "probes" / "P-001.json").read_text(encoding="utf-8"))
    operand = probe["defectSignature"]["condition"]["predicate"]["operands"][0]
    operand["pointer"] = operand["pointer"].replace("/note/", "/no\nte/")
    given = {**score_inputs(), "probe": write(tmp_path / "probe.json", json.dumps(probe))}
    proc = run(["-m", "evalquality_core", "score", *flags(given)], tmp_path)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert proc.returncode == 3, proc.stderr
    assert all(line.startswith("eval-quality: ") for line in lines), proc.stderr
    assert any('"/interactions/observed/stdout/no\\nte/title"' in line for line in lines), proc.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a device whose writes fail with ENOSPC)")
@pytest.mark.parametrize("command", ["score", "probe"])
def test_a_full_stdout_is_one_line_and_exit_5(command: str, tmp_path: Path) -> None:
    """§7.3: an error with an errno code that is not a path error exits 5, rendered as one line."""
    if command == "score":
        argv = ["score", *flags(score_inputs())]
    else:
        argv = ["probe", *flags({
            "request": write(tmp_path / "req.json", json.dumps(request("argv-echo"))),
            "targets": write(tmp_path / "targets.toml", TARGETS),
            "workdir": str(tmp_path),
        })]
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "evalquality_core", *argv], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert_one_line(proc, 5, "eval-quality: ENOSPC: ", ("No space left on device",))
