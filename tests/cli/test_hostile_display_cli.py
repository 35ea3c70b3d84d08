"""The real ``eval-quality`` CLI never passes a target's or a user's control characters to the terminal.

A tool server that writes terminal escapes to stderr and dies is quoted in a one-line port-failure;
a suite folder whose name holds them is named in ``suite check``'s lines: both shown escaped
(evalquality_core/printable.py), on one line, no traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.adapters.mcp_subject import request
from tests.cli.test_probe import run_cli

ESCAPER = Path(__file__).resolve().parents[1] / "fixtures" / "display" / "terminal_escapes.py"
#: Raw bytes no CLI output may hold (UTF-8 of U+009B and U+202E included).
RAW = (b"\x1b", b"\x07", b"\x08", b"\r", b"\x7f", "\u009b".encode(), "\u202e".encode())
#: What the fixture writes, as it must be shown, written from the rule in printable.py.
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[1A\\x08\\x08\\rFAKE all passed\\x9b31m\\x7f\\u202e"

TARGETS = f"""
[[target]]
kind = "mcp"
interface_id = "fixture-mcp"
target = "{sys.executable}"
target_args = ["{ESCAPER}"]
tools = ["echo"]
cwd = "."
server_environment = {{}}
max_elapsed_ms = 60000
max_output_bytes = 1048576
"""


def _no_raw(output: bytes) -> None:
    for raw in RAW:
        assert raw not in output, (raw, output)


def test_a_tool_servers_escapes_on_stderr_are_shown_escaped_in_the_port_failure(tmp_path: Path) -> None:
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    leg = tmp_path / "request.json"
    leg.write_text(json.dumps(request("echo", {"value": "x"})))
    done = run_cli("probe", "--request", str(leg), "--targets", str(targets), "--workdir", str(tmp_path))
    assert done.returncode == 5, done.stderr
    assert done.stdout == b""
    _no_raw(done.stderr)
    line = done.stderr.decode("utf-8")
    assert line.count("\n") == 1 and "Traceback" not in line
    assert line.startswith("eval-quality: port-failure: ") and line.rstrip("\n").endswith(SHOWN), line


def test_a_suite_folder_named_with_escapes_is_shown_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "suite\x1b]0;pwned\x07\x1b[2J\rok"
    folder.mkdir()
    done = run_cli("suite", "check", str(folder))
    assert done.returncode != 0
    _no_raw(done.stdout + done.stderr)
    assert "suite\\x1b]0;pwned\\x07\\x1b[2J\\rok" in done.stderr.decode("utf-8"), done.stderr
    assert b"Traceback" not in done.stderr


def test_explain_names_a_contract_path_with_escapes_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "contracts\x1b]0;pwned\x07\x1b[2J"
    folder.mkdir()
    contract = folder / "contract.json"
    contract.write_bytes((Path(__file__).resolve().parents[2] / "corpus" / "suites" / "notes" / "contract.json").read_bytes())
    done = run_cli("explain", "--contract", str(contract))
    assert done.returncode == 0, done.stderr
    _no_raw(done.stdout + done.stderr)
    assert "contracts\\x1b]0;pwned\\x07\\x1b[2J/contract.json: " in done.stdout.decode("utf-8"), done.stdout
