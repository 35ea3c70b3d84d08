"""A manifestation witness must be shown to fail on the clean system (issue 33, "witness-clean").

Pure plan and reduce, no process: with ``clean_witness_legs`` every witness gets a clean twin (its own
inputs sent to the clean system), reused when the plan already sends that request to the clean system,
and ``seeded-faults-scoped`` refuses a witness that also holds on the twin, or whose twin did not answer.
The reference's plan (no flag) is untouched: tests/core/preflight/test_plan.py and test_reduce.py.
Expected notes are the README "Pre-flight flow" wording, not our output.
"""

from __future__ import annotations

import copy

from evalquality_core.preflight.plan import plan_preflight
from evalquality_core.preflight.reduce import reduce_preflight_wire
from tests.core.preflight.chains import by_leg, skill_defect

FRONTEND = ["interaction-rules", "timing-rules", "quality-rules"]
TWIN = "skill-defect-leg-clean"


def _plan(contract, probes):
    return plan_preflight(contract, probes, "r", clean_witness_legs=True)


def _scoped(verdict):
    return next(c for c in verdict["checks"] if c["kind"] == "seeded-faults-scoped")


def _twin_observation(observations, selected):
    """The clean twin's answer: the fault leg's observation re-labelled, answering ``selected``."""
    twin = copy.deepcopy(by_leg(observations)["skill-defect-leg"])
    twin["probeId"] = TWIN
    twin["stdout"]["value"]["selected"] = list(selected)
    return twin


def test_each_witness_gets_a_clean_twin_planned_before_its_fault_leg(conformance):
    contract, probe, _ = skill_defect(conformance)
    plan = _plan(contract, [probe])
    assert [(leg.leg_id, leg.purpose) for leg in plan.legs][-2:] == [
        (TWIN, "seeded-fault-clean"),
        ("skill-defect-leg", "seeded-fault"),
    ]
    twin, fault = plan.leg(TWIN), plan.leg("skill-defect-leg")
    # The same request as the fault leg, leg id aside: the witness's own inputs.
    assert {**twin.request, "probeId": ""} == {**fault.request, "probeId": ""}
    assert twin.request["probeId"] == TWIN
    scoped = next(c for c in plan.checks if c.kind == "seeded-faults-scoped")
    assert scoped.clean_twin_leg_id == TWIN
    assert TWIN in scoped.clean_leg_ids
    present = next(c for c in plan.checks if c.kind == "interface-present")
    assert TWIN in present.leg_ids


def test_the_reference_plan_has_no_twin(conformance):
    contract, probe, _ = skill_defect(conformance)
    plan = plan_preflight(contract, [probe], "r")
    assert "seeded-fault-clean" not in {leg.purpose for leg in plan.legs}
    assert next(c for c in plan.checks if c.kind == "seeded-faults-scoped").clean_twin_leg_id is None


def test_an_identical_clean_leg_is_reused_not_planned_twice(conformance):
    contract, probe, _ = skill_defect(conformance)
    backend = contract["permittedInterfaces"][0]["operations"][0]["sensitivityWitness"]["legs"][1]
    probe["defects"][0]["manifestationWitness"]["inputs"] = copy.deepcopy(backend["inputs"])
    plan = _plan(contract, [probe])
    assert [leg.purpose for leg in plan.legs].count("seeded-fault-clean") == 0
    assert len(plan.legs) == len(plan_preflight(contract, [probe], "r").legs)
    scoped = next(c for c in plan.checks if c.kind == "seeded-faults-scoped")
    assert scoped.clean_twin_leg_id == "witness-backend"


def test_two_witnesses_with_the_same_inputs_share_one_twin(conformance):
    contract, probe, _ = skill_defect(conformance)
    second = copy.deepcopy(probe["defects"][0])
    second["defectId"] = "D-002"
    second["manifestationWitness"]["legId"] = "second-fault-leg"
    probe["defects"].append(second)
    plan = _plan(contract, [probe])
    assert [leg.purpose for leg in plan.legs].count("seeded-fault-clean") == 1
    scoped = [c for c in plan.checks if c.kind == "seeded-faults-scoped"]
    assert [c.clean_twin_leg_id for c in scoped] == [TWIN, TWIN]


def test_a_twin_id_is_minted_clear_of_every_declared_id(conformance):
    contract, probe, _ = skill_defect(conformance)
    contract["permittedInterfaces"][0]["operations"][0]["sensitivityWitness"]["legs"][0]["legId"] = TWIN
    plan = _plan(contract, [probe])
    assert plan.legs[-2].purpose == "seeded-fault-clean"
    assert plan.legs[-2].leg_id == f"{TWIN}-2"


def test_a_witness_that_fails_on_the_clean_twin_is_accepted(conformance):
    contract, probe, observations = skill_defect(conformance)
    observations.append(_twin_observation(observations, FRONTEND))
    verdict = reduce_preflight_wire(_plan(contract, [probe]), observations)
    assert (_scoped(verdict)["outcome"], _scoped(verdict)["note"]) == ("satisfied", "D-001")
    assert verdict["passed"] is True


def test_a_witness_that_also_holds_on_the_clean_twin_is_refused(conformance):
    contract, probe, observations = skill_defect(conformance)
    # Clean behaviour that the witness ("some selected item is mobile-rules or contract-rules") matches too.
    observations.append(_twin_observation(observations, [*FRONTEND, "contract-rules"]))
    verdict = reduce_preflight_wire(_plan(contract, [probe]), observations)
    assert verdict["passed"] is False
    assert _scoped(verdict) == {
        "kind": "seeded-faults-scoped",
        "interfaceId": "skill-runner",
        "operationId": "run-skill",
        "outcome": "failed",
        "note": 'D-001: the manifestation witness also holds on the clean system for its own inputs '
        '(clean leg "skill-defect-leg-clean"), so it does not tell the defect from clean behaviour',
    }


def test_a_twin_that_answered_like_the_fault_leg_is_refused_not_dropped(conformance):
    # The 1.4.0 drop would set an identical answer aside; for the twin that is the hole itself.
    contract, probe, observations = skill_defect(conformance)
    fault = by_leg(observations)["skill-defect-leg"]
    observations.append(_twin_observation(observations, fault["stdout"]["value"]["selected"]))
    verdict = reduce_preflight_wire(_plan(contract, [probe]), observations)
    assert _scoped(verdict)["outcome"] == "failed"
    assert "also holds on the clean system" in _scoped(verdict)["note"]


def test_a_twin_with_no_observation_shows_nothing_and_fails(conformance):
    contract, probe, observations = skill_defect(conformance)
    verdict = reduce_preflight_wire(_plan(contract, [probe]), observations)  # no twin answer
    assert (_scoped(verdict)["outcome"], _scoped(verdict)["note"]) == (
        "failed",
        'D-001: clean leg "skill-defect-leg-clean" (the witness\'s own inputs on the clean system) produced no '
        "observation, so nothing shows the witness fails on clean behaviour",
    )
