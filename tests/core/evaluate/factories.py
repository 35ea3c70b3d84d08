"""Small builders for synthetic observations and contracts in the evaluate tests (wire dicts)."""

from __future__ import annotations

from typing import Any

from evalquality_core.evaluate import ResolutionContext

NULL_INPUTS = {
    "path": None,
    "query": None,
    "header": None,
    "body": None,
    "argument": None,
    "option": None,
    "environment": None,
    "stdin": None,
}


def observation(
    observation_id: str = "obs-1",
    sequence: int = 1,
    operation_id: str = "op",
    *,
    body: Any = None,
    headers: Any = None,
    status: int | None = None,
    stdout: Any = None,
    stderr: Any = None,
    exit_code: int | None = None,
    artifacts: dict[str, Any] | None = None,
    call_inputs: dict[str, Any] | None = None,
    provenance: str = "evaluator-chosen",
) -> dict[str, Any]:
    """A record observation (schema 4 shape) with every channel settable."""
    return {
        "observationId": observation_id,
        "sequence": sequence,
        "operationId": operation_id,
        "provenance": provenance,
        "principal": None,
        "callInputs": {**NULL_INPUTS, **(call_inputs or {})},
        "responseBody": body,
        "responseHeaders": headers,
        "responseStatus": status,
        "stdout": stdout if stdout is not None else {"kind": "absent"},
        "stderr": stderr if stderr is not None else {"kind": "absent"},
        "exitCode": exit_code,
        "artifacts": artifacts or {},
    }


def context(
    bound: dict[str, Any],
    *,
    collections: frozenset[tuple[str, tuple[str, ...]]] = frozenset(),
    reference_sets: dict[str, Any] | None = None,
    budget: int = 1_000_000,
) -> ResolutionContext:
    """A resolution context over a step → observation map."""
    return ResolutionContext(
        bound=bound,
        reference_sets=reference_sets or {},
        collection_locations=collections,
        regex_step_budget=budget,
        artifact_path="EvalContract.oracles[id=O-001].check",
    )


def ptr(path: str) -> dict[str, str]:
    """A pointer operand."""
    return {"pointer": path}


def lit(value: Any) -> dict[str, Any]:
    """A literal operand."""
    return {"literal": value}


def leaf(op: str, *operands: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A leaf expression."""
    return {"op": op, "operands": list(operands), **extra}
