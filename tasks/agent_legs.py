"""A leg of an agent target: the night's budget, the vendor's concurrency limit, retries with backoff.

Issue 34; the registry side is ``evalquality_core/probe/agent_targets.py``. ``spawn-leg`` calls
``spawn_agent_leg`` where it would spawn (inside the leg cache's single flight, so a leg the cache
answers pays nothing and takes no vendor slot). For each attempt:

1. the night's budget is charged (``tasks/night_budget.py``): a spent budget refuses the leg;
2. a slot of the vendor's Prefect global concurrency limit is held while the child runs (released
   during the backoff, so a waiting leg of the same vendor can run);
3. the exit code is looked up in the target's class table and ``decide`` says: the answer, a retry after
   ``backoff_seconds``, or a fault (``port-failure`` naming the class and the attempts; never cached).

When the entry permits the environment key ``EVALQUALITY_ATTEMPT``, each attempt's child gets its number
(``1``, ``2``, ...), so a runner can tell a retry from a first call (the stand-in agent seeds its
failures with it). The answer of a retried leg is that of its last attempt, and that is what the leg
cache stores; every attempt is in the night's ledger.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.agent_targets import AgentProfile, backoff_seconds, decide
from tasks.night_budget import NightBudget, current_night

__all__ = ["ATTEMPT_KEY", "attempts_of", "spawn_agent_leg", "vendor_limit_name", "vendor_slot"]

#: The environment key that carries the attempt number, when the registry permits it.
ATTEMPT_KEY = "EVALQUALITY_ATTEMPT"

#: Vendor limits this process has created or updated on the Prefect API it talks to, by API URL.
_LIMITS_SET: set[tuple[str, str, int]] = set()
_LIMITS_GUARD = threading.Lock()
#: Attempts each spawned leg took, by leg key (for the leg's state message); bounded by the legs run.
_ATTEMPTS: dict[str, int] = {}


def vendor_limit_name(vendor: str) -> str:
    """The name of the Prefect global concurrency limit of ``vendor``."""
    return f"eval-quality-vendor-{vendor}"


def _ensure_limit(vendor: str, limit: int) -> str:
    """Create (or set) the vendor's global concurrency limit on the Prefect API this run uses, once per
    process. Needed on every API, the embedded one included: Prefect's ``concurrency()`` does nothing
    for a limit that does not exist (it only warns, unless ``strict``), so an absent limit would
    silently limit nothing."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    name = vendor_limit_name(vendor)
    marker = (str(PREFECT_API_URL.value()), name, limit)
    with _LIMITS_GUARD:
        if marker in _LIMITS_SET:
            return name
        with get_client(sync_client=True) as client:
            client.upsert_global_concurrency_limit_by_name(name, limit)
        _LIMITS_SET.add(marker)
    return name


#: In-process gates, one per (vendor, limit): a leg waits here before it asks Prefect for a slot.
_GATES: dict[tuple[str, int], threading.BoundedSemaphore] = {}


def _gate(vendor: str, limit: int) -> threading.BoundedSemaphore:
    with _LIMITS_GUARD:
        return _GATES.setdefault((vendor, limit), threading.BoundedSemaphore(limit))


@contextlib.contextmanager
def vendor_slot(vendor: str | None, limits: Mapping[str, int]) -> Iterator[None]:
    """Hold one slot of ``vendor``'s limit for the block (nothing for a target without a vendor).

    Two gates. The Prefect global concurrency limit bounds the vendor's legs across every process and
    flow run on the API (``strict``: a limit that vanished mid-run is an error, never an unlimited leg).
    In front of it, a semaphore of the same size bounds this process's legs, so they queue here and are
    handed a freed slot at once: a slot Prefect refuses is retried only after the server's Retry-After
    (the limit's average occupancy times the queue), which left slots idle for seconds
    (``benchmarks/bench_agent_night.py``: legs' window 4.6x the ideal with Prefect alone)."""
    if vendor is None:
        yield
        return
    from prefect.concurrency.sync import concurrency

    limit = limits[vendor]
    name = _ensure_limit(vendor, limit)
    with _gate(vendor, limit), concurrency(name, occupy=1, strict=True):
        yield


def attempts_of(key: str) -> int:
    """How many calls the spawned leg of ``key`` took in this process (1 when it was not retried)."""
    return _ATTEMPTS.pop(key, 1)


def _with_attempt(job: Any, attempt: int) -> Any:
    """``job`` whose request tells the child its attempt number, when the entry permits the key."""
    for authorization in job.policy.authorizations:
        if (authorization.interface_id, authorization.executable) == (
            job.request.get("interfaceId"), job.request.get("executable")
        ):
            if ATTEMPT_KEY not in authorization.permitted_environment_keys:
                return job
            channels = dict(job.request.get("channels") or {})
            channels["environment"] = {**(channels.get("environment") or {}), ATTEMPT_KEY: str(attempt)}
            return dataclasses.replace(job, request={**job.request, "channels": channels})
    return job


def spawn_agent_leg(
    job: Any, spawn: Callable[[Any], Mapping[str, Any]], leg: str, abort: Any = None
) -> Mapping[str, Any]:
    """Spawn ``job``'s leg under the night's budget, its vendor's limit and its retry policy (module
    docstring); returns the wire observation of the last attempt, or raises the fault. ``abort`` (the
    run's ``AbortFlag``) cuts a backoff short when the run is interrupted."""
    profile: AgentProfile | None = None
    targets = getattr(job, "targets", None)
    if targets is not None and job.request.get("kind", "cli") == "cli":
        profile = targets.agent_of(job.request.get("interfaceId"), job.request.get("executable"))
    night = current_night()
    if profile is None or profile.plain:
        night.charge(0.0, leg)
        return spawn(job)
    return _attempts(job, spawn, leg, profile, night, dict(targets.vendors), abort)


def _attempts(
    job: Any, spawn: Callable[[Any], Mapping[str, Any]], leg: str, profile: AgentProfile, night: NightBudget,
    limits: Mapping[str, int], abort: Any,
) -> Mapping[str, Any]:
    attempt = 0
    while True:
        attempt += 1
        night.charge(profile.cost_per_leg, leg)
        queued = time.time()
        with vendor_slot(profile.vendor, limits):
            started = time.time()
            observation = spawn(_with_attempt(job, attempt))
            ended = time.time()
        released = time.time()
        exit_code = observation.get("exitCode")
        failure = profile.failure_class(exit_code)
        decision = decide(profile, exit_code, attempt)
        night.record({
            "leg": leg, "key": job.key, "vendor": profile.vendor, "attempt": attempt, "exitCode": exit_code,
            "class": failure, "decision": decision, "queued": queued, "started": started, "ended": ended,
            "released": released,
        })
        if decision == "answer":
            _ATTEMPTS[job.key] = attempt
            return observation
        if decision == "fault":
            why = "not transient, so never retried" if failure not in profile.retry.transient else "out of attempts"
            raise RuntimeFault(
                "port-failure", "ProbeObservation.exitCode",
                f"exit {exit_code} is environment-{failure} ({profile.place}); {why} after {attempt} attempt(s)",
            )
        wait = backoff_seconds(profile.retry, attempt, job.key)
        if abort is not None and abort.wait(wait):
            raise RuntimeFault("aborted", "ProbeRequest", f"the run was interrupted while leg {leg} waited to retry")
        if abort is None:
            time.sleep(wait)
