"""Waiver completeness (artifacts.md §3.1 #30, §3.5). Compile checks only that a waiver is whole;
what it waives is a scoring matter. ``condition`` may be null."""

from __future__ import annotations

from evalquality_core.compile.plan_index import Json
from evalquality_core.faults import StructuralFailure

#: Fields a waiver must carry, in the order they are checked.
REQUIRED_WAIVER_FIELDS: tuple[str, ...] = ("rule", "rationale", "approval", "expiresAt")


def check_waiver_completeness(contract: Json) -> None:
    """#30 ``waiver-incomplete``: ``rule``, ``rationale``, ``approval`` or ``expiresAt`` is null."""
    for waiver in contract.get("waivers") or []:
        for field in REQUIRED_WAIVER_FIELDS:
            if waiver.get(field) is None:
                raise StructuralFailure(
                    "waiver-incomplete",
                    f"EvalContract.waivers[id={waiver.get('id')}].{field}",
                    f"the waiver declares no {field}",
                )
