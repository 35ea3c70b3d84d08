"""A stored stage result is verified and rebuilt once per read, not twice: the storage's check hands its
rebuilt value to the serializer call Prefect makes next on the same bytes, and nothing else ever gets it
(other bytes are verified in full, so a result altered after the check is still refused). A frozen
model's input digest is computed once per object (the contract every probe's plan is keyed on)."""

from __future__ import annotations

import gc
import json
from collections import OrderedDict
from pathlib import Path

import pytest

from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.preflight.plan import PreflightPlan, plan_preflight
from tasks import caching
from tasks.caching import StageResultRejected, VerifiedJsonSerializer, VerifiedResultStorage, input_digest
from tasks.suites import load_suites

SUITES = Path(__file__).resolve().parents[2] / "corpus" / "suites"


def _stored(directory: Path, value: object) -> tuple[VerifiedResultStorage, str, bytes]:
    """A result file as Prefect writes one (a record naming our serializer) and the result's bytes."""
    blob = VerifiedJsonSerializer().dumps(value)
    record = {"metadata": {"serializer": {"type": caching.SERIALIZER_TYPE}}, "result": blob.decode("utf-8")}
    (directory / "key").write_text(json.dumps(record), encoding="utf-8")
    return VerifiedResultStorage(basepath=str(directory)), "key", blob


def _same(value: object, blob: bytes) -> bool:
    """Whether a rebuilt value is the one these result bytes hold (it encodes back to them)."""
    return VerifiedJsonSerializer().dumps(value) == blob


def test_a_checked_result_is_rebuilt_once_and_handed_over_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = PreflightPlan(run_id="r", legs=(), checks=(), reference_sets={"k": [1, "two"]})
    storage, key, blob = _stored(tmp_path, plan)
    rebuilt: list[object] = []
    real = VerifiedJsonSerializer._verify
    monkeypatch.setattr(VerifiedJsonSerializer, "_verify", lambda self, data: rebuilt.append(1) or real(self, data))
    storage.read_path(key)  # the storage's check: verifies and rebuilds
    assert len(rebuilt) == 1
    first = VerifiedJsonSerializer().loads(blob)  # Prefect's loads of the same bytes: handed over
    assert len(rebuilt) == 1 and _same(first, blob)
    second = VerifiedJsonSerializer().loads(blob)  # once only: a later loads verifies again
    assert len(rebuilt) == 2 and _same(second, blob) and second is not first


def test_bytes_altered_after_the_check_are_still_refused(tmp_path: Path) -> None:
    plan = PreflightPlan(run_id="r", legs=(), checks=(), reference_sets={})
    storage, key, blob = _stored(tmp_path, plan)
    storage.read_path(key)
    altered = blob.replace(b'"run_id":"r"', b'"run_id":"x"')
    assert altered != blob
    with pytest.raises(StageResultRejected, match="digest"):
        VerifiedJsonSerializer().loads(altered)
    assert _same(VerifiedJsonSerializer().loads(blob), blob)  # the checked bytes are still served


def test_a_frozen_models_digest_is_computed_once_per_object(monkeypatch: pytest.MonkeyPatch) -> None:
    suites, _ = load_suites(SUITES, ["notes"])
    contract = compile_contract(suites[0].contract)
    again = compile_contract(suites[0].contract)  # equal, another object
    expected = input_digest(contract)
    walks: list[object] = []
    real = caching.encode_result
    monkeypatch.setattr(caching, "encode_result", lambda value: walks.append(value) or real(value))
    assert [input_digest(contract) for _ in range(5)] == [expected] * 5
    assert walks == []  # remembered
    assert [input_digest(again) for _ in range(3)] == [expected] * 3
    assert sum(walk is again for walk in walks) == 1  # digested once for the new object
    plain = {"plain": "dict"}
    real_digest, plain_walks = caching.digest_artifact, []
    monkeypatch.setattr(caching, "digest_artifact", lambda value: plain_walks.append(value) or real_digest(value))
    input_digest(plain), input_digest(plain)
    assert sum(walk is plain for walk in plain_walks) == 2  # a mutable value is digested every time


def _corpus_plan() -> PreflightPlan:
    """A real plan: the notes suite's first probe, compiled and planned."""
    suites, _ = load_suites(SUITES, ["notes"])
    contract = compile_contract(suites[0].contract)
    return plan_preflight(contract, [dict(suites[0].probes[0])], "run-once")


def test_a_result_read_back_carries_the_digest_a_fresh_walk_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest a read remembers for a rebuilt plan is the one a fresh encoding of an equal plan gives
    (so a reduce key is the same whether its plan was just planned or read from the cache), and the
    rebuilt plan is not encoded again to key a stage on it."""
    plan = _corpus_plan()
    fresh = input_digest(_corpus_plan())  # another equal plan, never stored: digested by a walk
    storage, key, blob = _stored(tmp_path, plan)
    storage.read_path(key)
    rebuilt = VerifiedJsonSerializer().loads(blob)
    assert rebuilt is not plan and isinstance(rebuilt, PreflightPlan)
    walks: list[object] = []
    real = caching.encode_result
    monkeypatch.setattr(caching, "encode_result", lambda value: walks.append(value) or real(value))
    assert input_digest(rebuilt) == fresh
    assert walks == []
    assert input_digest(plan) == fresh  # the written plan was remembered by dumps: no walk either
    assert walks == []


def test_a_digest_is_forgotten_with_its_value() -> None:
    plan = _corpus_plan()
    which = id(plan)
    input_digest(plan)
    assert caching._FROZEN_DIGESTS.get(plan) is not None
    del plan
    gc.collect()
    assert which not in caching._FROZEN_DIGESTS._entries  # nothing held alive, nothing left to mistake


def test_two_reads_of_the_same_file_check_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefect reads a cached stage's file twice (exists, then read): identical bytes are checked once."""
    monkeypatch.setattr(caching, "_CHECKED_FILES", OrderedDict())  # no check left by another test's read
    storage, key, blob = _stored(tmp_path, _corpus_plan())
    checks: list[object] = []
    real = VerifiedJsonSerializer._verify
    monkeypatch.setattr(VerifiedJsonSerializer, "_verify", lambda self, data: checks.append(1) or real(self, data))
    storage.read_path(key)
    storage.read_path(key)
    assert len(checks) == 1
    storage.read_path(key)  # taken once: a third read checks again
    assert len(checks) == 2


def test_a_file_altered_between_the_two_reads_is_checked_again_and_refused(tmp_path: Path) -> None:
    storage, key, blob = _stored(tmp_path, _corpus_plan())
    storage.read_path(key)  # Prefect's exists: checked and passed
    path = tmp_path / key
    record = json.loads(path.read_text(encoding="utf-8"))
    record["result"] = record["result"].replace('"run_id":"run-once"', '"run_id":"run-twice"')
    path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(StageResultRejected, match="digest"):
        storage.read_path(key)  # Prefect's read: other bytes, checked in full
