"""A command's outcome → exit code: the one total function of preflight-adapter.md §7.4."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evalquality_core.registries import (
    EXIT_CONCERNS_STRICT,
    EXIT_INVALID,
    EXIT_RUNTIME_FAULT,
    EXIT_STRUCTURAL,
    EXIT_SUCCESS,
    EXIT_USAGE,
)


@dataclass(frozen=True)
class CommandOutcome:
    """What a command ended with. ``kind`` selects which other fields matter."""

    kind: Literal["artifact", "preflight", "verdict", "structural-failure", "fault", "usage-error"]
    passed: bool = True
    verdict: str | None = None
    exit_code: int = 0
    strict_promotable: bool = False


def exit_code_of(outcome: CommandOutcome, *, strict: bool = False) -> int:
    """Map a command outcome to its process exit code."""
    match outcome.kind:
        case "artifact":
            return EXIT_SUCCESS
        case "preflight":
            return EXIT_SUCCESS if outcome.passed else EXIT_INVALID
        case "verdict":
            if strict and outcome.verdict == "CONCERNS" and outcome.strict_promotable:
                return EXIT_CONCERNS_STRICT
            return outcome.exit_code
        case "structural-failure":
            return EXIT_STRUCTURAL
        case "fault":
            return EXIT_RUNTIME_FAULT
        case "usage-error":
            return EXIT_USAGE
