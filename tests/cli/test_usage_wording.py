"""CLI usage wording per preflight-adapter.md §7, and inputs capped before parsing (issue 10)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalquality_core.cli.main import main

CASES = [
    (["compile", "--out"], "eval-quality: usage: --out requires a value"),
    (["preflight", "--contract", "a", "--probes", "b", "--run-id", "x"], "eval-quality: usage: preflight requires --observations"),
    (["preflight"], "eval-quality: usage: preflight requires --contract, --probes, --observations, --run-id"),
    (["bogus"], 'eval-quality: usage: unknown command "bogus"; expected one of {commands}'),
]


@pytest.mark.parametrize(("argv", "line"), CASES, ids=["out-without-value", "missing-one", "missing-all", "unknown-command"])
def test_usage_errors_say_what_the_spec_says(capsys, argv, line):
    from evalquality_core.cli.main import cli

    assert main(argv) == 64
    assert capsys.readouterr().err.splitlines() == [line.format(commands=", ".join(sorted(cli.commands)))]
    assert "compile, " in line.format(commands=", ".join(sorted(cli.commands))) or argv != ["bogus"]


def test_in_is_not_json_names_the_flag_not_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["compile", "--in", str(bad)]) == 5
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("eval-quality: schema-parse-failure: EvalContract: --in is not JSON: ") and str(bad) not in line


def test_an_endless_input_is_refused_before_parsing_within_a_bounded_memory():
    """``--in /dev/zero`` under a 1 GiB address-space limit: refused after the cap, never read to the end."""
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from evalquality_core.cli.main import main\n"
        "sys.exit(main(['compile', '--in', '/dev/zero']))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "EVALQUALITY_MAX_INPUT_BYTES": str(8 << 20)})
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 5 and len(lines) == 1, result.stderr
    assert lines[0].startswith('eval-quality: budget-exhausted: EvalContract: --in ("/dev/zero") is larger than 8388608 bytes')
