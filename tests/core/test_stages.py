"""The stage table (``evalquality_core.stages``) names real functions, and the docs page shows it verbatim."""

from __future__ import annotations

import importlib
import inspect

from evalquality_core.stages import STAGES, readme_table
from tests.conftest import PROJECT_ROOT


def test_every_stage_function_exists_in_its_module() -> None:
    for row in STAGES:
        module = importlib.import_module(row.module)
        function = getattr(module, row.function, None)
        assert callable(function), f"{row.module}.{row.function} is not callable"
        assert inspect.getdoc(function), f"{row.module}.{row.function} has no docstring"


def test_the_docs_show_the_stage_table() -> None:
    page = (PROJECT_ROOT / "docs" / "reference" / "stages.md").read_text(encoding="utf-8")
    assert readme_table() in page, "docs/reference/stages.md differs from evalquality_core.stages (python -m docsgen)"


def test_stage_modules_are_prefect_free() -> None:
    for row in STAGES:
        source = inspect.getsource(importlib.import_module(row.module))
        assert "import prefect" not in source and "from prefect" not in source
