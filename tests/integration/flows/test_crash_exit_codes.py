"""A crash is never read as a gate's answer: every entry point ends an unexpected exception with its
documented crash code (70 for the flows and deployments, 5 for the ``eval-quality`` CLI), never 1
("a verdict moved" / CONCERNS under --strict) or 2 ("the environment moved").

Each test crashes a real child process: ``python -c`` replaces one internal function of the entry
point's module with one that raises (a planted bug), then calls the module's ``main()``; two of them
plant the bug inside the flow body, so the flow run itself ends Failed on the embedded Prefect server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[3]
BUG = "planted bug 7f3a"


def _crash(module: str, replaced: str, argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    """Run ``module.main(argv)`` in a child whose ``module.<replaced>`` raises ``RuntimeError(BUG)``."""
    target, _, attribute = replaced.rpartition(".")
    script = (
        "import importlib, sys\n"
        f"module = importlib.import_module({module!r})\n"
        f"owner = importlib.import_module({target!r}) if {target!r} else module\n"
        f"def planted(*args, **kwargs):\n    raise RuntimeError({BUG!r})\n"
        f"setattr(owner, {attribute!r}, planted)\n"
        f"sys.exit(module.main({argv!r}))\n"
    )
    env = {**os.environ, "EVALQUALITY_HOME": str(home)}
    for name in ("EVALQUALITY_LEG_CACHE", "EVALQUALITY_SUITES"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-c", script], cwd=PROJECT, env=env, capture_output=True, text=True,
                          timeout=300)


def _crashed(result: subprocess.CompletedProcess[str], prog: str, code: int = 70) -> None:
    assert result.returncode == code, result.stderr[-3000:]
    # One closing line names the crash (Prefect may still log its own shutdown after it).
    lines = result.stderr.splitlines()
    assert lines.count(f"{prog}: crashed (a bug, exit 70): RuntimeError: {BUG}") == 1, result.stderr[-3000:]


@pytest.mark.parametrize(("module", "replaced", "argv"), [
    ("flows.preflight", "check_leg_cache", []),
    ("flows.contract_strength", "check_leg_cache", []),
    ("flows.mutants", "check_leg_cache", []),
    ("flows.strength_baseline", "documents_in", ["--out", "."]),
    ("deployments.nightly", "serve", ["serve"]),
    ("deployments.batched_nightly", "deploy", ["deploy"]),
])
def test_a_bug_in_an_entry_point_exits_70_not_1(tmp_path, module, replaced, argv):
    _crashed(_crash(module, replaced, argv, tmp_path / "home"), f"python -m {module}")


@pytest.mark.slow
@pytest.mark.parametrize(("module", "replaced"), [
    ("flows.preflight", "flows.preflight.load_suites"),
    ("flows.contract_strength", "flows.contract_strength.load_suites"),
])
def test_a_flow_run_failed_by_a_bug_exits_70_not_1_or_2(tmp_path, module, replaced):
    """The planted bug is inside the flow body: Prefect ends the flow run Failed (not a gate decision),
    and the entry point says crash, not "a verdict moved" or "the environment moved"."""
    suites = tmp_path / "suites"
    suites.mkdir()
    result = _crash(module, replaced, ["--suites", str(suites), "--out", str(tmp_path / "out")], tmp_path / "home")
    _crashed(result, f"python -m {module}")


def test_a_bug_outside_a_command_of_the_cli_still_exits_5(tmp_path):
    """A command module that fails to import (a bug while the CLI loads its commands) is exit 5 with its
    stack trace, as any other bug of the CLI (preflight-adapter.md §7.4), never 1."""
    script = (
        "import sys\n"
        "import evalquality_core.cli.main as cli\n"
        "cli.COMMAND_MODULES = (*cli.COMMAND_MODULES, 'evalquality_core.cli.no_such_commands')\n"
        "sys.argv = ['eval-quality', '--help']\n"
        "cli.main()\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 5, result.stderr[-3000:]
    assert "ModuleNotFoundError: No module named 'evalquality_core.cli.no_such_commands'" in result.stderr


@pytest.mark.parametrize(("module", "argv"), [
    ("flows.strength_baseline", ["--out", ".", "--no-such-flag"]),
    ("deployments.nightly", ["--no-such-flag"]),
    ("deployments.batched_nightly", ["run", "--no-such-flag"]),
])
def test_a_usage_error_of_an_entry_point_is_64_not_2(tmp_path, module, argv):
    """argparse's own exit 2 would read as "the environment moved": a usage error is one line and 64."""
    env = {**os.environ, "EVALQUALITY_HOME": str(tmp_path / "home")}
    result = subprocess.run([sys.executable, "-m", module, *argv], cwd=PROJECT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 64, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"python -m {module}: usage: "), result.stderr
    assert "--no-such-flag" in lines[0]
