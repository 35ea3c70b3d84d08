"""Oracle channels and alignment (artifacts.md §3.1 #16, #17; AD-3).

An oracle states its claim twice: as prose-ready ``direction`` and as the machine ``check``. #17
requires them to agree: every evidence target is read by the check (``@/…`` pointers count as the
enclosing quantifier's collection pointer plus their tail; a ``set-membership`` contributes only
its value pointer), the direction's relation occurs somewhere in the check tree, and the two
polarities are equal.
"""

from __future__ import annotations

from evalquality_core.compile.check_tree import iter_expressions, iter_pointers, substitute_bound
from evalquality_core.compile.plan_index import Json
from evalquality_core.faults import StructuralFailure


def check_oracle_channel(contract: Json) -> None:
    """#16 ``oracle-missing-channel``: ``direction`` or ``check`` is null (direction reported first)."""
    for oracle in contract.get("oracles") or []:
        for channel in ("direction", "check"):
            if oracle.get(channel) is None:
                raise StructuralFailure(
                    "oracle-missing-channel",
                    f"EvalContract.oracles[id={oracle.get('id')}].{channel}",
                    f"the oracle declares no {channel}",
                )


def check_pointers(check: Json, path: str) -> set[str]:
    """The pointers a check reads, for alignment: ``@`` substituted, set positions skipped."""
    pointers: set[str] = set()
    for visit in iter_pointers(check, path):
        if visit.owner.get("op") == "set-membership" and visit.position != 0:
            continue
        resolved = substitute_bound(visit.operand["pointer"], visit.enclosing)
        if resolved is not None:
            pointers.add(resolved)
    return pointers


def check_oracle_alignment(contract: Json) -> None:
    """#17 ``direction-check-misaligned`` (targets, then relation, then polarity, per oracle)."""
    for oracle in contract.get("oracles") or []:
        direction, check = oracle.get("direction"), oracle.get("check")
        if not isinstance(direction, dict) or not isinstance(check, dict):
            continue
        path = f"EvalContract.oracles[id={oracle.get('id')}]"
        read = check_pointers(check, f"{path}.check")
        for target in direction.get("evidenceTargets") or []:
            if target not in read:
                raise StructuralFailure(
                    "direction-check-misaligned",
                    f"{path}.direction.evidenceTargets",
                    f'"{target}" is not contained in check, even after quantifier substitution (AD-3)',
                )
        ops = {visit.node.get("op") for visit in iter_expressions(check, f"{path}.check")}
        if direction.get("relation") not in ops:
            raise StructuralFailure(
                "direction-check-misaligned",
                f"{path}.direction.relation",
                f'relation "{direction.get("relation")}" occurs nowhere in the check',
            )
        if direction.get("polarity") != oracle.get("polarity"):
            raise StructuralFailure(
                "direction-check-misaligned",
                f"{path}.direction.polarity",
                f'direction polarity "{direction.get("polarity")}" differs from the oracle polarity "{oracle.get("polarity")}"',
            )
