"""What an evaluator may never be handed (artifacts.md §3.1 #27, #29; AD-16).

Every contract must declare all seven forbidden inputs (#27). A contract may not scope resources
an evaluator could resolve (#29): any ``scopedResources`` entry, or any ``testData.resources`` key,
fails (the first resource key in UTF-16 order is named, so the report never depends on map order).
"""

from __future__ import annotations

import json

from evalquality_core.compile.plan_index import Json
from evalquality_core.compile.strings import utf16_sorted
from evalquality_core.faults import StructuralFailure
from evalquality_core.registries import FORBIDDEN_INPUT_FLOOR


def check_forbidden_input_floor(contract: Json) -> None:
    """#27 ``forbidden-input-floor-incomplete``: one of the seven floor names is missing."""
    declared = set(contract.get("forbiddenInputs") or [])
    missing = [name for name in FORBIDDEN_INPUT_FLOOR if name not in declared]
    if missing:
        raise StructuralFailure(
            "forbidden-input-floor-incomplete",
            "EvalContract.forbiddenInputs",
            f"the forbidden-input floor is incomplete; missing: {', '.join(missing)}",
        )


def check_scoped_resource_references(contract: Json) -> None:
    """#29 ``scoped-reference-resolves-forbidden``: any scoped resource, else any test-data resource."""
    if contract.get("scopedResources"):
        raise StructuralFailure(
            "scoped-reference-resolves-forbidden",
            "EvalContract.scopedResources[0].reference",
            "a scoped resource reference would hand the evaluator something it may resolve",
        )
    resources = (contract.get("testData") or {}).get("resources") or {}
    if resources:
        first = utf16_sorted(resources)[0]
        raise StructuralFailure(
            "scoped-reference-resolves-forbidden",
            f"EvalContract.testData.resources[{json.dumps(first, ensure_ascii=False)}]",
            f'test-data resource "{first}" would hand the evaluator something it may resolve',
        )
