"""Bounded environment probes (harness.md A.2): ok, not-found, failed with status, timeout with group kill."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.adapters.environment import git_read, run_bounded, tool_version
from tests.adapters.command_subject import FIXTURES
from tests.adapters.test_command_line import is_dead, wait_for_file


def test_a_version_check() -> None:
    result = tool_version(sys.executable)
    assert result.ok and result.exit_code == 0
    assert (result.stdout + result.stderr).startswith("Python 3.")


def test_a_missing_tool_is_not_found() -> None:
    result = tool_version("evalq-no-such-tool-anywhere")
    assert (result.status, result.exit_code) == ("not-found", None)
    assert result.reason == '"evalq-no-such-tool-anywhere" was not found on PATH; install it or put it on PATH'


def test_a_failure_keeps_its_status_and_first_stderr_line() -> None:
    result = run_bounded((sys.executable, str(FIXTURES / "exit_code.py"), "9"))
    assert (result.status, result.exit_code) == ("failed", 9)
    assert result.reason.endswith("exited 9: failing on purpose")


def test_a_hang_times_out_and_its_group_dies(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    result = run_bounded((sys.executable, str(FIXTURES / "sleep_tree.py"), str(pids)), deadline_s=1.0)
    assert (result.status, result.exit_code) == ("timeout", None)
    assert "did not finish within 1 s and was killed" in result.reason
    for pid in (int(p) for p in wait_for_file(pids).split()):
        assert is_dead(pid)


def test_git_reads_only() -> None:
    with pytest.raises(ValueError):
        git_read(["push", "origin"], repo=".")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed on this host")
def test_a_git_read(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = git_read(["rev-parse", "--is-inside-work-tree"], repo=tmp_path)
    assert result.ok and result.stdout.strip() == "true"
    missing = git_read(["rev-parse", "HEAD"], repo=tmp_path)
    assert missing.status == "failed" and missing.exit_code == 128
