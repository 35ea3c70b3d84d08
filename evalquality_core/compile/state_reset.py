"""#34 state-reset pointers (8.0.0): every ``stateResetPointers`` entry must compare something.

The pre-flight ``state-reset`` check compares only the values an operation's ``stateResetPointers``
reach, in the body the projection has already pruned of ``volatilePointers``
(``preflight/projection.py``). An entry that would quietly compare nothing is refused as
``unreachable-check-evidence`` at ``EvalContract.permittedInterfaces[i].operations[j].stateResetPointers[k]``:

* one a volatile pointer covers (the pruned body never holds it); the message names that volatile
  pointer. Covering is one rule with the witness volatility check: a volatile ``*`` covers any one
  token, a state-reset ``*`` (every key) is covered only by a volatile ``*``, and a volatile pointer
  *below* the entry (``/a/*`` under ``/a``) leaves the entry alone, since ``/a`` still compares the rest;
* one the response descriptor cannot reach: its first token is neither a declared key nor an index
  into a declared root collection, or it descends into a key declared scalar. A ``*`` first token is
  reachable when the descriptor declares any key it could descend through (or a root collection).

The empty pointer (the whole body) and the empty list are accepted. The reference's test of this rule
was read for its cases only (which entries are refused, the code, the path, the wording).
"""

from __future__ import annotations

from evalquality_core.compile.plan_index import Json, declared_keys, iter_operations
from evalquality_core.compile.pointers import descriptor_tokens
from evalquality_core.compile.reachability import SCALAR_TYPES, descriptor_reason
from evalquality_core.faults import StructuralFailure
from evalquality_core.preflight.projection import WILDCARD, covering_pointer

__all__ = ["check_state_reset_pointers"]


def _wildcard_reason(tokens: tuple[str, ...], descriptor: Json) -> str | None:
    """Why a ``*`` first token reaches nothing through the descriptor, or ``None`` when it reaches a key."""
    root_collection = any(location.get("pointer") == "" for location in descriptor.get("collectionLocations") or [])
    types = descriptor.get("types") or {}
    keys = [key for key in declared_keys(descriptor) if len(tokens) == 1 or types.get(key) not in SCALAR_TYPES]
    if keys or root_collection:
        return None
    return "reads any key of the response, and the response descriptor declares none it could descend through"


def _reason(pointer: str, descriptor: Json) -> str | None:
    tokens = descriptor_tokens(pointer)
    if tokens and tokens[0] == WILDCARD:
        return _wildcard_reason(tokens, descriptor)
    return descriptor_reason(tokens, descriptor, "response")


def check_state_reset_pointers(contract: Json) -> None:
    """#34 ``unreachable-check-evidence``: a state-reset pointer covered by a volatile one, or unreachable."""
    for i, j, ref in iter_operations(contract):
        pointers = ref.operation.get("stateResetPointers") or []
        volatile = [p for p in ref.operation.get("volatilePointers") or [] if isinstance(p, str)]
        for k, pointer in enumerate(pointers):
            where = f"EvalContract.permittedInterfaces[{i}].operations[{j}].stateResetPointers[{k}]"
            covering = covering_pointer(pointer, volatile)
            if covering is not None:
                raise StructuralFailure(
                    "unreachable-check-evidence",
                    where,
                    f'state-reset pointer "{pointer}" lies at or below "{covering}", which the operation declares '
                    "volatile: the projection prunes it, so it compares nothing",
                )
            reason = _reason(pointer, ref.response_descriptor)
            if reason is not None:
                raise StructuralFailure(
                    "unreachable-check-evidence",
                    where,
                    f'state-reset pointer "{pointer}" {reason}, so it compares nothing',
                )
