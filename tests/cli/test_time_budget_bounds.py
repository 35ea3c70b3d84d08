"""Every time budget read from a file has one bound (issue 33): ``max_elapsed_ms`` of every target
kind (cli, api, mcp), ``[service] ready_timeout_ms`` and ``[evaluator] wall-clock-seconds`` are whole
numbers up to 2147483647 ms (``probe.policy.MAX_ELAPSED_MS``, about 24.8 days). Anything larger is
refused where it is read, on one line naming the file and the key, with the command's documented exit
code, never an ``OverflowError`` traceback from time arithmetic. Each case runs the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NOTES_API = PROJECT_ROOT / "corpus" / "suites" / "notes-api"
HUGE = str(10**30)
#: Past what any float (1e308) or time_t holds: the value that raised OverflowError.
ENORMOUS = "1" + "0" * 400
#: Past Python's int-from-text limit (4300 digits): the value that made the TOML reader raise ValueError.
ENDLESS = "1" + "0" * 5000
MAXIMUM = "from 1 to 2147483647 (the maximum, about 24.8 days)"

ENTRIES = {
    "cli": """
[[target]]
interface_id = "echo"
executable = "echo"
target = "/bin/echo"
permitted_subcommand_paths = [[]]
permitted_environment_keys = []
cwd = "."
artifacts = {}
max_elapsed_ms = BUDGET
max_output_bytes = 1000
""",
    "api": """
[[target]]
kind = "api"
interface_id = "echo"
scheme = "http"
host = "127.0.0.1"
port = 9
addresses = ["127.0.0.1"]
methods = ["GET"]
safe_methods = ["GET"]
max_redirects = 0
max_elapsed_ms = BUDGET
max_request_bytes = 1000
max_response_bytes = 1000
""",
    "mcp": """
[[target]]
kind = "mcp"
interface_id = "echo"
target = "/bin/echo"
target_args = []
tools = ["echo"]
cwd = "."
server_environment = {}
max_elapsed_ms = BUDGET
max_output_bytes = 1000
""",
}
REQUEST = {"kind": "cli", "probeId": "p", "interfaceId": "echo", "operationId": "run", "executable": "echo",
           "subcommandPath": [], "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}}}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalquality_core", *args], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=120)


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert done.returncode == code, done.stderr
    return lines[0]


@pytest.mark.parametrize("kind", ["cli", "api", "mcp"])
@pytest.mark.parametrize("budget", [HUGE, ENORMOUS], ids=["1e30", "1e400"])
def test_max_elapsed_ms_past_the_maximum_is_refused_for_every_kind(kind: str, budget: str, tmp_path: Path) -> None:
    targets = tmp_path / "targets.toml"
    targets.write_text(ENTRIES[kind].replace("BUDGET", budget))
    (tmp_path / "request.json").write_text(json.dumps(REQUEST))
    line = _one_line(_cli("probe", "--request", str(tmp_path / "request.json"), "--targets", str(targets)), 5)
    assert line == (f"eval-quality: schema-parse-failure: {targets}: target[0] ('echo'): "
                    f"max_elapsed_ms must be a whole number of milliseconds {MAXIMUM}")


def test_the_maximum_itself_is_a_budget(tmp_path: Path) -> None:
    """The bound is inclusive: a command under the largest budget runs (and answers at once)."""
    targets = tmp_path / "targets.toml"
    targets.write_text(ENTRIES["cli"].replace("BUDGET", "2147483647"))
    (tmp_path / "request.json").write_text(json.dumps(REQUEST))
    done = _cli("probe", "--request", str(tmp_path / "request.json"), "--targets", str(targets))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["exitCode"] == 0


def test_an_integer_too_long_to_read_is_one_line(tmp_path: Path) -> None:
    targets = tmp_path / "targets.toml"
    targets.write_text(ENTRIES["cli"].replace("BUDGET", ENDLESS))
    (tmp_path / "request.json").write_text(json.dumps(REQUEST))
    line = _one_line(_cli("probe", "--request", str(tmp_path / "request.json"), "--targets", str(targets)), 5)
    assert line == (f"eval-quality: schema-parse-failure: {targets}: holds an integer of more than "
                    f"{sys.get_int_max_str_digits()} digits, which no key accepts")


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "notes-api"
    shutil.copytree(NOTES_API, suite)
    return suite


@pytest.mark.parametrize("budget", [HUGE, ENORMOUS], ids=["1e30", "1e400"])
def test_a_service_ready_timeout_past_the_maximum_is_refused_by_suite_check(budget: str, tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    targets = suite / "targets.toml"
    text = targets.read_text()
    assert "ready_timeout_ms = 15000\n" in text
    targets.write_text(text.replace("ready_timeout_ms = 15000\n", f"ready_timeout_ms = {budget}\n"))
    done = _cli("suite", "check", str(suite))
    line = _one_line(done, 2)
    assert line == (f"eval-quality: suite check: registry: schema-parse-failure: {targets}: [service] ready_timeout_ms "
                    f"must be a whole number of milliseconds {MAXIMUM}; fix: correct the named file")


@pytest.mark.parametrize("seconds", [HUGE, str(2147483647 // 1000 + 1)], ids=["1e30", "one-past"])
def test_an_evaluator_wall_clock_past_the_maximum_is_refused_by_suite_check(seconds: str, tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    settings = suite / "suite.toml"
    settings.write_text(settings.read_text() + f"\n[evaluator]\nwall-clock-seconds = {seconds}\n")
    done = _cli("suite", "check", str(suite))
    line = _one_line(done, 2)
    assert f"{settings}: [evaluator] wall-clock-seconds must be a whole number of seconds from 1 to 2147483 " in line
