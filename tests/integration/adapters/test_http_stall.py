"""A service that stalls mid-answer (issue 33): a real server child process sends part of an answer
and then holds the connection open. Whatever part it sent, the exchange ends at ``maxElapsedMs`` (or
the caller's abort) as a fault, never as a successful, truncated observation; the fault is never
stored in the leg cache; a mutant whose service stalls is classified Timeout, as a command leg that
overruns its budget is."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evalquality_core.adapters.http import HttpAdapter
from evalquality_core.faults import RuntimeFault
from evalquality_core.mutants.classify import RunOutcome, classify
from evalquality_core.probe.api_policy import parse_probe_target_policy
from flows.mutants import Costs, _collect_leg
from tasks.leg_cache import LegAnswer, LegCache, leg_cache_key
from tests.adapters.http_subject import authorization, request
from tests.polling import wait_for
from tests.ports import server_port

SERVICE = Path(__file__).resolve().parents[2] / "fixtures" / "services" / "stalling_service.py"
INTERFACE = "stalling"
BUDGET_MS = 600


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


class Service:
    """One ``stalling_service.py`` child on a loopback port; ``stop()`` kills and reaps it."""

    def __init__(self, mode: str) -> None:
        self.port = server_port()
        self.process = subprocess.Popen([sys.executable, str(SERVICE), mode, str(self.port)], stdin=subprocess.DEVNULL)
        if not wait_for(lambda: _accepts(self.port) or self.process.poll() is not None, timeout_s=20) or self.process.poll() is not None:
            self.stop()
            raise AssertionError(f"the {mode} service did not start")

    def adapter(self, max_elapsed_ms: int = BUDGET_MS) -> HttpAdapter:
        entry = authorization(INTERFACE, "127.0.0.1", self.port, maxElapsedMs=max_elapsed_ms)
        return HttpAdapter(parse_probe_target_policy({"authorizations": [entry]}))

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def services() -> Iterator[Any]:
    started: list[Service] = []

    def start(mode: str) -> Service:
        service = Service(mode)
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()


def _fault_of(call: Any) -> RuntimeFault:
    with pytest.raises(RuntimeFault) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("mode", ["until-close", "chunked", "short", "headers"])
def test_a_stall_mid_answer_is_budget_exhausted_never_an_observation(mode: str, services: Any) -> None:
    """``until-close`` is the hole: the deadline's shutdown read as the end of a body without a
    length, and half an answer came back as a 200. The other modes are the same rule's guards."""
    adapter = services(mode).adapter()
    started = time.monotonic()
    fault = _fault_of(lambda: adapter.probe(request("/notes", interface=INTERFACE)))
    assert (fault.code, fault.artifact_path) == ("budget-exhausted", "ApiProbeRequest")
    assert f"maxElapsedMs ({BUDGET_MS}ms)" in fault.detail
    assert time.monotonic() - started < 5  # ended by the deadline, not by the service's hour of sleep


def test_the_whole_answer_of_the_control_is_an_observation(services: Any) -> None:
    """The control: the same service answering in full is observed (the fault above is the stall's)."""
    observation = services("whole").adapter().probe(request("/notes", interface=INTERFACE))
    assert (observation.status, observation.body.model_dump(mode="json")) == (200, {"kind": "json", "value": {"ok": True}})


def test_an_abort_during_a_body_read_to_the_close_is_aborted(services: Any) -> None:
    adapter = services("until-close").adapter(max_elapsed_ms=60000)
    abort = threading.Event()
    timer = threading.Timer(0.4, abort.set)
    timer.start()
    try:
        started = time.monotonic()
        fault = _fault_of(lambda: adapter.probe(request("/notes", interface=INTERFACE), abort=abort))
    finally:
        timer.cancel()
    assert fault.code == "aborted"
    assert time.monotonic() - started < 5


def _wire(adapter: HttpAdapter, probe_id: str = "leg-1") -> dict[str, Any]:
    return adapter.probe(request("/notes", interface=INTERFACE, probe_id=probe_id)).model_dump(mode="json", by_alias=True)


def test_a_stalled_answer_is_never_stored_in_the_leg_cache(services: Any, tmp_path: Path) -> None:
    service = services("until-close")
    adapter = service.adapter()
    leg = request("/notes", interface=INTERFACE)
    key = leg_cache_key(leg, authorization(INTERFACE, "127.0.0.1", "{port}"), "sha256:staged", "test")
    spawns = [0]

    def spawn() -> dict[str, Any]:
        spawns[0] += 1
        return _wire(adapter)

    first = LegCache(tmp_path / "cache")
    try:
        fault = _fault_of(lambda: first.answer(key, leg, spawn))
        assert fault.code == "budget-exhausted"
        assert first.entry_count() == 0
    finally:
        first.close()
    second = LegCache(tmp_path / "cache")  # the next run, same cache directory
    try:
        fault = _fault_of(lambda: second.answer(key, leg, spawn))
    finally:
        second.close()
    assert fault.code == "budget-exhausted"
    assert spawns[0] == 2  # the second run asked the service again: nothing answered it from the cache


def _outcome(adapter: HttpAdapter) -> RunOutcome:
    """The leg's outcome exactly as the mutants flow collects it (``flows.mutants._collect_leg``)."""
    future: Future[Any] = Future()
    try:
        future.set_result(LegAnswer(_wire(adapter), "spawned", 0.0, "key"))
    except RuntimeFault as fault:
        future.set_exception(fault)
    outcome, _spawned = _collect_leg(future, SimpleNamespace(request={"probeId": "leg-1"}), Costs())
    return outcome


def test_a_mutant_whose_service_stalls_is_timeout(services: Any) -> None:
    clean = {"leg-1": _outcome(services("whole").adapter())}
    mutated = {"leg-1": _outcome(services("until-close").adapter())}
    assert clean["leg-1"].observation is not None
    classification = classify(clean, mutated, coverage_known=False)
    assert classification.status == "Timeout", classification.reason
