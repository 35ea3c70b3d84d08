"""The only home of cache settings (style.md §5, prefect.md §3): where state lives and how stage keys are made.

``StageDigest`` is a small ``CachePolicy`` keyed on OUR input digests, the stage (task) name and the
code version, never on Prefect's default policy (whose RUN_ID defeats resume, prefect.md §3). Faults
are never cached: a task that raises ends Failed, and Prefect persists only Completed results. Results
go to an absolute directory under the eval-quality home, so a relative path never resolves against
whatever the working directory happens to be.

Every path here lives under the eval-quality home (tasks/home.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from prefect.cache_policies import CachePolicy

from evalquality_core.canonical.digest import digest_artifact, digest_composite
from evalquality_core.evaluate.pointers import as_wire
from tasks.home import evalquality_home

#: Bumped when a stage's semantics change, so old cached results stop answering (prefect.md §3 pitfalls).
CODE_VERSION = "preflight-v1"


def results_dir() -> Path:
    """Absolute result storage of the digest-cached stages."""
    return evalquality_home() / "results"


def leg_cache_dir() -> Path:
    """The leg cache (diskcache) directory."""
    return evalquality_home() / "leg-cache"


def workspaces_dir() -> Path:
    """Where staged per-leg workspaces are made (and reclaimed after a kill)."""
    return evalquality_home() / "workspaces"


def _jsonable(value: Any) -> Any:
    """A derived product (a frozen dataclass such as a plan) as plain JSON, models as their wire form."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return as_wire(value)


def input_digest(value: Any) -> str:
    """Our digest of one task input: the artifact digest of its wire JSON (lists digest item by item)."""
    if isinstance(value, (list, tuple)):
        return digest_artifact([input_digest(item) for item in value])
    return digest_artifact(_jsonable(value))


@dataclass
class StageDigest(CachePolicy):
    """Cache key = ``<task name>-<code version>-<digest of the named inputs' digests>``; nothing else."""

    inputs: Sequence[str] = field(default_factory=tuple)
    version: str = CODE_VERSION

    def compute_key(
        self, task_ctx: Any, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any
    ) -> str | None:
        """Namespaced by stage so two stages with equal inputs never share a result (prefect.md §3)."""
        parts = {name: input_digest(inputs[name]) for name in self.inputs}
        parts["stage"] = task_ctx.task.name
        parts["version"] = self.version
        return f"{task_ctx.task.name}-{self.version}-{digest_composite(parts).removeprefix('sha256:')}"


def stage_cache(*inputs: str) -> dict[str, Any]:
    """The decorator keywords every digest-cached stage uses: the policy, absolute storage, a json-safe serializer."""
    return {
        "cache_policy": StageDigest(inputs=tuple(inputs)),
        "result_storage": results_dir(),
        "persist_result": True,
    }
