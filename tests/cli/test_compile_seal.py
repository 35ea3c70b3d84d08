"""``eval-quality compile`` and ``seal`` through real child processes (preflight-adapter.md §7); the verdict
on each of the 21 dev-corpus contracts is taken in process (tests/cli_in_process.py: the same ``main``).

Every expectation comes from the conformance files; every bad input must end in one stderr line
with the documented exit code and never a traceback.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cli_in_process import run_in_process

CLI = [sys.executable, "-m", "evalquality_core"]
_FAILURE_LINE = re.compile(r"^eval-quality: (?P<code>[a-z-]+): (?P<path>EvalContract[^:]*): (?P<detail>.+)$")


def run(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI in a child process."""
    return subprocess.run([*CLI, *args], input=stdin if stdin is not None else b"", capture_output=True, cwd=cwd, timeout=120)


def one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    """The single stderr line of a failed run (and proof there is no traceback)."""
    text = result.stderr.decode("utf-8")
    assert "Traceback" not in text
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_every_dev_corpus_contract(conformance: Path) -> None:
    entries = json.loads((conformance / "corpus-dev/expected-compile.json").read_text())["entries"]
    contracts = [entry for entry in entries if entry["kind"] == "contract"]
    assert contracts
    results = [run_in_process("compile", "--in", str(conformance / "corpus-dev" / e["path"])) for e in contracts]
    for entry, result in zip(contracts, results, strict=True):
        if entry["expect"] == "compiles":
            assert result.returncode == 0, result.stderr
            assert result.stdout == (conformance / "corpus-dev" / entry["path"]).read_bytes()
        else:
            assert result.returncode == 4, entry["path"]
            match = _FAILURE_LINE.match(one_line(result))
            assert match is not None and match.group("code") == entry["expect"]
            assert result.stdout == b""


@pytest.mark.parametrize("relative", ["chains/skill-defect/eval-contract.json", "chains/tutorial-workflow/eval-contract.json"])
def test_compile_of_a_contract_5_gives_its_bytes_back_at_stamp_5(conformance: Path, relative: str) -> None:
    """Issue 11: an older stamp is read and written back at that stamp, byte for byte (canonical JSON + newline,
    the form compile writes; the stored chain files are pretty-printed, so their canonical bytes are the input)."""
    from evalquality_core.canonical import serialize_artifact

    document = json.loads((conformance / relative).read_text(encoding="utf-8"))
    assert document["schemaVersion"] == 5
    canonical = serialize_artifact(document)
    result = run("compile", stdin=canonical)
    assert result.returncode == 0, result.stderr
    assert result.stdout == canonical
    assert json.loads(result.stdout)["schemaVersion"] == 5


def test_chain_compile_expectations(conformance: Path) -> None:
    expected = json.loads((conformance / "chains/expected.json").read_text())
    broken = expected["tutorial-workflow"]["compile"]
    for name in ("broken-captured-type.json", "broken-binding-cycle.json"):
        result = run("compile", "--in", str(conformance / "chains/tutorial-workflow" / name))
        assert result.returncode == broken[name]["exitCode"]
        assert one_line(result) == broken[name]["stderr"]


def test_seal_writes_the_reference_brief_byte_for_byte(conformance: Path, tmp_path: Path) -> None:
    folder = conformance / "corpus-dev/compile-seal-example"
    expected = (folder / "brief.json").read_bytes()
    # A real child process reading stdin; the other ways in and out are the command's decisions, in process.
    assert run("seal", stdin=(folder / "contract.json").read_bytes()).stdout == expected
    assert run_in_process("seal", "--in", str(folder / "contract.json")).stdout == expected
    assert run_in_process("seal", "--in", "-", stdin=(folder / "contract.json").read_bytes()).stdout == expected
    result = run_in_process("seal", "--in", str(folder / "contract.json"), "--out", str(tmp_path / "Brief.JSON"))
    assert result.returncode == 0 and result.stdout == b""
    assert (tmp_path / "Brief.JSON").read_bytes() == expected
    assert run_in_process("seal", "--in", str(folder / "contract.json"), "--out", str(tmp_path / "briefs")).returncode == 0
    assert (tmp_path / "briefs" / "sealed-evaluator-brief.json").read_bytes() == expected
    assert run_in_process("compile", "--in", str(folder / "contract.json"), "--out", str(tmp_path / "contracts")).returncode == 0
    assert (tmp_path / "contracts" / "eval-contract.json").read_bytes() == (folder / "contract.json").read_bytes()


def test_chain_brief_digests_through_the_cli(conformance: Path) -> None:
    from evalquality_core.canonical import digest_bytes

    expected = json.loads((conformance / "chains/expected.json").read_text())
    for chain in ("skill-defect", "workflow-capture"):
        result = run("seal", "--in", str(conformance / "chains" / expected[chain]["compile"]["input"]))
        assert result.returncode == expected[chain]["seal"]["exitCode"]
        assert result.stdout.endswith(b"\n") and result.stdout.count(b"\n") == 1
        assert digest_bytes(result.stdout[:-1]) == expected[chain]["seal"]["briefDigest"]


def _no_witness_contract(conformance: Path) -> bytes:
    contract = json.loads((conformance / "corpus-dev/contracts/satisfied-declarations.json").read_text())
    operation = contract["permittedInterfaces"][0]["operations"][0]
    operation["stateChangeMarker"] = False
    operation["sensitivityWitness"] = None
    return json.dumps(contract).encode()


def test_strict_inputs_flags_last_one_wins(conformance: Path) -> None:
    # Flag parsing is a decision of the command, not of the process: in process (tests/cli_in_process.py).
    data = _no_witness_contract(conformance)
    assert run_in_process("compile", stdin=data).returncode == 4
    assert run_in_process("compile", "--no-strict-inputs", stdin=data).returncode == 0
    assert run_in_process("compile", "--no-strict-inputs", "--strict-inputs", stdin=data).returncode == 4
    assert run_in_process("compile", "--strict-inputs", "--no-strict-inputs", "--strict", stdin=data).returncode == 0
    assert run_in_process("seal", "--no-strict-inputs", stdin=data).returncode == 0


def test_compile_output_is_a_fixed_point(conformance: Path) -> None:
    source = json.loads((conformance / "chains/skill-defect/eval-contract.json").read_text())
    pretty = json.dumps(source, indent=3).encode()  # key order and whitespace of the input do not matter
    once = run_in_process("compile", stdin=pretty)
    twice = run_in_process("compile", stdin=once.stdout)
    assert once.returncode == twice.returncode == 0
    assert once.stdout == twice.stdout


BAD_INPUTS: list[tuple[str, bytes, int, str]] = [
    ("malformed", b'{"a":', 5, "schema-parse-failure"),
    ("empty", b"", 5, "schema-parse-failure"),
    ("bom", b'\xef\xbb\xbf{"schemaVersion":4}', 5, "schema-parse-failure"),
    ("latin-1", b'{"a":"\xe9"}', 5, "schema-parse-failure"),
    ("nan", b'{"a":NaN}', 5, "schema-parse-failure"),
    ("array", b"[1,2,3]", 5, "schema-parse-failure"),
    ("string", b'"contract"', 5, "schema-parse-failure"),
    ("duplicate-key", b'{"a":1,"\\u0061":2}', 5, "non-canonicalizable-value"),
    ("unsafe-integer", b'{"schemaVersion":9007199254740993}', 5, "non-canonicalizable-value"),
    ("lone-surrogate", b'{"a":"\\ud800"}', 5, "non-canonicalizable-value"),
    ("deep", b"[" * 1100 + b"]" * 1100, 5, "non-canonicalizable-value"),
    ("wrong-version", b'{"schemaVersion":3}', 5, "schema-version-mismatch"),
    ("boolean-version", b'{"schemaVersion":true}', 5, "schema-parse-failure"),  # issue 10: not a number
    ("missing-version", b'{"parentDigest":null}', 5, "schema-parse-failure"),
    ("string-version", b'{"schemaVersion":"7"}', 5, "schema-parse-failure"),
    ("newer-version", b'{"schemaVersion":8}', 5, "schema-version-mismatch"),
    ("half-contract", b'{"schemaVersion":4,"parentDigest":null}', 5, "schema-parse-failure"),
]


#: Bad inputs also given to a real child process: the first, and the deep nesting (a recursion limit
#: reached there must not kill the interpreter); the rest are the same decision, made in process.
CHILD_BAD_INPUTS = {"malformed", "deep"}


def test_bad_input_is_one_line_never_a_traceback() -> None:
    # compile for every bad input, seal for every third (the reading path is shared). The rows in
    # CHILD_BAD_INPUTS run as child processes side by side; every row also runs in process.
    jobs = [("compile", *bad) for bad in BAD_INPUTS] + [("seal", *bad) for bad in BAD_INPUTS[::3]]
    children = [job for job in jobs if job[1] in CHILD_BAD_INPUTS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        child_results = list(pool.map(lambda job: run(job[0], stdin=job[2]), children))
    in_process = [run_in_process(job[0], stdin=job[2]) for job in jobs]
    for (command, name, _, exit_code, code), result in [*zip(children, child_results, strict=True),
                                                        *zip(jobs, in_process, strict=True)]:
        assert result.returncode == exit_code, (command, name)
        assert one_line(result).startswith(f"eval-quality: {code}: EvalContract"), (command, name)
        assert result.stdout == b""


@pytest.mark.parametrize(
    "args",
    [
        ["--bogus"],
        ["--in"],
        ["--strict-inputs=yes"],
        ["extra-positional"],
        ["--in", "/nonexistent/contract.json"],
        ["--in="],
        ["--in", "a.json", "--in", "b.json"],
    ],
    ids=["unknown-flag", "missing-value", "flag-with-value", "positional", "missing-file", "empty-value", "two-values"],
)
def test_usage_errors_exit_64(args: list[str]) -> None:
    # A usage error is the command's decision: in process, save the first (a real child process).
    result = run("compile", *args) if args == ["--bogus"] else run_in_process("compile", *args)
    assert result.returncode == 64
    assert one_line(result).startswith("eval-quality: usage: ")


def test_out_resolving_to_the_input_is_refused(tmp_path: Path, conformance: Path) -> None:
    target = tmp_path / "contract.json"
    target.write_bytes((conformance / "corpus-dev/contracts/satisfied-declarations.json").read_bytes())
    result = run("compile", "--in", "contract.json", "--out", str(target), cwd=tmp_path)
    assert result.returncode == 64
    assert "--out resolves to" in one_line(result)
    assert target.read_bytes() == (conformance / "corpus-dev/contracts/satisfied-declarations.json").read_bytes()


def test_repeating_a_flag_with_the_same_value_is_accepted(conformance: Path) -> None:
    contract = str(conformance / "corpus-dev/compile-seal-example/contract.json")
    result = run("seal", "--in", contract, f"--in={contract}")
    assert result.returncode == 0
    assert result.stdout == (conformance / "corpus-dev/compile-seal-example/brief.json").read_bytes()


def test_help_mentions_both_commands() -> None:
    result = run("--help")
    assert result.returncode == 0
    assert b"compile" in result.stdout and b"seal" in result.stdout
    assert run("seal", "--help").returncode == 0




def test_a_newline_in_author_text_stays_on_one_line(conformance: Path) -> None:
    contract = json.loads((conformance / "corpus-dev/contracts/satisfied-declarations.json").read_text())
    contract["oracles"][0]["check"]["operands"][1]["pointer"] = "/interactions/list/response-body/it\nems"
    result = run("compile", stdin=json.dumps(contract).encode())
    assert result.returncode == 4
    assert "it\\nems" in one_line(result)
