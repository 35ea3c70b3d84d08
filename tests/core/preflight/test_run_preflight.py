"""pipeline.run_preflight: one port call per planned leg, in plan order, and the invokePort seam (§2.6)."""

from __future__ import annotations

import pytest

from evalquality_core.faults import RuntimeFault
from evalquality_core.pipeline import run_preflight
from tests.core.preflight.chains import load, skill_defect


class StoredPort:
    """Answers each request with the reference's stored observation for that leg id."""

    def __init__(self, observations, broken=None):
        self.by_leg = {observation["probeId"]: observation for observation in observations}
        self.calls: list[str] = []
        self.broken = broken

    def probe(self, request):
        self.calls.append(request.probe_id)
        if self.broken == "raise":
            raise OSError("connection reset")
        if self.broken == "garbage":
            return {"kind": "cli", "probeId": request.probe_id}
        return self.by_leg[request.probe_id]


def test_one_call_per_leg_in_plan_order_and_the_stored_verdict(conformance):
    contract, probe, observations = skill_defect(conformance)
    port = StoredPort(observations)
    lines = []
    verdict = run_preflight(contract, [probe], "skill-defect-run-0001", port, sink=lambda *line: lines.append(line))
    assert port.calls == [o["probeId"] for o in observations]  # the plan order of chains/README.md §1
    assert verdict.fixture_digest == load(conformance, "skill-defect/preflight-verdict.json")["fixtureDigest"]
    assert lines[0] == ("skill-defect-run-0001", "preflight", 'leg "witness-frontend": planned')
    assert lines[-1] == ("skill-defect-run-0001", "preflight", "reduced 5 leg(s): passed")


def test_a_port_error_is_a_port_failure_and_stops_at_once(conformance):
    contract, probe, observations = skill_defect(conformance)
    port = StoredPort(observations, broken="raise")
    with pytest.raises(RuntimeFault) as caught:
        run_preflight(contract, [probe], "r", port)
    assert (caught.value.code, caught.value.artifact_path) == ("port-failure", "ProbeObservation")
    assert port.calls == ["witness-frontend"]


def test_an_answer_failing_its_schema_is_a_port_contract_violation(conformance):
    contract, probe, observations = skill_defect(conformance)
    with pytest.raises(RuntimeFault) as caught:
        run_preflight(contract, [probe], "r", StoredPort(observations, broken="garbage"))
    assert caught.value.code == "port-contract-violation"
