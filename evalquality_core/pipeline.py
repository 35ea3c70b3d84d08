"""Prefect-free orchestration of the stages (style.md §5): the only stage-composing module that calls a port.

``run_preflight`` plans, sends each leg through the probe port once, sequentially and in plan order
(preflight-adapter.md §2.6: a reset would change the fixture under another operation's witness), and
reduces. ``preflight_from_observations`` is the same without a port, for the CLI. This module decides
nothing: every rule lives in the stage it calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evalquality_core.artifacts.port_messages import read_probe_observation, read_probe_request
from evalquality_core.canonical.digest import digest_bytes
from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.faults import RuntimeFault
from evalquality_core.preflight.plan import PreflightPlan, plan_preflight
from evalquality_core.preflight.reduce import reduce_preflight

#: Receives one diagnostic line per pre-flight event: ``(run_id, stage, message)``.
Sink = Callable[[str, str, str], None]


class ProbePortLike(Protocol):
    """The environment-probe port as the pipeline uses it: one request in, one observation out."""

    def probe(self, request: Any) -> Any:
        """Send one request; return its observation or raise a ``RuntimeFault``."""


def invoke_port(port: ProbePortLike, request_wire: Any) -> Any:
    """The single awaiting seam (§2.6 ``invokePort``): parse, call once, parse the answer; never retry or cache.

    A request failing its schema is ``schema-parse-failure``; a ``RuntimeFault`` from the port passes
    through unchanged; anything else the port raises is ``port-failure``; an answer failing its schema is
    ``port-contract-violation``.
    """
    wire = as_wire(request_wire)
    calls = wire.get("calls") if isinstance(wire, dict) else None
    if calls:
        return _invoke_leg_calls(port, wire)
    request = read_probe_request(request_wire, "ProbeRequest")
    try:
        answer = port.probe(request)
    except RuntimeFault:
        raise
    except Exception as exc:  # the port's own failure, whatever it is, is a port failure (§3.3)
        raise RuntimeFault("port-failure", "ProbeObservation", f"the probe port raised {type(exc).__name__}: {exc}") from exc
    return read_probe_observation(as_wire(answer), "ProbeObservation", code="port-contract-violation")


def _invoke_leg_calls(port: ProbePortLike, wire: dict[str, Any]) -> dict[str, Any]:
    """``invoke_port`` for a multi-call leg (adapters/leg_calls.py): every request parsed, the whole leg
    (wire, with ``calls``) handed to the port once, and its answer and each call's answer parsed."""
    own = {key: value for key, value in wire.items() if key != "calls"}
    read_probe_request(own, "ProbeRequest")
    for index, call in enumerate(wire["calls"]):
        read_probe_request(call, f"ProbeRequest.calls[{index}]")
    try:
        answer = as_wire(port.probe(wire))
    except RuntimeFault:
        raise
    except Exception as exc:  # the port's own failure, whatever it is, is a port failure (§3.3)
        raise RuntimeFault("port-failure", "ProbeObservation", f"the probe port raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(answer, dict) or not isinstance(answer.get("calls"), list):
        raise RuntimeFault("port-contract-violation", "ProbeObservation", "the port answered a multi-call leg without its calls")
    read_probe_observation({k: v for k, v in answer.items() if k != "calls"}, "ProbeObservation", code="port-contract-violation")
    for index, call in enumerate(answer["calls"]):
        read_probe_observation(call, f"ProbeObservation.calls[{index}]", code="port-contract-violation")
    return answer


def read_preflight_inputs(contract: Any, probes: Sequence[Any]) -> tuple[Any, list[Any]]:
    """Parse the contract, then the probes (§2.6 step 1); models pass through unchanged.

    The probe stamps are compared before any probe is parsed (§1.1), so a probe at another version
    is refused as ``schema-version-mismatch`` at ``Probe[probeId=<id>].schemaVersion``.
    """
    from pydantic import BaseModel

    from evalquality_core.artifacts.base import check_stamp, read_artifact
    from evalquality_core.artifacts.contract import EvalContract
    from evalquality_core.artifacts.probe import Probe
    from evalquality_core.preflight.plan import check_probe_stamps

    # 7.0.0: every input's stamp (contract, then each probe) before any input's shape.
    if not isinstance(contract, BaseModel):
        check_stamp(EvalContract, contract, "EvalContract")
    check_probe_stamps([probe for probe in probes if not isinstance(probe, BaseModel)])
    if not isinstance(contract, BaseModel):
        contract = read_artifact(EvalContract, contract, "EvalContract")
    parsed = []
    for index, probe in enumerate(probes):
        if isinstance(probe, BaseModel):
            parsed.append(probe)
            continue
        try:
            parsed.append(read_artifact(Probe, probe, "Probe"))
        except RuntimeFault as fault:
            if fault.code != "schema-parse-failure":
                raise
            # §2.6: an unparseable probe is reported at `Probe`; which probe and where go in the detail.
            raise RuntimeFault(
                "schema-parse-failure", "Probe", f"probe [{index}] at {fault.artifact_path}: {fault.detail}"
            ) from None
    return contract, parsed


def _emit(sink: Sink | None, run_id: str, message: str) -> None:
    if sink is not None:
        sink(run_id, "preflight", message)


def run_preflight(
    contract: Any,
    probes: Sequence[Any],
    run_id: str,
    port: ProbePortLike,
    *,
    sink: Sink | None = None,
    clean_witness_legs: bool = False,
) -> Any:
    """Plan, probe each leg once in plan order, reduce (§2.6): → ``PreflightVerdict``.

    A ``RuntimeFault`` from any leg propagates at once: a failed probe is a fault, a failed pre-flight
    is a verdict. ``clean_witness_legs``: the port runs fault legs on a seeded system, so each witness
    also runs on the clean one (``preflight/plan.py``).
    """
    contract, probes = read_preflight_inputs(contract, probes)
    plan = plan_preflight(contract, probes, run_id, clean_witness_legs=clean_witness_legs)
    observations = []
    for leg in plan.legs:
        _emit(sink, run_id, f'leg "{leg.leg_id}": planned')
        observations.append(invoke_port(port, leg.request))
        _emit(sink, run_id, f'leg "{leg.leg_id}": observed')
    return _reduce(plan, observations, sink)


def preflight_from_observations(
    contract: Any, probes: Sequence[Any], run_id: str, observations: Sequence[Any], *, sink: Sink | None = None
) -> Any:
    """Pre-flight over observations gathered elsewhere (§2.6): plan, match answers by probe id, reduce."""
    contract, probes = read_preflight_inputs(contract, probes)
    parsed = [_read_leg_observation(as_wire(observation), f"ProbeObservation[{index}]") for index, observation in enumerate(observations)]
    plan = plan_preflight(contract, probes, run_id)
    answered = {as_wire(observation)["probeId"] for observation in parsed}
    for leg in plan.legs:
        _emit(sink, run_id, f'leg "{leg.leg_id}": planned')
        _emit(sink, run_id, f'leg "{leg.leg_id}": ' + ("observed" if leg.leg_id in answered else "no observation"))
    return _reduce(plan, parsed, sink)


def _read_leg_observation(wire: Any, path: str) -> Any:
    """A stored observation: the parsed model, or for a multi-call leg (``calls``) its wire JSON once the
    leg's own observation and each call's have parsed."""
    if not isinstance(wire, dict) or "calls" not in wire:
        return read_probe_observation(wire, path)
    read_probe_observation({k: v for k, v in wire.items() if k != "calls"}, path)
    calls = wire["calls"]
    if not isinstance(calls, list):
        raise RuntimeFault("schema-parse-failure", f"{path}.calls", "a multi-call leg's calls must be a list of observations")
    for index, call in enumerate(calls):
        read_probe_observation(call, f"{path}.calls[{index}]")
    return wire


def _reduce(plan: PreflightPlan, observations: Sequence[Any], sink: Sink | None) -> Any:
    verdict = reduce_preflight(plan, observations)
    passed = as_wire(verdict)["passed"]
    _emit(sink, plan.run_id, f"reduced {len(plan.legs)} leg(s): {'passed' if passed else 'failed'}")
    return verdict


# ---- scoring (scoring.md §9.2 steps 4–8; preflight-adapter.md §6) ------------------------------------


class CorpusPortLike(Protocol):
    """The corpus port: a private reference in, the bytes it names out (it never checks digests)."""

    def resolve(self, private_ref: str) -> bytes:
        """The bytes behind ``private_ref``, or a ``RuntimeFault`` (``port-failure``)."""


class CorpusRootRequired(ValueError):
    """A private reference needs resolving but no corpus port was supplied (the CLI's usage error 64)."""


@dataclass(frozen=True)
class ScoreRun:
    """``run_score``'s answer: the artifact (None on the Invalid rung), the ladder, the qualification, and
    the full scored result for callers that want more (a flow's report)."""

    artifact: Any | None
    ladder: Any
    qualification: Any
    result: Any


def _verify_private(corpus: CorpusPortLike, private_ref: str, digest: str, path: str) -> None:
    """AD-8: SHA-256 of the resolved bytes must equal the declared digest; a failed resolution counts too."""
    try:
        data = corpus.resolve(private_ref)
    except RuntimeFault as fault:
        raise RuntimeFault(
            "digest-mismatch", path, f'private reference "{private_ref}" did not resolve: {fault.detail}'
        ) from None
    computed = digest_bytes(data)
    if computed != digest:
        raise RuntimeFault(
            "digest-mismatch", path, f'private reference "{private_ref}" resolves to {computed}, not the declared {digest}'
        )


def private_references(records: Sequence[Any], private_manifest: Any | None) -> list[tuple[str, str, str]]:
    """Every ``(privateRef, digest, artifactPath)`` that scoring must resolve and verify, in check order."""
    needed: list[tuple[str, str, str]] = []
    if private_manifest is not None:
        for index, entry in enumerate(as_wire(private_manifest)["entries"]):
            needed.append((entry["privateRef"], entry["digest"], f"PrivateArtifactManifest.entries[{index}]"))
    for index, record in enumerate(records):
        reference = as_wire(record)["isolationManifestArtifact"]
        if reference["storage"] == "private":
            needed.append(
                (reference["privateRef"], reference["digest"], f"SealedRunRecord[{index}].isolationManifestArtifact")
            )
    return needed


def run_score(
    contract: Any,
    probe: Any,
    records: Sequence[Any],
    policy: Any,
    preflight_verdict: Any,
    *,
    corpus_digest: str,
    isolation_manifest: Any | None = None,
    evaluator_configuration: Any | None = None,
    private_manifest: Any | None = None,
    corpus: CorpusPortLike | None = None,
    designated_oracle: str | None = None,
) -> ScoreRun:
    """Verify private references, ingest every record (one per trial), score the trial set, emit.

    Raises ``CorpusRootRequired`` when a private reference needs resolving and ``corpus`` is None,
    ``RuntimeFault('digest-mismatch')`` when resolved bytes disagree with their declared digest, and
    ``DesignatedOracleError`` for a bad designated oracle. On the Invalid rung ``artifact`` is None
    (nothing is minted); otherwise it is the EvidenceArtifact.
    """
    from evalquality_core.emit.emit import emit
    from evalquality_core.ingest import ingest
    from evalquality_core.score.score import designate_oracle, score

    if not records:
        raise ValueError("run_score needs at least one sealed run record (one per trial)")
    designate_oracle(contract, probe, designated_oracle)  # a bad designation is refused before any work
    needed = private_references(records, private_manifest)
    if needed and corpus is None:
        raise CorpusRootRequired(f'a corpus root is required to resolve private reference "{needed[0][0]}"')
    for private_ref, digest, path in needed:
        assert corpus is not None
        _verify_private(corpus, private_ref, digest, path)
    trials = [ingest(record, isolation_manifest, evaluator_configuration, contract) for record in records]
    result = score(contract, probe, trials, policy, preflight_verdict, designated_oracle=designated_oracle)
    artifact = None
    if result.ladder.verdict is not None:
        artifact = emit(
            result,
            contract,
            policy,
            corpus_digest=corpus_digest,
            fixture_digest=as_wire(preflight_verdict)["fixtureDigest"],
            evaluator_configuration_digest=as_wire(records[0])["evaluatorConfigurationDigest"],
        )
    return ScoreRun(artifact, result.ladder, result.qualification, result)
