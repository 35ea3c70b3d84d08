"""The documentation site builds with ``mkdocs build --strict`` (a real child process, into tmp_path), so a
broken link or a page named in nav but missing fails the normal test run; a page that other branches add
but nav does not list yet does not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``, offline as CI builds it."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent, env=env, capture_output=True, text=True, timeout=300,
    )


def copy_of_the_site(tmp_path: Path) -> Path:
    """mkdocs.yml and docs/ copied under ``tmp_path`` (so a test may change the pages); the config's path."""
    shutil.copytree(PROJECT_ROOT / "docs", tmp_path / "docs")
    shutil.copy(PROJECT_ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return tmp_path / "mkdocs.yml"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(PROJECT_ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "explanation" / "trust-boundary" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "measurements" / "index.html").is_file()


def test_a_page_missing_from_nav_does_not_fail_strict(tmp_path: Path) -> None:
    config = copy_of_the_site(tmp_path)
    (tmp_path / "docs" / "how-to" / "from-another-branch.md").write_text(
        "# A page another branch adds\n\nSee [the trust boundary](../explanation/trust-boundary.md).\n")
    done = build(config, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "how-to" / "from-another-branch" / "index.html").is_file()


def test_a_broken_link_fails_strict(tmp_path: Path) -> None:
    config = copy_of_the_site(tmp_path)
    page = tmp_path / "docs" / "how-to" / "preflight.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [a page that is gone](gone.md).\n")
    done = build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "gone.md" in done.stderr, done.stderr[-3000:]


def _nav_pages(entries: object) -> set[str]:
    """Every page path the ``nav`` of mkdocs.yml names, at any depth."""
    if isinstance(entries, str):
        return {entries}
    if isinstance(entries, list):
        return set().union(*(_nav_pages(entry) for entry in entries)) if entries else set()
    if isinstance(entries, dict):
        return set().union(*(_nav_pages(value) for value in entries.values())) if entries else set()
    return set()


def test_every_page_of_the_site_is_in_its_navigation() -> None:
    # Strict lets a page outside nav through (so branches can add pages); the merged site must list them all.
    import yaml

    nav = yaml.safe_load((PROJECT_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = {path.relative_to(PROJECT_ROOT / "docs").as_posix() for path in (PROJECT_ROOT / "docs").rglob("*.md")}
    named = _nav_pages(nav)
    assert pages - named == set(), "pages missing from mkdocs.yml nav"
    assert named - pages == set(), "nav names pages that do not exist"
