"""Compile (artifacts.md §3): ``compile_contract`` and its ordered CHECKS table."""

from evalquality_core.compile.pipeline import (
    CHECKS,
    CheckRow,
    compile_contract,
    compile_with_wire,
    run_checks,
)

__all__ = ["CHECKS", "CheckRow", "compile_contract", "compile_with_wire", "run_checks"]
