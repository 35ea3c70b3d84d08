"""Top-level help and version (preflight-adapter.md §7.1), through the real console entry point."""

from __future__ import annotations

import subprocess
import sys

import pytest

COMMANDS = ("compile", "seal", "preflight", "score", "aggregate-strength", "probe")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalquality_core", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_help_command_prints_that_commands_help(command: str) -> None:
    result = _run("help", command)
    assert result.returncode == 0, result.stderr
    assert f"eval-quality {command}" in result.stdout


def test_help_alone_lists_every_command_and_the_exit_table() -> None:
    result = _run("help")
    assert result.returncode == 0
    for command in COMMANDS:
        assert command in result.stdout
    assert "64 usage error" in " ".join(result.stdout.split())


def test_help_for_an_unknown_command_is_a_usage_error() -> None:
    result = _run("help", "nope")
    assert result.returncode == 64
    assert result.stderr.startswith("eval-quality: usage:") and "Traceback" not in result.stderr


def test_no_command_is_a_usage_error_naming_the_commands() -> None:
    result = _run()
    assert result.returncode == 64
    assert "no command given; expected one of" in result.stderr
    assert all(command in result.stderr for command in COMMANDS)
