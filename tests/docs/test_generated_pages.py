"""The generated reference pages equal a fresh generation from the code (``python -m docsgen``), and every
``EVALQUALITY_*`` variable the product reads is documented."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from docsgen.__main__ import generated_pages
from docsgen.environment import EVALQUALITY_VARIABLES
from tests.conftest import PROJECT_ROOT

#: The product's own sources (the documentation, tests and benchmarks are not the product).
PRODUCT = ("evalquality_core", "flows", "tasks", "deployments", "corpus")


@pytest.mark.parametrize("page", sorted(generated_pages()))
def test_the_page_equals_a_fresh_generation(page: str) -> None:
    committed = (PROJECT_ROOT / "docs" / page).read_text(encoding="utf-8")
    assert committed == generated_pages()[page], f"docs/{page} is stale: run python -m docsgen"


def test_docsgen_check_passes_on_the_checkout_as_a_child_process() -> None:
    done = subprocess.run([sys.executable, "-m", "docsgen", "--check"], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def test_every_variable_the_product_reads_is_documented_and_none_other() -> None:
    read = set()
    for package in PRODUCT:
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            read.update(re.findall(r"\bEVALQUALITY_[A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")))
    assert {variable.name for variable in EVALQUALITY_VARIABLES} == read


def test_the_cli_help_page_lists_every_command_and_flag() -> None:
    from evalquality_core.cli.main import _load_commands, cli

    _load_commands()
    page = generated_pages()["reference/cli-help.md"]
    for name, command in cli.commands.items():
        assert f"## `eval-quality {name}`" in page, name
        for parameter in command.params:
            for option in getattr(parameter, "opts", []):
                if option.startswith("-"):
                    assert option in page, (name, option)


def test_the_exit_code_page_names_every_cli_code_once() -> None:
    from evalquality_core.registries import EXIT_CODES

    page = generated_pages()["reference/exit-codes.md"]
    cli_table = page[page.index("## `eval-quality`"):page.index("## `python -m flows")]
    assert [int(code) for code in re.findall(r"^\| (\d+) \|", cli_table, flags=re.MULTILINE)] == list(EXIT_CODES)
