"""The tiers (tests/tiers.py) in a child pytest over a tiny tree of its own: the folder decides the tier
(``-m integration`` and ``--ignore=tests/integration`` select the same split), every test has a timeout
(the quick tier's default, a longer one under tests/integration/, a per-test override kept), and a
quick-tier test asking for an integration-only fixture, or filed in a folder that moved whole
(tests/flows/, tests/deployments/), is refused on one line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]

CONFTEST = '''
import pytest

from tests.tiers import pytest_collection_modifyitems, pytest_configure  # noqa: F401


@pytest.fixture(scope="session")
def cluster():
    return "a cluster"
'''

SLEEPER = '''
import time


def test_{name}():
    time.sleep(3)
'''

OVERRIDDEN = '''
import time

import pytest


@pytest.mark.timeout(1)
def test_overridden():
    time.sleep(3)
'''


def tree(root: Path, files: dict[str, str]) -> Path:
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # not this project's addopts
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def pytest_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A child pytest in ``root``, this project's tests package importable, a 1 s default timeout."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-o", "timeout=1", *args],
        cwd=root, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT_ROOT)},
    )


def test_the_folder_decides_the_tier_and_its_timeout(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "tests/conftest.py": CONFTEST,
        "tests/core/test_quick_sleeper.py": SLEEPER.format(name="quick_sleeper"),
        "tests/integration/flows/test_flow_sleeper.py": SLEEPER.format(name="flow_sleeper"),
        "tests/integration/flows/test_overridden.py": OVERRIDDEN,
    })
    integration = pytest_in(root, "-m", "integration", "--collect-only")
    assert integration.returncode == 0, integration.stdout + integration.stderr
    assert "test_flow_sleeper.py::test_flow_sleeper" in integration.stdout
    assert "test_overridden.py::test_overridden" in integration.stdout
    assert "test_quick_sleeper" not in integration.stdout
    quick = pytest_in(root, "-m", "not integration", "--collect-only")
    ignored = pytest_in(root, "--ignore=tests/integration", "--collect-only")
    for run in (quick, ignored):
        assert run.returncode == 0, run.stdout + run.stderr
        collected = [line for line in run.stdout.splitlines() if "::" in line]
        assert collected == ["tests/core/test_quick_sleeper.py::test_quick_sleeper"], run.stdout

    # Every test runs under a timeout: the quick tier's default (1 s here) stops the 3 s quick test, the
    # integration tier's longer one lets its 3 s test pass, and a test's own timeout marker wins.
    ran = pytest_in(root, "-rA")
    outcomes = {line.split(" ")[1].split("::")[-1]: line.split(" ")[0] for line in ran.stdout.splitlines()
                if line.startswith(("PASSED ", "FAILED "))}
    assert outcomes == {"test_quick_sleeper": "FAILED", "test_flow_sleeper": "PASSED",
                        "test_overridden": "FAILED"}, ran.stdout
    assert ran.stdout.count("Timeout") >= 2, ran.stdout


def test_a_quick_tier_test_asking_for_an_integration_only_fixture_is_refused_on_one_line(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "tests/conftest.py": CONFTEST,
        "tests/tasks/test_misfiled.py": "def test_needs_a_cluster(cluster):\n    assert cluster\n",
        "tests/integration/tasks/test_filed.py": "def test_needs_a_cluster_too(cluster):\n    assert cluster\n",
    })
    refused = pytest_in(root)
    assert refused.returncode == 4, refused.stdout + refused.stderr  # pytest's usage error
    errors = [line for line in refused.stderr.splitlines() if line.strip()]
    assert errors == ["ERROR: tests/tasks/test_misfiled.py: test_needs_a_cluster uses the integration-only "
                      "fixture 'cluster'; move the file under tests/integration/ (the folder decides the tier)"]
    assert "Traceback" not in refused.stdout + refused.stderr
    filed = pytest_in(root, "tests/integration")
    assert filed.returncode == 0, filed.stdout + filed.stderr


def test_a_test_in_a_folder_that_moved_whole_is_refused_on_one_line(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "tests/conftest.py": CONFTEST,
        "tests/flows/test_new_flow.py": "def test_runs_a_flow():\n    assert True\n",
    })
    refused = pytest_in(root)
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert [line for line in refused.stderr.splitlines() if line.strip()] == [
        "ERROR: tests/flows/test_new_flow.py: tests/flows/ moved to tests/integration/flows/; "
        "move the file there (the folder decides the tier)"]
