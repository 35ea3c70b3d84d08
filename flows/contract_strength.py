"""@flow contract_strength: live pre-flight, then score every probe's trials, seal, aggregate, report.

Skeleton: the body lands as the pre-flight and scoring tasks land.
"""

from __future__ import annotations

from prefect import flow


@flow(name="contract-strength")
def contract_strength(
    suites: list[str] | None = None,
    corpus: str | None = None,
    out: str | None = None,
    update_baseline: bool = False,
) -> int:
    """Run every suite's contract-strength measurement and return the gate's exit code."""
    raise NotImplementedError
