"""The tutorials (docs/tutorials/first-run.md, then first-suite.md) run as written: every
``<!-- walkthrough -->`` block, verbatim, in one bash script in a temporary folder outside the checkout, with
the installed ``eval-quality`` and ``python`` first on PATH — and what the pages say it prints is what it
prints. (The walkthrough was the README's "From nothing to a result" until the docs site took it.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: The tutorial pages, in the order a newcomer follows them (and the blocks run).
TUTORIALS = ("docs/tutorials/first-run.md", "docs/tutorials/first-suite.md")
TUTORIALS_TEXT = "\n".join((PROJECT_ROOT / page).read_text(encoding="utf-8") for page in TUTORIALS)
CONFORMANCE = PROJECT_ROOT.parent / "shared" / "conformance"


def walkthrough_blocks() -> list[str]:
    """The bash blocks marked ``<!-- walkthrough -->``, in tutorial order."""
    return re.findall(r"<!-- walkthrough -->\n```bash\n(.*?)```", TUTORIALS_TEXT, flags=re.DOTALL)


def run_blocks(blocks: list[str], where: Path) -> subprocess.CompletedProcess[str]:
    """Run ``blocks`` as one ``bash -eu`` script in ``where`` (a user's shell: the venv's bin first on PATH)."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "EQ_CHECKOUT": str(PROJECT_ROOT),
        "EVALQUALITY_HOME": str(where / ".home"),
        "COLUMNS": "400",  # a wide terminal: the flow's closing lines are not wrapped mid-path
    }
    script = "set -eu\n" + "\n".join(blocks)
    return subprocess.run(["bash", "-c", script], cwd=where, env=env, capture_output=True, text=True, timeout=600)


def test_the_walkthrough_has_its_blocks() -> None:
    blocks = walkthrough_blocks()
    assert len(blocks) == 4, "worked example, suite init/check, probe request, score + flow"
    assert "eval-quality score" in blocks[0] and "eval-quality suite init" in blocks[1]
    assert "eval-quality probe" in blocks[2] and "flows.contract_strength" in blocks[3]


def test_scoring_the_worked_example_as_the_tutorial_says(tmp_path: Path) -> None:
    if not (CONFORMANCE / "worked-example").is_dir():
        pytest.skip(f"the reference's conformance data is not at {CONFORMANCE}")
    proc = run_blocks(walkthrough_blocks()[:1], tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = "FAIL 2 ['oracle O-004 resolved abstained at or above the severity floor']"
    assert proc.stdout.splitlines() == ["score exited 2", said], proc.stdout
    assert "`score exited 2`" in TUTORIALS_TEXT and said.replace("\n", " ") in " ".join(TUTORIALS_TEXT.split())


@pytest.mark.slow
def test_bring_your_own_system_as_the_tutorial_says(tmp_path: Path) -> None:
    proc = run_blocks(walkthrough_blocks()[1:], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "next: eval-quality suite check my-notes" in out
    assert sum(line.startswith("ok   ") for line in out.splitlines()) == 9, out
    for said in ("0 Groceries", "PASS {'caught': 1, 'exercised': 1, 'rate': 1}",
                 "every probe matched the outcome the baseline records"):
        assert said in out, (said, out[-3000:])
        assert said in " ".join(TUTORIALS_TEXT.split()), said
    assert f"baseline rewritten: {tmp_path.resolve() / 'my-strength.json'}" in out.splitlines(), out[-3000:]
    assert "`baseline rewritten: <full path of my-strength.json>`" in " ".join(TUTORIALS_TEXT.split())
    assert (tmp_path / "my-strength.json").is_file()
    assert not (PROJECT_ROOT / "my-notes").exists(), "nothing is written into the checkout"
