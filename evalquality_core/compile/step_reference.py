"""Step-reference reducibility (artifacts.md §3.1 #31, §4.3).

The one check about what a *later* stage cannot do: the seal prose must be able to tell apart two
steps of one operation that a direction references. It runs the real renderer, so compile and seal
can never disagree; its failure is re-addressed to the direction that needs the distinction.
Anything else the renderer refuses (an unresolvable target) is left to ``seal``.
"""

from __future__ import annotations

from evalquality_core.compile.plan_index import Json, PlanIndex
from evalquality_core.faults import StructuralFailure


def check_step_reference_reducibility(contract: Json) -> None:
    """#31 ``irreducible-step-reference`` at ``EvalContract.oracles[id=X].direction.evidenceTargets``."""
    # Imported here: seal builds on compile, so a module-level import would be circular.
    from evalquality_core.seal.directions import DirectionRenderer, SealRefusal

    renderer = DirectionRenderer(PlanIndex(contract))
    for oracle in contract.get("oracles") or []:
        direction = oracle.get("direction")
        if not isinstance(direction, dict):
            continue
        try:
            renderer.evidence_references(list(direction.get("evidenceTargets") or []))
        except SealRefusal:
            continue
        except StructuralFailure as failure:
            if failure.code != "irreducible-step-reference":
                raise
            raise StructuralFailure(
                "irreducible-step-reference",
                f"EvalContract.oracles[id={oracle.get('id')}].direction.evidenceTargets",
                failure.detail,
            ) from None
