"""The mutant tasks: ``record-coverage``, ``run-plan`` and the stores they and the mutants flow keep.

* ``run-plan`` runs the contract's interaction plan, in order, in ONE fresh workspace staged clean or
  with one mutant (a plan's steps share state: a write, then its read-back), and answers from the
  **plan cache** when the same plan already ran against the same staged system. Key: the planned
  requests + the suite's registry text + the staged digest (system and fixtures) + the tool version,
  like a leg key. The store is the leg cache's SQLite store (``<leg cache>/plans/legs.sqlite3``: the
  same single-flight claims and crash safety); each entry is canonical JSON carrying the digests of its
  key and record, verified on every read (an entry that fails is discarded and the plan runs again).
* **Mutant outcomes are remembered, faults included.** The leg cache never caches a fault (a timeout
  may be the machine's), so a mutant whose leg timed out would spawn again on every run. For mutants a
  timeout is the finding (Timeout), so ``<leg cache>/mutant-faults/`` remembers a mutant leg's fault by
  its leg key, and a plan run's fault is stored in its plan-cache entry; ``--force`` runs them again.
* ``record-coverage`` records per-leg line coverage of the clean system once
  (evalquality_core/suite/line_coverage.py) and keeps it as ``<leg cache>/coverage/<key>.json``, keyed
  like the legs it traced (their requests, the staged clean digest, the registry, the tool version).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from evalquality_core.canonical.digest import digest_artifact, digest_composite
from evalquality_core.canonical.json import canonical_bytes
from evalquality_core.faults import EvalQualityFault
from evalquality_core.suite.load import Mutation, StagingError, read_suite_bytes
from evalquality_core.suite.staging import stage_workspace
from tasks.leg_cache import SqliteLegStore
from tasks.preflight import tool_version

PLAN_ENTRY_FORMAT = "eval-quality/plan-cache-entry/v1"


def stage_mutant(directory: Path, mutation: Mutation | None, destination: Path) -> Any:
    """Stage a workspace holding the clean system (``mutation`` None) or one generated mutant."""
    return stage_workspace(directory, destination, mutation)


def plan_key(requests: Sequence[Mapping[str, Any]], targets_text: str, staged_digest: str) -> str:
    """The plan cache key (module docstring)."""
    return digest_composite(
        {"plan": list(requests), "targets": targets_text, "staged": staged_digest, "tool": tool_version()}
    ).removeprefix("sha256:")


def _encode(key: str, record: Mapping[str, Any]) -> str:
    return canonical_bytes({"format": PLAN_ENTRY_FORMAT, "key": key, "record": dict(record),
                            "recordDigest": digest_artifact(dict(record))}).decode("utf-8")


def _decode(key: str, text: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(text)
        if entry.get("format") != PLAN_ENTRY_FORMAT or entry.get("key") != key:
            return None
        if digest_artifact(entry["record"]) != entry.get("recordDigest"):
            return None
        record = entry["record"]
        if not isinstance(record.get("observations"), list) and not isinstance(record.get("fault"), dict):
            return None
        return record  # type: ignore[no-any-return]
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


@dataclass(frozen=True)
class PlanAnswer:
    """A plan run's observations (record shape) or its fault; ``source`` spawned or cache."""

    observations: list[dict[str, Any]] | None
    fault: dict[str, str] | None
    source: str
    key: str


def _run_plan_live(suite: Any, mutation: Mutation | None) -> dict[str, Any]:
    from evalquality_core.suite.evaluator import run_staged

    try:
        _, observations, _ = run_staged(suite, mutation)
    except EvalQualityFault as fault:
        return {"fault": {"code": fault.code, "detail": f"{fault.artifact_path}: {fault.detail}"}}
    return {"observations": observations}


@task(name="run-plan", task_run_name="{suite_name}/{mutant_id}/plan", cache_policy=NO_CACHE, persist_result=False)
def run_plan_task(
    suite_name: str, mutant_id: str, suite: Any, mutation: Mutation | None, key: str, cache_dir: str, force: bool = False
) -> PlanAnswer:
    """Answer one plan run from the plan cache, or run it live once (module docstring)."""
    store = plan_store(cache_dir)
    if True:  # one store per cache directory and process (opening checks the database)
        if not force:
            text = store.get(key)
            record = None if text is None else _decode(key, text)
            if record is not None:
                return PlanAnswer(record.get("observations"), record.get("fault"), "cache", key)
        with store.claim(key):
            text = store.get(key)
            record = None if (text is None or force) else _decode(key, text)
            if record is not None:
                return PlanAnswer(record.get("observations"), record.get("fault"), "cache", key)
            record = _run_plan_live(suite, mutation)
            store.put(key, _encode(key, record))
        return PlanAnswer(record.get("observations"), record.get("fault"), "spawned", key)


_STORES: dict[str, SqliteLegStore] = {}
_STORES_GUARD = threading.Lock()


def plan_store(cache_dir: str) -> SqliteLegStore:
    """The plan cache's store under ``cache_dir`` (opened once per process)."""
    with _STORES_GUARD:
        store = _STORES.get(cache_dir)
        if store is None:
            store = _STORES[cache_dir] = SqliteLegStore(Path(cache_dir) / "plans")
        return store


def close_plan_store(cache_dir: str) -> None:
    """Close the plan cache's store (after a flow run)."""
    with _STORES_GUARD:
        store = _STORES.pop(cache_dir, None)
    if store is not None:
        store.close()


# ------------------------------------------------------------------ remembered mutant-leg faults


def _fault_path(cache_dir: str, key: str) -> Path:
    return Path(cache_dir) / "mutant-faults" / f"{key}.json"


def remembered_fault(cache_dir: str, key: str) -> dict[str, str] | None:
    """The fault a mutant leg with this key raised in an earlier run, if it is remembered."""
    path = _fault_path(cache_dir, key)
    try:
        # The suite reader: a regular file under the input cap only, so a FIFO or a huge file planted
        # in the cache neither hangs nor floods the run; anything it refuses is simply not remembered.
        value = json.loads(read_suite_bytes(path))
    except (StagingError, ValueError):
        return None
    if isinstance(value, dict) and value.get("key") == key and isinstance(value.get("code"), str):
        return {"code": value["code"], "detail": str(value.get("detail", ""))}
    return None


def remember_fault(cache_dir: str, key: str, code: str, detail: str) -> None:
    """Remember a mutant leg's fault (written beside and renamed: never half a file)."""
    path = _fault_path(cache_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps({"key": key, "code": code, "detail": detail}), encoding="utf-8")
    os.replace(partial, path)


# ------------------------------------------------------------------ coverage, recorded once


def coverage_key(legs: Sequence[tuple[str, Mapping[str, Any]]], targets_text: str, staged_digest: str) -> str:
    """The key of a suite's recorded coverage (module docstring)."""
    return digest_composite({
        "legs": [[leg_id, {**request, "probeId": ""}] for leg_id, request in legs],
        "targets": targets_text, "staged": staged_digest, "tool": tool_version(),
    }).removeprefix("sha256:")


@task(name="record-coverage", task_run_name="{suite_name}/coverage", cache_policy=NO_CACHE, persist_result=False)
def record_coverage_task(
    suite_name: str, suite: Any, legs: Sequence[tuple[str, Mapping[str, Any]]], key: str, cache_dir: str
) -> tuple[dict[str, Any] | None, str]:
    """Per-run line coverage of the clean system and whether it was ``recorded`` now or read from ``cache``."""
    from evalquality_core.suite.line_coverage import record_coverage

    path = Path(cache_dir) / "coverage" / f"{key}.json"
    try:
        value = json.loads(read_suite_bytes(path))  # regular file under the cap only (see remembered_fault)
        if value.get("key") == key and isinstance(value.get("runs"), dict):
            return value["runs"], "cache"
    except (StagingError, ValueError, AttributeError):
        pass
    runs = record_coverage(suite, legs)
    if runs is None:
        return None, "untraceable"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps({"key": key, "runs": runs}), encoding="utf-8")
    os.replace(partial, path)
    return runs, "recorded"


@task(name="qualify-derived", task_run_name="{suite_name}/{mutant_id}/derive", cache_policy=NO_CACHE, persist_result=False)
def qualify_derived_task(
    suite_name: str, mutant_id: str, directory: str, probe: dict[str, Any], mutation: dict[str, Any]
) -> tuple[bool, str, bytes | None]:
    """Qualify one derived probe with the suite's generator cycle (evalquality_core/suite/mutants.py)."""
    from evalquality_core.suite.mutants import qualify_derived

    return qualify_derived(directory, probe, mutation)
