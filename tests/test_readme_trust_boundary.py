"""The "Trust boundary" page (docs/explanation/trust-boundary.md, the README's section moved verbatim) stays honest: every guarantee names the tests that prove it, and every
test file it names exists (a renamed or deleted test would otherwise leave a guarantee unproved)."""

from __future__ import annotations

import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _section() -> str:
    text = (PROJECT_ROOT / "docs" / "explanation" / "trust-boundary.md").read_text(encoding="utf-8")
    start = text.index("## Trust boundary\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def _bullets(part: str) -> list[str]:
    return [bullet.strip() for bullet in re.split(r"\n(?=\* )", part) if bullet.startswith("* ")]


def _exists(named: str) -> bool:
    """The named test file is where the text says, or where the tier split (issue 35) moved it: the flow,
    server, PostgreSQL and npm tests live under ``tests/integration/`` in their old sub-folder, so
    ``tests/flows/x.py`` is now ``tests/integration/flows/x.py``. Anything else named must exist as written."""
    moved = PROJECT_ROOT / "tests" / "integration" / named.removeprefix("tests/")
    return (PROJECT_ROOT / named).is_file() or moved.is_file()


def test_every_test_file_the_trust_boundary_names_exists() -> None:
    named = set(re.findall(r"tests/[\w/]+\.py", _section()))
    assert len(named) >= 20, named
    missing = sorted(path for path in named if not _exists(path))
    assert missing == [], missing


def test_every_guarantee_names_its_proof_and_every_non_guarantee_says_what_it_is() -> None:
    section = _section()
    guarantees, _, non_guarantees = section.partition("What it does **not** guarantee")
    assert non_guarantees, "the section lists what it does not guarantee"
    for bullet in _bullets(guarantees):
        assert re.search(r"\[(`tests/[^\]]+|same\s+(flow\s+)?files?\b[^\]]*)\]", bullet), bullet[:120]
    assert len(_bullets(non_guarantees)) >= 10
