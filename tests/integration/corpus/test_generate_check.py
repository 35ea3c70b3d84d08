"""``python -m corpus.tools.generate --check`` over every corpus suite: each probe's arms (baseline,
mutant or degenerate, rollback) run again as real legs and must give the stored probes and evidence byte
for byte. It runs every suite end to end (hundreds of real processes, the tool-server suite's the
costliest), so it is in the integration tier; the quick tier reads the stored evidence
(tests/corpus/test_generate.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalquality_core.suite.load import find_suites
from tests.corpus.conftest import PROJECT_ROOT, SUITE_NAMES, SUITES


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_generate_check_finds_every_probe_and_evidence_file_up_to_date(suite: str) -> None:
    # One suite per test, so the workers share the suites (the tool-server suite alone takes most of it).
    result = subprocess.run(
        [sys.executable, "-m", "corpus.tools.generate", "--check", "--suite", suite],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout


def test_the_per_suite_checks_cover_every_suite_the_generator_finds() -> None:
    # ``generate --check`` without --suite walks find_suites(); the parametrized check above must too.
    assert SUITE_NAMES == sorted(path.name for path in find_suites(SUITES))
