"""The two test tiers (issue 35): the folder decides.

Everything under ``tests/integration/`` is the integration tier: tests that run a Prefect flow, start a
server or a cluster (HTTP, PostgreSQL, Prefect), install from a package registry, or run whole suites end
to end through the CLI (``suite init|generate|trials|check`` workflows, the corpus generator's ``--check``:
hundreds of real legs each). Everything else is
the quick tier, a developer's loop: ``python -m pytest --ignore=tests/integration``
(docs/how-to/run-the-tests.md). The whole suite, ``python -m pytest``, runs both.

Loaded by tests/conftest.py (its hook is imported there); tests/test_tiers.py runs it in a child pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: Where the integration tier lives, relative to the rootdir.
INTEGRATION_FOLDER = Path("tests") / "integration"
#: Session fixtures that start a cluster or migrate a Prefect database: only the integration tier may ask
#: for them, so a test filed in a quick-tier folder by mistake is refused at collection rather than
#: silently making every developer's loop slow.
INTEGRATION_ONLY_FIXTURES: tuple[str, ...] = ("cluster", "migrated_prefect_db")
#: Quick-tier folders that moved whole under tests/integration/ (issue 35): a test file that appears there
#: again (a branch written before the move) is a flow or deployment test filed in the quick tier.
MOVED_WHOLE: tuple[Path, ...] = (Path("tests") / "flows", Path("tests") / "deployments")
#: pytest-timeout's default (pyproject ``timeout``) bounds a quick-tier test. An integration test gets this
#: instead: its first test also pays its module fixture (whole flow runs, a cluster start), which took
#: minutes on the 2-core machine under the load of several engineers' runs.
INTEGRATION_TIMEOUT_SECONDS = 900


def in_integration_tier(path: Path, rootpath: Path) -> bool:
    """Whether the test file at ``path`` belongs to the integration tier (it lies under tests/integration/)."""
    return path.resolve().is_relative_to((rootpath / INTEGRATION_FOLDER).resolve())


def _shown(path: Path, rootpath: Path) -> Path:
    return path.relative_to(rootpath) if path.is_relative_to(rootpath) else path


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``integration`` marker (set from the folder, never by hand)."""
    config.addinivalue_line("markers", "integration: under tests/integration/ (set by tests/tiers.py from the folder)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the integration tier and give it its longer timeout; refuse, on one line naming the file, a
    quick-tier test that asks for an integration-only fixture or lies in a folder that moved whole."""
    for item in items:
        if in_integration_tier(item.path, config.rootpath):
            item.add_marker(pytest.mark.integration)
            if item.get_closest_marker("timeout") is None:  # a per-test override wins
                item.add_marker(pytest.mark.timeout(INTEGRATION_TIMEOUT_SECONDS))
            continue
        for folder in MOVED_WHOLE:
            if item.path.resolve().is_relative_to((config.rootpath / folder).resolve()):
                raise pytest.UsageError(
                    f"{_shown(item.path, config.rootpath)}: {folder}/ moved to {INTEGRATION_FOLDER / folder.name}/; "
                    "move the file there (the folder decides the tier)"
                )
        wanted = [name for name in INTEGRATION_ONLY_FIXTURES if name in getattr(item, "fixturenames", ())]
        if wanted:
            raise pytest.UsageError(
                f"{_shown(item.path, config.rootpath)}: {item.name} uses the integration-only fixture "
                f"{wanted[0]!r}; move the file under {INTEGRATION_FOLDER}/ (the folder decides the tier)"
            )
