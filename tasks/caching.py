"""The only home of cache settings (style.md §5, prefect.md §3): where state lives and how stage keys are made.

``StageDigest`` is a small ``CachePolicy`` keyed on OUR input digests, the stage (task) name and the
code version, never on Prefect's default policy (whose RUN_ID defeats resume, prefect.md §3). Faults
are never cached: a task that raises ends Failed, and Prefect persists only Completed results. Results
go to an absolute directory under the eval-quality home, so a relative path never resolves against
whatever the working directory happens to be.

The eval-quality home is ``$EVALQUALITY_HOME`` when set; otherwise ``<project>/.evalquality`` when this
package runs from a source checkout (a folder holding ``pyproject.toml``; gitignored), else the user
cache ``~/.cache/eval-quality``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from prefect.cache_policies import CachePolicy

from evalquality_core.canonical.digest import digest_artifact, digest_composite
from evalquality_core.evaluate.pointers import as_wire

#: Bumped when a stage's semantics change, so old cached results stop answering (prefect.md §3 pitfalls).
CODE_VERSION = "preflight-v1"


def evalquality_home() -> Path:
    """The absolute eval-quality home (see the module docstring for the default)."""
    configured = os.environ.get("EVALQUALITY_HOME")
    if configured:
        return Path(configured).expanduser().resolve()
    project = Path(__file__).resolve().parent.parent
    if (project / "pyproject.toml").is_file() and os.access(project, os.W_OK):
        return project / ".evalquality"
    return Path.home() / ".cache" / "eval-quality"


def results_dir() -> Path:
    """Absolute result storage of the digest-cached stages."""
    return evalquality_home() / "results"


def leg_cache_dir() -> Path:
    """The leg cache (diskcache) directory."""
    return evalquality_home() / "leg-cache"


def workspaces_dir() -> Path:
    """Where staged per-leg workspaces are made (and reclaimed after a kill)."""
    return evalquality_home() / "workspaces"


def input_digest(value: Any) -> str:
    """Our digest of one task input: an artifact's digest, or the digest of a list of them.

    A value carrying ``cache_digest`` (a derived product such as a plan) contributes that; anything
    else must be plain JSON or pydantic models.
    """
    digest = getattr(value, "cache_digest", None)
    if isinstance(digest, str):
        return digest
    if is_dataclass(value) and not isinstance(value, type):
        raise TypeError(f"{type(value).__name__} has no cache_digest; it cannot key a cached stage")
    if isinstance(value, (list, tuple)):
        return digest_artifact([input_digest(item) for item in value])
    return digest_artifact(as_wire(value))


@dataclass
class StageDigest(CachePolicy):
    """Cache key = ``<task name>-<code version>-<digest of the named inputs' digests>``; nothing else."""

    inputs: Sequence[str] = field(default_factory=tuple)
    version: str = CODE_VERSION

    def compute_key(
        self, task_ctx: Any, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any
    ) -> str | None:
        """Namespaced by stage so two stages with equal inputs never share a result (prefect.md §3)."""
        fields = {name: input_digest(inputs[name]) for name in self.inputs}
        fields["stage"] = task_ctx.task.name
        fields["version"] = self.version
        return f"{task_ctx.task.name}-{self.version}-{digest_composite(fields).removeprefix('sha256:')}"


def stage_cache(*inputs: str) -> dict[str, Any]:
    """The decorator keywords every digest-cached stage uses: the policy, absolute storage, a json-safe serializer."""
    return {
        "cache_policy": StageDigest(inputs=tuple(inputs)),
        "result_storage": results_dir(),
        "persist_result": True,
    }
