"""A mutant's text is spliced into the file where that provably equals re-rendering the whole tree
(evalquality_core/mutants/operators.py ``_renderer``): every candidate of every corpus system, and of
sources written to stress the rule (nesting, tabs, CRLF, non-ASCII, multi-line statements), renders the
same both ways, and most are spliced (else the fast path would be dead code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalquality_core.mutants.operators import candidates
from evalquality_core.suite.mutants import system_sources

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = sorted(d for d in (ROOT / "corpus" / "suites").iterdir() if (d / "system").is_dir())

STRESS = {
    "nested": (
        "def f(xs, limit=3):\n"
        "    total = 0\n"
        "    for x in xs:\n"
        "        if x > limit and not x == 7:\n"
        "            total += x  # keep\n"
        "        elif x < -1 or x is None:\n"
        "            continue\n"
        "        else:\n"
        "            while total >= 10:\n"
        "                total -= 1; break\n"
        "    return total\n"
    ),
    "tabs-and-unicode": "def g(a):\n\tif a != 'é' and a <= 2:\n\t\treturn a + 1\n\treturn 'ünï' * (a - 1)\n",
    "crlf": "x = 1\r\nif x == 1:\r\n    x = x + 2\r\nprint(x > 0)\r\n",
    "multi-line": (
        "values = [\n    1 + 2,\n    3 - 4,\n]\n"
        "if (values[0] > 1 and\n        values[1] < 0):\n    values.append(values[0] * 2)\n"
        "result = call(\n    a=1 == 1,\n    b=not values,\n)\n"
    ),
    "no-final-newline": "def h(a):\n    return a >= 1 and a < 9",
    # Characters str.splitlines() splits at but Python does not: a wrong line count would shift every
    # later offset onto the same code one line off (the repeated line), and splice the wrong place.
    "form-feed": "s = 'a\x0cb'\nx = y + 1\nx = y + 1\nprint(x == 2)\n",
    "line-separator": "s = 'a\u2028b'  # \u2029\nx = y + 1\nx = y + 1\nx = y + 1\nprint(x == 2)\n",
}


def _both_ways(text: str) -> tuple[int, int]:
    fast = [render() for _, render in candidates(text)]
    slow = [render() for _, render in candidates(text, splice=False)]
    assert len(fast) == len(slow)
    for index, (spliced, whole) in enumerate(zip(fast, slow, strict=True)):
        assert spliced == whole, f"candidate {index}"
    return len(fast), sum(spliced != text for spliced in fast)


@pytest.mark.parametrize("suite", SYSTEMS, ids=lambda d: d.name)
def test_every_corpus_candidate_renders_the_same_spliced_or_re_rendered(suite: Path) -> None:
    for target, text in system_sources(suite).items():
        count, changed = _both_ways(text)
        assert count == changed, f"{target}: a candidate that changes nothing"


@pytest.mark.parametrize("name", sorted(STRESS))
def test_stress_sources_render_the_same_both_ways(name: str) -> None:
    count, _ = _both_ways(STRESS[name])
    assert count > 0


def test_most_candidates_take_the_splice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count the whole-tree re-renders on the largest corpus system: a minority, not every candidate."""
    import libcst as cst

    text = system_sources(ROOT / "corpus" / "suites" / "notes")["system/notes.py"]
    calls: list[int] = []
    original = cst.Module.deep_replace

    def counted(self: cst.Module, old: cst.CSTNode, new: cst.CSTNode) -> cst.CSTNode:
        calls.append(1)
        return original(self, old, new)

    monkeypatch.setattr(cst.Module, "deep_replace", counted)
    total = sum(1 for _, render in candidates(text) if render() is not None)
    assert total > 50 and len(calls) < total / 2, (len(calls), total)
