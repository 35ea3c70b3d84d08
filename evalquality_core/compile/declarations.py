"""Behaviour declarations (artifacts.md §3.1 #2, #3)."""

from __future__ import annotations

from evalquality_core.compile.plan_index import Json
from evalquality_core.faults import StructuralFailure


def check_requirement_linkage(contract: Json) -> None:
    """#2 ``missing-requirement-linkage``: a behaviour links neither a requirement nor a risk."""
    for behavior in contract.get("behaviors") or []:
        if not behavior.get("requirementLinks") and not behavior.get("riskLinks"):
            raise StructuralFailure(
                "missing-requirement-linkage",
                f"EvalContract.behaviors[id={behavior.get('id')}]",
                "declares neither a requirementLinks nor a riskLinks entry (AD-19)",
            )


def check_observable_success_criterion(contract: Json) -> None:
    """#3 ``no-observable-success-criterion``: a behaviour's criterion is ``null``.

    Only ``null`` fires; an empty ``oracles`` list on the behaviour is not this check's concern.
    """
    for behavior in contract.get("behaviors") or []:
        if behavior.get("observableSuccessCriterion") is None:
            raise StructuralFailure(
                "no-observable-success-criterion",
                f"EvalContract.behaviors[id={behavior.get('id')}].observableSuccessCriterion",
                "declares no observable success criterion (AD-19)",
            )
