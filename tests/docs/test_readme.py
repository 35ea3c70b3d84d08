"""The README stays a front door: at most 150 lines, the quick start's two commands verbatim, and
``.ci/run`` runs the second of them verbatim, then builds the documentation site strictly."""

from __future__ import annotations

import re

from tests.conftest import PROJECT_ROOT

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
#: The quick start, as it has read since the project began; changing either line is a decision, not an edit.
INSTALL_AND_PREFLIGHT = (
    "python -m venv .venv && . .venv/bin/activate && pip install -q -e . && python -m flows.preflight"
)
INSTALL_AND_TEST = (
    "python -m venv .venv && . .venv/bin/activate && pip install -q -e '.[test]' && python -m pytest"
)


def _quick_start_commands() -> list[str]:
    section = README[README.index("## Quick start\n"):]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    assert block, "the Quick start has a bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_is_at_most_150_lines() -> None:
    assert len(README.splitlines()) <= 150, len(README.splitlines())


def test_the_quick_start_is_exactly_the_two_commands() -> None:
    assert _quick_start_commands() == [INSTALL_AND_PREFLIGHT, INSTALL_AND_TEST]


def test_ci_runs_the_readme_test_command_verbatim_then_builds_the_site_strictly() -> None:
    lines = (PROJECT_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    test_line = _quick_start_commands()[1]
    assert test_line in lines, "the README's test command is a line of .ci/run, verbatim"
    build = [index for index, line in enumerate(lines) if "mkdocs build --strict" in line]
    assert build and build[0] > lines.index(test_line), "mkdocs build --strict runs after the test command"


def test_every_link_of_the_readme_into_docs_names_a_page_that_exists() -> None:
    targets = re.findall(r"\]\((docs/[^)#]+)", README)
    assert len(targets) >= 20, targets
    missing = sorted({target for target in targets if not (PROJECT_ROOT / target).is_file()})
    assert missing == [], missing
