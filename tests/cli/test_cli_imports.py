"""What one ``eval-quality`` call pays for before it does anything: every call registers every command,
so a command family's heavy library is imported only inside the command that uses it. libcst (mutant
generation) and httpx (api probes) cost about 0.25 s together per call, which a suite of CLI tests and
a user's scripts pay on every call that needs neither (0.66 s → 0.38 s for ``--help`` here)."""

from __future__ import annotations

import json
import subprocess
import sys

from evalquality_core.mutants.catalogue import CATALOGUE

_HEAVY = ("libcst", "httpx")


def _imported_after(code: str) -> list[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(m for m in {_HEAVY!r} if m in sys.modules)))"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(run.stdout.splitlines()[-1])


def test_registering_every_command_imports_neither_libcst_nor_httpx() -> None:
    assert _imported_after("from evalquality_core.cli.main import _load_commands; _load_commands()") == []


def test_control_the_commands_that_need_them_still_import_them() -> None:
    """The probe above can see an import: the modules the commands defer to do pull them in."""
    assert _imported_after("import evalquality_core.mutants.generate") == ["libcst"]
    assert _imported_after("import evalquality_core.adapters.http") == ["httpx"]


def test_the_generate_help_still_lists_every_operator() -> None:
    run = subprocess.run([sys.executable, "-m", "evalquality_core", "mutants", "generate", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    flat = " ".join(run.stdout.split())
    for operator in CATALOGUE:
        assert f"{operator.name} (" in flat, operator.name
