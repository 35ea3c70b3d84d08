"""The replay adapter: a ``ProbePort`` that answers from stored observations (style.md §4).

TEA's deterministic twin of the command-line adapter, and the port behind ``--from-cache``. Stored
answers are found by the request cache key of preflight-adapter.md §8 (the request with its
``probeId`` blanked), or by ``probeId`` for reference data that stores observations without their
requests. A hit is re-stamped with the asking request's correlation triple (harness.md A.6); a miss
is ``port-failure`` with an operator hint. Given a policy, it refuses exactly what the real adapter
would refuse, before looking anything up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from evalquality_core.artifacts.port_messages import (
    ApiProbeObservation,
    ApiProbeRequest,
    CliProbeObservation,
    CliProbeRequest,
    McpProbeObservation,
    McpProbeRequest,
    read_probe_observation,
    read_probe_request,
    request_cache_key,
    restamp_observation,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.policy import CommandTargetPolicy, evaluate_request, forbidden_target_fault
from evalquality_core.probe.port import AbortSignal

__all__ = ["ReplayAdapter"]

Request = CliProbeRequest | ApiProbeRequest | McpProbeRequest
Observation = CliProbeObservation | ApiProbeObservation | McpProbeObservation


def _observation(value: Any) -> Observation:
    return value if hasattr(value, "model_dump") else read_probe_observation(value)


class ReplayAdapter:
    """Answers ``probe(request)`` from stored observations; ``calls`` counts lookups (hits and misses).

    Build it with ``ReplayAdapter.from_pairs([(request, observation), ...])`` (keyed by request) or
    ``ReplayAdapter.by_probe_id([observation, ...])`` (keyed by the stored ``probeId``).
    """

    def __init__(
        self,
        answers: Mapping[str, Observation],
        *,
        key: Literal["request", "probe-id"],
        policy: CommandTargetPolicy | None = None,
    ) -> None:
        self.answers = dict(answers)
        self.key = key
        self.policy = policy
        self.calls = 0

    @classmethod
    def from_pairs(
        cls, pairs: Iterable[tuple[Any, Any]], *, policy: CommandTargetPolicy | None = None
    ) -> ReplayAdapter:
        """Key each stored observation by its request's cache key; the first pair for a key wins."""
        answers: dict[str, Observation] = {}
        for request, observation in pairs:
            parsed = request if not isinstance(request, dict) else read_probe_request(request)
            answers.setdefault(request_cache_key(parsed), _observation(observation))
        return cls(answers, key="request", policy=policy)

    @classmethod
    def by_probe_id(cls, observations: Iterable[Any], *, policy: CommandTargetPolicy | None = None) -> ReplayAdapter:
        """Key each stored observation by its own ``probeId`` (reference pre-flight observation files)."""
        answers: dict[str, Observation] = {}
        for value in observations:
            observation = _observation(value)
            if observation.probe_id in answers:
                raise RuntimeFault(
                    "port-contract-violation", "ProbeObservation", f'probeId "{observation.probe_id}" is stored twice'
                )
            answers[observation.probe_id] = observation
        return cls(answers, key="probe-id", policy=policy)

    def probe(self, request: Request | dict[str, Any], *, abort: AbortSignal | None = None) -> Observation:
        """The stored answer to ``request``, re-stamped with its correlation triple."""
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeRequest", "the caller aborted before the probe started")
        typed = (CliProbeRequest, ApiProbeRequest, McpProbeRequest)
        parsed = request if isinstance(request, typed) else read_probe_request(request)
        if self.policy is not None:
            decision = evaluate_request(self.policy, parsed)
            if not decision.allowed:
                raise forbidden_target_fault(decision)
        self.calls += 1
        lookup = request_cache_key(parsed) if self.key == "request" else parsed.probe_id
        stored = self.answers.get(lookup)
        if stored is None:
            raise RuntimeFault(
                "port-failure",
                "ProbeObservation",
                f'no stored observation answers {"request " + lookup if self.key == "request" else "probe " + repr(lookup)}; '
                "run it live first",
            )
        if stored.kind != parsed.kind:
            raise RuntimeFault(
                "port-contract-violation",
                "ProbeObservation",
                f'the stored answer is of kind "{stored.kind}" but the request is "{parsed.kind}"',
            )
        return restamp_observation(stored, parsed)
