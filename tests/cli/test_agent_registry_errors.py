"""A bad agent key in ``targets.toml`` (issue 34) through the real CLI: ``eval-quality suite check`` names
the file, the table and the key on one line, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalquality_core.suite.init import copy_starter
from tests.cli.suite_cli import eq, one_line


@pytest.mark.parametrize(("find", "replace", "names"), [
    ("standin = 2", "standin = 0", ["[vendors] standin", "1 to 1000"]),
    ('vendor = "standin"', 'vendor = "acme"', ["target[0]", "vendor 'acme'", "[vendors]"]),
    ("parser = [6]", "parser = [4]", ["target[0]", "exit 4", "transport", "parser"]),
    ("attempts = 3", "attempts = 11", ["target[0]", "retry.attempts", "1 to 10"]),
])
def test_a_bad_agent_key_is_one_line_naming_file_table_and_key(
    tmp_path: Path, find: str, replace: str, names: list[str]
) -> None:
    suite = copy_starter("agent", tmp_path / "mine")
    registry = suite / "targets.toml"
    text = registry.read_text()
    assert text.count(find) == 1
    registry.write_text(text.replace(find, replace))
    proc = eq("suite", "check", str(suite), cwd=tmp_path)
    one_line(proc, 2, "registry", "schema-parse-failure", str(registry), *names)
