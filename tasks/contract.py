"""The ``compile`` and ``seal`` tasks: thin wrappers over the core stages, digest-cached (tasks/caching.py).

Each body loads its input, makes one core call and returns the artifact; a structural failure or a
fault fails the task and is never cached.
"""

from __future__ import annotations

from typing import Any

from prefect import task

from tasks.caching import stage_cache, verified_stage


@verified_stage
@task(name="compile", **stage_cache("authored"))
def compile_task(authored: Any) -> Any:
    """Compile an authored contract (wire JSON) into an ``EvalContract`` (artifacts.md §3)."""
    from evalquality_core.compile.pipeline import compile_contract

    return compile_contract(authored)


@verified_stage
@task(name="seal", **stage_cache("contract"))
def seal_task(contract: Any) -> Any:
    """Seal a compiled contract into the ``SealedEvaluatorBrief`` an evaluator may see (artifacts.md §4)."""
    from evalquality_core.seal.seal import seal

    return seal(contract)
