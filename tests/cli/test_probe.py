"""``eval-quality probe``: one request, a targets.toml, the observation as canonical JSON (or exit 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalquality_core.canonical.json import serialize_artifact
from tests.adapters.command_subject import FIXTURES, request

TARGETS = f"""
[[target]]
interface_id = "fixture-cli"
executable = "argv-echo"
target = "{{python}}"
target_args = ["{FIXTURES / 'print_argv.py'}"]
permitted_subcommand_paths = [[]]
permitted_environment_keys = ["EVALQ_COLOUR"]
cwd = "."
max_elapsed_ms = 20000
max_output_bytes = 1048576
artifacts = {{}}

[[target]]
interface_id = "fixture-cli"
executable = "toucher"
target = "{{python}}"
target_args = ["{FIXTURES / 'touch_marker.py'}"]
permitted_subcommand_paths = [[]]
permitted_environment_keys = []
cwd = "{{place}}"
max_elapsed_ms = 20000
max_output_bytes = 1048576
artifacts = {{ marker = "marker.txt" }}

[[target]]
interface_id = "fixture-cli"
executable = "sleeper"
target = "{{python}}"
target_args = ["{FIXTURES / 'sleep_tree.py'}"]
permitted_subcommand_paths = [[]]
permitted_environment_keys = []
cwd = "."
max_elapsed_ms = 300
max_output_bytes = 1048576
artifacts = {{}}
"""


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "evalquality_core", *args], input=stdin, capture_output=True, cwd=cwd, timeout=60
    )


def setup(tmp_path: Path, req: dict[str, object]) -> tuple[Path, Path]:
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    request_file = tmp_path / "request.json"
    request_file.write_text(json.dumps(req))
    return targets, request_file


def test_prints_the_observation_as_canonical_json(tmp_path: Path) -> None:
    targets, request_file = setup(tmp_path, request("argv-echo", argument={"v": "a b"}, environment={"EVALQ_COLOUR": "red"}))
    done = run_cli(
        "probe", "--request", str(request_file), "--targets", str(targets), "--workdir", str(tmp_path), "--set", "place=."
    )
    assert done.returncode == 0, done.stderr
    observation = json.loads(done.stdout)
    assert done.stdout == serialize_artifact(observation)  # canonical bytes plus one newline
    assert observation["exitCode"] == 0 and observation["probeId"] == "leg-1"
    assert observation["stdout"]["value"]["argv"] == ["a b"]
    assert observation["stdout"]["value"]["env"]["EVALQ_COLOUR"] == "red"


def test_reads_the_request_from_stdin_and_fills_placeholders(tmp_path: Path) -> None:
    place = tmp_path / "elsewhere"
    place.mkdir()
    targets, _ = setup(tmp_path, {})
    req = request("toucher", argument={"m": "marker.txt"})
    done = run_cli(
        "probe", "--request", "-", "--targets", str(targets), "--set", f"place={place}", "--out", str(tmp_path / "obs.json"),
        stdin=json.dumps(req).encode(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    observation = json.loads((tmp_path / "obs.json").read_text())
    assert observation["artifacts"]["marker"] == {"kind": "text", "value": "started\n"}
    assert (place / "marker.txt").exists()


def test_an_unfilled_placeholder_is_refused(tmp_path: Path) -> None:
    targets, request_file = setup(tmp_path, request("argv-echo"))
    done = run_cli("probe", "--request", str(request_file), "--targets", str(targets))
    assert done.returncode == 5
    assert done.stderr.decode().strip() == f"eval-quality: schema-parse-failure: {targets}: no value given for placeholder(s) {{place}}"


def test_a_refusal_is_one_line_and_exit_5_and_starts_nothing(tmp_path: Path) -> None:
    targets, request_file = setup(tmp_path, request("toucher", argument={"m": "marker.txt"}, environment={"HOME": "/"}))
    done = run_cli("probe", "--request", str(request_file), "--targets", str(targets), "--set", f"place={tmp_path}")
    assert done.returncode == 5
    assert done.stdout == b""
    assert done.stderr.decode().splitlines() == [
        'eval-quality: forbidden-target: ProbeRequest: environment key "HOME" is not permitted by this authorization'
    ]
    assert not (tmp_path / "marker.txt").exists()


def test_a_budget_breach_is_exit_5(tmp_path: Path) -> None:
    targets, request_file = setup(tmp_path, request("sleeper"))
    done = run_cli("probe", "--request", str(request_file), "--targets", str(targets), "--set", "place=.")
    assert done.returncode == 5
    assert done.stderr.decode().splitlines() == [
        "eval-quality: budget-exhausted: CommandProbeRequest: exceeded maxElapsedMs (300ms) and was killed"
    ]


def test_a_registry_that_permits_path_is_refused(tmp_path: Path) -> None:
    targets, request_file = setup(tmp_path, request("argv-echo"))
    targets.write_text(TARGETS.replace('permitted_environment_keys = ["EVALQ_COLOUR"]', 'permitted_environment_keys = ["Path"]'))
    done = run_cli("probe", "--request", str(request_file), "--targets", str(targets), "--set", "place=.")
    assert done.returncode == 5
    line = done.stderr.decode().strip()
    assert line.startswith(f"eval-quality: schema-parse-failure: {targets}: target[0] ('fixture-cli'): ")
    assert "permittedEnvironmentKeys" in line and "PATH" in line.upper()


def test_a_malformed_request_is_exit_5(tmp_path: Path) -> None:
    targets, request_file = setup(tmp_path, {**request("argv-echo"), "executable": "/bin/sh"})
    done = run_cli("probe", "--request", str(request_file), "--targets", str(targets), "--set", "place=.")
    assert done.returncode == 5
    assert done.stderr.decode().startswith("eval-quality: schema-parse-failure: ProbeRequest.executable: ")


def test_a_missing_targets_file_is_a_usage_error(tmp_path: Path) -> None:
    _, request_file = setup(tmp_path, request("argv-echo"))
    done = run_cli("probe", "--request", str(request_file), "--targets", str(tmp_path / "nope.toml"))
    assert done.returncode == 64
    assert done.stderr.decode().startswith("eval-quality: usage: ")
