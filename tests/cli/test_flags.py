"""§7.2's missing-value rule: a flag-like token after a value flag in the space form is a missing value."""

from __future__ import annotations

import pytest

from evalquality_core.cli.flags import flag_missing_its_value

VALUE_FLAGS = {"--out", "--contract", "--record"}

ROWS = [
    (["--out", "--strict"], ("--out", "--strict")),
    (["--record", "a.json", "--contract", "--record", "b.json"], ("--contract", "--record")),
    (["--contract", "-h"], ("--contract", "-h")),
    (["--contract", "-"], None),  # a lone "-" is stdin, a value
    (["--out=--strict"], None),  # the = form carries any value
    (["--strict", "--out", "x.json"], None),  # --strict takes no value
    (["--", "--out", "--x"], None),  # nothing after "--" is a flag
    (["--out"], None),  # no next token: click reports the missing value itself
]


@pytest.mark.parametrize(("args", "expected"), ROWS, ids=[" ".join(args) for args, _ in ROWS])
def test_flag_missing_its_value(args: list[str], expected: tuple[str, str] | None) -> None:
    assert flag_missing_its_value(args, VALUE_FLAGS) == expected
