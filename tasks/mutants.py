"""The mutant tasks: ``record-coverage``, ``run-plan`` and the stores they and the mutants flow keep.

* ``run-plan`` runs the contract's interaction plan, in order, in ONE fresh workspace staged clean or
  with one mutant (a plan's steps share state: a write, then its read-back), and answers from the
  **plan cache** when the same plan already ran against the same staged system. Key: the planned
  requests + the suite's registry text + the staged digest (system and fixtures) + the tool version,
  like a leg key. The store is the leg cache's SQLite store (``<leg cache>/plans/legs.sqlite3``: the
  same single-flight claims and crash safety); each entry is canonical JSON carrying the digests of its
  key and record, verified on every read (an entry that fails is discarded and the plan runs again).
* **The outcome store** (``<leg cache>/mutant-outcomes/``, the same SQLite store and entry rules as the
  plan cache) keeps, per mutant, what its runs answered: each covering leg's observation or fault and
  its plan run's observations or fault. Key (``outcome_key``): the mutated file's path and its bytes
  after the mutation, the mutant's ``find``/``replace``, per covering run ``run_identity`` (run id,
  request(s) with the leg id blanked, the clean system's ``channels_of`` answer on it), and
  ``outcome_context`` (the registry text, the staged fixtures' digest, the interpreter identity, the
  tool version). Oracles never enter it: a changed oracle re-classifies stored observations. An entry
  that fails verification (format, key, record digest, shape) is deleted and the mutant runs again.
* **Mutant-leg faults are remembered** in the same store, one verified entry per leg key
  (``remember_fault``): the leg cache never caches a fault (a timeout may be the machine's), but for a
  mutant a timeout is the finding (Timeout), and a leg whose request is unchanged should not burn its
  budget again when another leg of the mutant changed. They are bound to their key by the entry's
  key and record digest, never by a file name (the old ``mutant-faults/<key>.json`` files are not
  read). A plan run's fault is stored in its plan-cache entry. ``--force`` runs them again.
* **The generation cache** (``<leg cache>/generations/``, ``cached_generation``): key = every system
  source (path and text) + the generation settings + the tool version; the record is the generation
  without the mutated texts, which are rebuilt from the sources after checking each kept mutant's
  source digest, id and edit. A tampered, truncated or unfitting entry is discarded and regenerated.
* ``record-coverage`` records per-leg line coverage of the clean system once
  (evalquality_core/suite/line_coverage.py) and keeps it as a verified entry of ``<leg cache>/coverage/``, keyed
  like the legs it traced (their requests, the staged clean digest, the registry, the tool version).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from evalquality_core.canonical import digest_bytes
from evalquality_core.canonical.digest import digest_artifact, digest_composite
from evalquality_core.canonical.json import canonical_bytes
from evalquality_core.faults import EvalQualityFault
from evalquality_core.mutants.classify import RunOutcome, channels_of
from evalquality_core.mutants.generate import Generation, generate, generation_from_record, generation_record
from evalquality_core.suite.load import Mutation
from evalquality_core.suite.mutants import system_sources
from evalquality_core.suite.staging import default_store, stage_workspace
from tasks.leg_cache import SqliteLegStore
from tasks.preflight import interpreter_identity, tool_version

PLAN_ENTRY_FORMAT = "eval-quality/plan-cache-entry/v1"


def stage_mutant(directory: Path, mutation: Mutation | None, destination: Path) -> Any:
    """Stage a workspace holding the clean system (``mutation`` None) or one generated mutant, its
    dependency layers linked from the home's store (``spawn-leg`` checks them after the leg); a mutant
    of a file in a layer gets that layer stored apart (evalquality_core/suite/layers.py)."""
    return stage_workspace(directory, destination, mutation, layers=default_store())


def plan_key(requests: Sequence[Mapping[str, Any]], targets_text: str, staged_digest: str) -> str:
    """The plan cache key (module docstring)."""
    return digest_composite(
        {"plan": list(requests), "targets": targets_text, "staged": staged_digest, "tool": tool_version()}
    ).removeprefix("sha256:")


def _encode(key: str, record: Mapping[str, Any], entry_format: str = PLAN_ENTRY_FORMAT) -> str:
    return canonical_bytes({"format": entry_format, "key": key, "record": dict(record),
                            "recordDigest": digest_artifact(dict(record))}).decode("utf-8")


def _verified(key: str, text: str | None, entry_format: str) -> dict[str, Any] | None:
    """The record of a stored entry when it is one of ``entry_format``, stored under the key it names,
    and its record digest matches (else None: the caller discards it and runs again)."""
    if text is None:
        return None
    try:
        entry = json.loads(text)
        if not isinstance(entry, dict) or entry.get("format") != entry_format or entry.get("key") != key:
            return None
        record = entry["record"]
        if not isinstance(record, dict) or digest_artifact(record) != entry.get("recordDigest"):
            return None
        return record
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _decode(key: str, text: str) -> dict[str, Any] | None:
    record = _verified(key, text, PLAN_ENTRY_FORMAT)
    if record is None or (not isinstance(record.get("observations"), list) and not _is_fault(record.get("fault"))):
        return None
    return record


def _is_fault(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("code"), str) and isinstance(value.get("detail"), str)


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


_STORES: dict[tuple[str, str], SqliteLegStore] = {}
_STORES_GUARD = threading.Lock()
#: The stores this module keeps under the leg cache directory, one SQLite store (folder) each.
STORE_NAMES: tuple[str, ...] = ("plans", "mutant-outcomes", "generations", "coverage")


def _store(cache_dir: str, name: str) -> SqliteLegStore:
    """The store ``name`` under ``cache_dir`` (opened once per process: opening checks the database)."""
    with _STORES_GUARD:
        store = _STORES.get((cache_dir, name))
        if store is None:
            store = _STORES[(cache_dir, name)] = SqliteLegStore(Path(cache_dir) / name)
        return store


def plan_store(cache_dir: str) -> SqliteLegStore:
    """The plan cache's store under ``cache_dir`` (opened once per process)."""
    return _store(cache_dir, "plans")


def close_plan_store(cache_dir: str) -> None:
    """Close this module's stores under ``cache_dir`` (after a flow run): plans, outcomes, generations."""
    with _STORES_GUARD:
        stores = [_STORES.pop((cache_dir, name), None) for name in STORE_NAMES]
    for store in stores:
        if store is not None:
            store.close()


# ------------------------------------------------------------------ the mutant outcome store

OUTCOME_ENTRY_FORMAT = "eval-quality/mutant-outcome-entry/v1"
LEG_FAULT_ENTRY_FORMAT = "eval-quality/mutant-leg-fault-entry/v1"


def outcome_context(targets_text: str, work_digest: str) -> str:
    """What every mutant outcome key of one suite shares: the registry text, the staged fixtures
    (``work/``), the interpreter's identity and the tool version (module docstring)."""
    return digest_composite({"targets": targets_text, "work": work_digest, "runtime": interpreter_identity(),
                             "tool": tool_version()})


def run_identity(run_id: str, requests: Sequence[Mapping[str, Any]], clean: Sequence[Mapping[str, Any]]) -> str:
    """One covering run as it enters a mutant outcome key: its id, its request(s) (leg id blanked) and
    what the clean system answered on it (the observable channels only, never timings or labels)."""
    return digest_composite({
        "run": run_id,
        "requests": [{**dict(request), "probeId": ""} for request in requests],
        "clean": [channels_of(observation) for observation in clean],
    })


def outcome_key(mutant: Any, runs: Sequence[str], context: str) -> str:
    """The outcome store key of one mutant (module docstring): its mutated file (path and the bytes
    after the mutation), its edit, the identities of its covering runs (``run_identity``) and the
    suite's ``outcome_context``."""
    return digest_composite({
        "target": mutant.target, "mutated": digest_bytes(mutant.mutated_text.encode("utf-8")),
        "find": mutant.find, "replace": mutant.replace, "runs": list(runs), "context": context,
    }).removeprefix("sha256:")


@dataclass(frozen=True)
class StoredOutcomes:
    """A mutant's remembered runs: each leg's observation or fault, and its plan run (None: not run)."""

    runs: dict[str, RunOutcome]
    plan: PlanAnswer | None


def _outcome_json(outcome: RunOutcome) -> dict[str, Any]:
    if outcome.fault_code is not None:
        return {"fault": {"code": outcome.fault_code, "detail": outcome.fault or ""}}
    return {"observation": dict(outcome.observation or {})}


def _run_of(run_id: str, value: Any) -> RunOutcome | None:
    if not isinstance(value, dict) or len(value) != 1:
        return None
    if _is_fault(value.get("fault")):
        return RunOutcome(run_id, None, value["fault"]["code"], value["fault"]["detail"])
    if isinstance(value.get("observation"), dict):
        return RunOutcome(run_id, value["observation"])
    return None


def _plan_of(value: Any, key: str) -> PlanAnswer | None | bool:
    """The stored plan run (None: the plan did not run), or False when it is malformed."""
    if value is None:
        return None
    if isinstance(value, dict) and set(value) == {"observations"} and isinstance(value["observations"], list) and all(
        isinstance(o, dict) for o in value["observations"]
    ):
        return PlanAnswer(value["observations"], None, "store", key)
    if isinstance(value, dict) and set(value) == {"fault"} and _is_fault(value["fault"]):
        return PlanAnswer(None, value["fault"], "store", key)
    return False


def stored_outcomes(cache_dir: str, key: str) -> tuple[StoredOutcomes | None, bool]:
    """A mutant's outcomes stored under ``key`` and whether an entry was there but failed verification
    (it is then deleted: the mutant runs again). Read from a verified SQLite entry only, never a file a
    system could plant by name (the cache directory is outside every workspace)."""
    store = _store(cache_dir, "mutant-outcomes")
    text = store.get(f"mutant/{key}")
    if text is None:
        return None, False
    record = _verified(f"mutant/{key}", text, OUTCOME_ENTRY_FORMAT)
    answer = None
    if record is not None and record.get("key") == key and isinstance(record.get("runs"), dict):
        runs = {run_id: _run_of(run_id, value) for run_id, value in record["runs"].items()}
        plan = _plan_of(record.get("plan"), key)
        if all(run is not None for run in runs.values()) and plan is not False:
            answer = StoredOutcomes({k: v for k, v in runs.items() if v is not None}, plan or None)
    if answer is None:
        store.delete(f"mutant/{key}", text)
        return None, True
    return answer, False


def store_outcomes(cache_dir: str, key: str, mutant_id: str, runs: Mapping[str, RunOutcome], plan: PlanAnswer | None) -> None:
    """Remember a mutant's runs (legs and plan, faults included) under its outcome key."""
    plan_json = None if plan is None else (
        {"fault": dict(plan.fault)} if plan.fault is not None else {"observations": list(plan.observations or [])})
    record = {"key": key, "mutantId": mutant_id, "runs": {run_id: _outcome_json(o) for run_id, o in sorted(runs.items())},
              "plan": plan_json}
    _store(cache_dir, "mutant-outcomes").put(f"mutant/{key}", _encode(f"mutant/{key}", record, OUTCOME_ENTRY_FORMAT))


def remembered_fault(cache_dir: str, key: str) -> dict[str, str] | None:
    """The fault a mutant leg with this leg key raised in an earlier run, if a verified entry of the
    outcome store remembers it (an entry that fails verification is deleted and not remembered)."""
    store = _store(cache_dir, "mutant-outcomes")
    text = store.get(f"leg-fault/{key}")
    if text is None:
        return None
    record = _verified(f"leg-fault/{key}", text, LEG_FAULT_ENTRY_FORMAT)
    if record is None or record.get("key") != key or not _is_fault(record.get("fault")):
        store.delete(f"leg-fault/{key}", text)
        return None
    return dict(record["fault"])


def remember_fault(cache_dir: str, key: str, code: str, detail: str) -> None:
    """Remember a mutant leg's fault by its leg key (one verified entry of the outcome store)."""
    record = {"key": key, "fault": {"code": code, "detail": detail}}
    _store(cache_dir, "mutant-outcomes").put(f"leg-fault/{key}", _encode(f"leg-fault/{key}", record, LEG_FAULT_ENTRY_FORMAT))


# ------------------------------------------------------------------ the generation cache

GENERATION_ENTRY_FORMAT = "eval-quality/generation-cache-entry/v1"


def generation_key(sources: Mapping[str, str], settings: Mapping[str, Any]) -> str:
    """The generation cache key: every system source (path and text), the generation settings, the tool version."""
    return digest_composite({"sources": dict(sources), "settings": dict(settings), "tool": tool_version()}).removeprefix("sha256:")


def cached_generation(
    directory: Path,
    cache_dir: str,
    *,
    operators: Sequence[str],
    sample_size: int | None,
    seed: int,
    per_line_limit: int | None,
    force: bool = False,
) -> tuple[Generation, dict[str, str], str]:
    """The suite's generation, its sources, and how it was had: ``cache`` (a verified entry, checked
    against the sources), ``generated`` (none stored, or ``force``) or ``regenerated`` (the stored
    entry failed verification and was replaced). libcst generation costs seconds per system; a
    cached re-run should not pay it."""
    sources = system_sources(directory)
    settings = {"operators": list(operators), "sample": sample_size, "seed": seed, "perLine": per_line_limit}
    key = generation_key(sources, settings)
    store = _store(cache_dir, "generations")
    how = "generated"
    if not force:
        text = store.get(key)
        if text is not None:
            record = _verified(key, text, GENERATION_ENTRY_FORMAT)
            try:
                if record is not None:
                    return generation_from_record(record, sources), sources, "cache"
            except ValueError:
                pass
            store.delete(key, text)
            how = "regenerated"
    generation = generate(sources, operators=operators, sample_size=sample_size, seed=seed, per_line_limit=per_line_limit)
    store.put(key, _encode(key, generation_record(generation), GENERATION_ENTRY_FORMAT))
    return generation, sources, how


# ------------------------------------------------------------------ coverage, recorded once


def coverage_key(legs: Sequence[tuple[str, Mapping[str, Any]]], targets_text: str, staged_digest: str) -> str:
    """The key of a suite's recorded coverage (module docstring)."""
    return digest_composite({
        "legs": [[leg_id, {**request, "probeId": ""}] for leg_id, request in legs],
        "targets": targets_text, "staged": staged_digest, "tool": tool_version(),
    }).removeprefix("sha256:")


COVERAGE_ENTRY_FORMAT = "eval-quality/coverage-entry/v1"


def recorded_coverage(cache_dir: str, key: str) -> dict[str, Any] | None:
    """The coverage recorded under ``key``, if a verified entry of the coverage store holds it (read in
    the flow thread first: a cached re-run runs no ``record-coverage`` task). Coverage decides which
    mutants are NoCoverage, so it is bound like every other mutant store's entry (its key and record
    digest, not a file name); an entry that fails is deleted and the coverage is recorded again."""
    store = _store(cache_dir, "coverage")
    text = store.get(key)
    if text is None:
        return None
    record = _verified(key, text, COVERAGE_ENTRY_FORMAT)
    runs = None if record is None or record.get("key") != key else record.get("runs")
    # Per run: ``{file: [line, ...]}``, or None (a run that could not be traced reaches every line).
    if not isinstance(runs, dict) or not all(files is None or (isinstance(files, dict) and all(
            isinstance(lines, list) and all(type(line) is int for line in lines) for lines in files.values()))
            for files in runs.values()):
        store.delete(key, text)
        return None
    return runs


def store_coverage(cache_dir: str, key: str, runs: Mapping[str, Any]) -> None:
    """Keep recorded coverage as one verified entry of the coverage store."""
    _store(cache_dir, "coverage").put(key, _encode(key, {"key": key, "runs": dict(runs)}, COVERAGE_ENTRY_FORMAT))


@task(name="record-coverage", task_run_name="{suite_name}/coverage", cache_policy=NO_CACHE, persist_result=False)
def record_coverage_task(
    suite_name: str, suite: Any, legs: Sequence[tuple[str, Mapping[str, Any]]], key: str, cache_dir: str
) -> tuple[dict[str, Any] | None, str]:
    """Per-run line coverage of the clean system and whether it was ``recorded`` now or read from ``cache``."""
    from evalquality_core.suite.line_coverage import record_coverage

    runs = recorded_coverage(cache_dir, key)
    if runs is not None:
        return runs, "cache"
    runs = record_coverage(suite, legs)
    if runs is None:
        return None, "untraceable"
    store_coverage(cache_dir, key, runs)
    return runs, "recorded"


@task(name="qualify-derived", task_run_name="{suite_name}/{mutant_id}/derive", cache_policy=NO_CACHE, persist_result=False)
def qualify_derived_task(
    suite_name: str, mutant_id: str, directory: str, probe: dict[str, Any], mutation: dict[str, Any]
) -> tuple[bool, str, bytes | None]:
    """Qualify one derived probe with the suite's generator cycle (evalquality_core/suite/mutants.py)."""
    from evalquality_core.suite.mutants import qualify_derived

    return qualify_derived(directory, probe, mutation)
