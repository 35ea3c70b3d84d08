"""reduce_preflight: the reference's stored verdicts reproduced, then one derived case per check rule and note.

Expected values come from the reference's artifacts (chains/) or from the exact note strings of
preflight-adapter.md §2.3–§2.4, never from our own output.
"""

from __future__ import annotations

import copy

import pytest

from evalquality_core.faults import RuntimeFault
from evalquality_core.preflight.plan import plan_preflight
from evalquality_core.preflight.projection import prune_body
from evalquality_core.preflight.reduce import CHECK_RULES, reduce_preflight_wire
from evalquality_core.registries import PREFLIGHT_CHECK_KINDS
from tests.core.preflight.chains import (
    EMPTY_CLI_INPUTS,
    by_leg,
    cli_observation,
    keyless_operation,
    load,
    operation,
    skill_defect,
)

FRONTEND = ["interaction-rules", "timing-rules", "quality-rules"]


def _reduce(contract, probes, observations, run_id="r"):
    return reduce_preflight_wire(plan_preflight(contract, probes, run_id), observations)


def _check(verdict, kind, index=0):
    return [c for c in verdict["checks"] if c["kind"] == kind][index]


def test_skill_defect_verdict_is_reproduced(conformance):
    contract, probe, observations = skill_defect(conformance)
    stored = load(conformance, "skill-defect/preflight-verdict.json")  # schema v1: no interfaceId
    verdict = _reduce(contract, [probe], observations, stored["runId"])
    assert verdict["fixtureDigest"] == stored["fixtureDigest"]
    assert (verdict["passed"], verdict["runId"]) == (stored["passed"], stored["runId"])
    assert [{k: v for k, v in c.items() if k != "interfaceId"} for c in verdict["checks"]] == stored["checks"]
    assert verdict["schemaVersion"] == 2
    assert [c["interfaceId"] for c in verdict["checks"]] == [
        None if c["operationId"] is None else "skill-runner" for c in stored["checks"]
    ]


@pytest.mark.parametrize("probe_file", ["honest-probe.json", "degenerate-probe.json"])
def test_tutorial_skill_four_legs_all_satisfied(conformance, probe_file):
    contract = load(conformance, "tutorial-skill/checklist-selection.json")
    probe = load(conformance, f"tutorial-skill/{probe_file}")
    expected = load(conformance, "expected.json")["tutorial-skill"]["preflight"]
    plan = plan_preflight(contract, [probe], expected["runIds"][0])
    verdict = reduce_preflight_wire(plan, load(conformance, "tutorial-skill/observations.json"))
    assert len(plan.legs) == expected["legs"]
    assert verdict["passed"] is expected["passed"]
    assert [f"{c['kind']} {c['operationId'] or 'null'} {c['outcome']}" for c in verdict["checks"]] == expected["checks"]


def test_tutorial_workflow_ten_checks_satisfied(conformance):
    contract = load(conformance, "tutorial-workflow/eval-contract.json")
    expected = load(conformance, "expected.json")["tutorial-workflow"]["preflight"]
    verdict = _reduce(
        contract,
        load(conformance, "tutorial-workflow/probes.json"),
        load(conformance, "tutorial-workflow/observations.json"),
        expected["runId"],
    )
    assert verdict["passed"] is True
    assert [f"{c['kind']} {c['operationId'] or 'null'} {c['outcome']}" for c in verdict["checks"]] == expected["checks"]


# --- interface-present -------------------------------------------------------------------------


def test_interface_present_missing_leg(conformance):
    contract, probe, observations = skill_defect(conformance)
    observations = [o for o in observations if o["probeId"] != "witness-backend"]
    verdict = _reduce(contract, [probe], observations)
    check = _check(verdict, "interface-present")
    assert (check["outcome"], check["note"]) == ("failed", 'leg "witness-backend" produced no observation')
    assert _check(verdict, "input-sensitivity")["note"] == 'witness leg "witness-backend" produced no observation'
    assert verdict["passed"] is False


def test_interface_present_bad_echo(conformance):
    contract, probe, observations = skill_defect(conformance)
    by_leg(observations)["preflight-control-observe"]["operationId"] = "run-other"
    check = _check(_reduce(contract, [probe], observations), "interface-present")
    assert check["note"] == 'leg "preflight-control-observe" echoed an identifier the request did not carry'


# --- input-sensitivity -------------------------------------------------------------------------


def test_input_sensitivity_false(conformance):
    contract, probe, observations = skill_defect(conformance)
    by_leg(observations)["witness-backend"]["stdout"]["value"]["selected"] = list(FRONTEND)
    check = _check(_reduce(contract, [probe], observations), "input-sensitivity")
    assert (check["outcome"], check["note"]) == ("failed", "The witness relation resolved false.")


def test_input_sensitivity_insufficient_evidence(conformance):
    contract, probe, observations = skill_defect(conformance)
    by_leg(observations)["witness-backend"]["stdout"]["value"]["selected"] = []  # deep-equality needs a member
    check = _check(_reduce(contract, [probe], observations), "input-sensitivity")
    assert check["note"] == "The witness relation resolved insufficient-evidence."


def test_input_sensitivity_exempt_and_missing_witness(conformance):
    contract, probe, observations = skill_defect(conformance)
    interface = contract["permittedInterfaces"][0]
    interface["operations"].append(keyless_operation(operation(contract), "list-skills", mutating=False))
    with_keys = keyless_operation(operation(contract), "set-skill", mutating=True)
    with_keys["requestShape"]["option"] = {"permittedKeys": ["skill"], "requiredKeys": [], "types": {"skill": "string"}}
    interface["operations"].append(with_keys)
    verdict = _reduce(contract, [probe], observations)
    exempt = _check(verdict, "input-sensitivity", 1)
    assert (exempt["operationId"], exempt["outcome"], exempt["note"]) == (
        "list-skills",
        "exempt",
        "The operation declares no inputs in any channel.",
    )
    missing = _check(verdict, "input-sensitivity", 2)
    assert (missing["outcome"], missing["note"]) == (
        "failed",
        "The operation declares request keys and no sensitivity witness.",
    )


# --- state-reset and clean-control -----------------------------------------------------------------


def test_state_reset_projections_differ(conformance):
    contract, probe, observations = skill_defect(conformance)
    by_leg(observations)["preflight-control-observe-2"]["stdout"]["value"]["selected"] = ["api-rules"]
    verdict = _reduce(contract, [probe], observations)
    check = _check(verdict, "state-reset")
    assert check == {
        "kind": "state-reset",
        "interfaceId": None,
        "operationId": None,
        "outcome": "failed",
        "note": 'the projections of "preflight-control-observe" and "preflight-control-observe-2" differ',
    }


def test_state_reset_ignores_pruned_volatile_fields(conformance):
    contract, probe, observations = skill_defect(conformance)
    operation(contract)["volatilePointers"] = ["/runAt"]
    for leg_id, stamp in (("preflight-control-observe", "t1"), ("preflight-control-observe-2", "t2")):
        by_leg(observations)[leg_id]["stdout"]["value"]["runAt"] = stamp
    assert _check(_reduce(contract, [probe], observations), "state-reset")["outcome"] == "satisfied"


def test_state_reset_and_clean_control_missing_observation(conformance):
    contract, probe, observations = skill_defect(conformance)
    observations = [o for o in observations if o["probeId"] != "preflight-control-observe-2"]
    verdict = _reduce(contract, [probe], observations)
    assert _check(verdict, "state-reset")["note"] == "a control-observe leg produced no observation"
    assert _check(verdict, "clean-control")["note"] == 'control leg "preflight-control-observe-2" produced no observation'


def test_clean_control_anomaly(conformance):
    contract, probe, observations = skill_defect(conformance)
    by_leg(observations)["preflight-control-observe"]["exitCode"] = 2
    check = _check(_reduce(contract, [probe], observations), "clean-control")
    assert (check["outcome"], check["note"]) == ("failed", 'control leg "preflight-control-observe" observed exit code 2')


def test_clean_control_api_status(conformance):
    contract = load(conformance, "tutorial-workflow/eval-contract.json")
    observations = load(conformance, "tutorial-workflow/observations.json")
    by_leg(observations)["reset-the-store"]["status"] = 503
    verdict = _reduce(contract, load(conformance, "tutorial-workflow/probes.json"), observations)
    assert _check(verdict, "clean-control")["note"] == 'control leg "reset-the-store" observed status 503'


# --- seeded-faults-scoped (with the 1.4.0 drop) and seeded-fault-fired -----------------------------


def test_scoped_fires_on_a_clean_leg(conformance):
    contract, probe, observations = skill_defect(conformance)
    by_leg(observations)["witness-backend"]["stdout"]["value"]["selected"] = ["api-rules", "mobile-rules"]
    check = _check(_reduce(contract, [probe], observations), "seeded-faults-scoped")
    assert (check["outcome"], check["note"]) == (
        "failed",
        'D-001: the manifestation witness fires on clean leg "witness-backend"',
    )


def _keyless_fault_contract(conformance, fault_operation_mutating: bool):
    """A contract whose run-skill has no inputs (control legs send the fault leg's very request)."""
    contract, probe, _ = skill_defect(conformance)
    keyless = keyless_operation(operation(contract), "run-skill", mutating=fault_operation_mutating)
    contract["permittedInterfaces"][0]["operations"] = [keyless]
    contract["interactionPlan"] = []
    witness = probe["defects"][0]["manifestationWitness"]
    witness["inputs"] = copy.deepcopy(EMPTY_CLI_INPUTS)
    return contract, probe


def test_scoped_drops_clean_legs_that_answered_alike(conformance):
    contract, probe = _keyless_fault_contract(conformance, fault_operation_mutating=False)
    answer = [*FRONTEND, "mobile-rules"]
    observations = [
        cli_observation(leg, "run-skill", answer)
        for leg in ("preflight-control-observe", "preflight-control-observe-2", "skill-defect-leg")
    ]
    verdict = _reduce(contract, [probe], observations)
    assert _check(verdict, "seeded-faults-scoped")["note"] == (
        "D-001: every other leg of the operation issued the fault leg's own request and received its answer "
        '("preflight-control-observe", "preflight-control-observe-2"), so nothing here establishes that the '
        "defect is scoped to it"
    )
    # Same request, different answer: the leg is examined (and here the witness does not fire on it).
    observations[0]["stdout"]["value"]["selected"] = FRONTEND
    observations[1]["stdout"]["value"]["selected"] = FRONTEND
    check = _check(_reduce(contract, [probe], observations), "seeded-faults-scoped")
    assert (check["outcome"], check["note"]) == ("satisfied", "D-001")


def test_scoped_alone(conformance):
    contract, probe = _keyless_fault_contract(conformance, fault_operation_mutating=True)  # no control legs
    verdict = _reduce(contract, [probe], [cli_observation("skill-defect-leg", "run-skill", ["mobile-rules"])])
    check = _check(verdict, "seeded-faults-scoped")
    assert (check["outcome"], check["operationId"], check["note"]) == (
        "failed",
        "run-skill",
        "D-001: the operation has no leg besides the fault leg, so nothing here establishes that the defect "
        "is scoped to it",
    )


def test_fired_false_and_missing(conformance):
    contract, probe, observations = skill_defect(conformance)
    by_leg(observations)["skill-defect-leg"]["stdout"]["value"]["selected"] = list(FRONTEND)
    check = _check(_reduce(contract, [probe], observations), "seeded-fault-fired")
    assert check["note"] == "D-001: the manifestation witness resolved false on its own fault leg"
    observations = [o for o in observations if o["probeId"] != "skill-defect-leg"]
    check = _check(_reduce(contract, [probe], observations), "seeded-fault-fired")
    assert check["note"] == "D-001: the fault leg produced no observation"


def test_fired_without_witness(conformance):
    contract, probe, observations = skill_defect(conformance)
    probe["defects"][0]["manifestationWitness"] = None
    check = _check(_reduce(contract, [probe], observations), "seeded-fault-fired")
    assert check == {
        "kind": "seeded-fault-fired",
        "interfaceId": None,
        "operationId": None,
        "outcome": "failed",
        "note": "D-001: the defect declares no manifestation witness, so it cannot be observed to fire",
    }


def test_check_rows_are_the_six_kinds():
    assert tuple(row.kind for row in CHECK_RULES) == PREFLIGHT_CHECK_KINDS


# --- echo validation (§2.1) --------------------------------------------------------------------


def test_repeated_probe_id_is_a_port_contract_violation(conformance):
    contract, probe, observations = skill_defect(conformance)
    with pytest.raises(RuntimeFault) as caught:
        _reduce(contract, [probe], [*observations, observations[0]])
    assert (caught.value.code, caught.value.artifact_path) == ("port-contract-violation", "PreflightVerdict")
    assert "two observations echoed the probe id" in caught.value.detail


def test_wrong_kind_and_no_echo(conformance):
    contract, probe, observations = skill_defect(conformance)
    wrong = copy.deepcopy(observations)
    wrong[0] = {"kind": "mcp", "probeId": "witness-frontend", "interfaceId": "skill-runner", "operationId": "run-skill",
                "isError": False, "result": {"kind": "absent"}}
    with pytest.raises(RuntimeFault) as caught:
        _reduce(contract, [probe], wrong)
    assert caught.value.code == "port-contract-violation"
    with pytest.raises(RuntimeFault) as caught:
        _reduce(contract, [probe], [cli_observation("someone-else", "run-skill", [])])
    assert caught.value.detail == "no observation echoed any of the 5 planned probe ids"


# --- pruning ---------------------------------------------------------------------------------------


def test_prune_body_rules():
    body = {"kind": "json", "value": {"items": [{"id": 1, "at": "x"}, {"id": 2, "at": "y"}], "at": "z"}}
    assert prune_body(body, ["/items/*/at"]) == {"kind": "json", "value": {"items": [{"id": 1}, {"id": 2}], "at": "z"}}
    assert body["value"]["items"][0]["at"] == "x"  # worked on a clone
    assert prune_body(body, ["/missing/x"]) == body
    assert prune_body(body, [""]) == {"kind": "absent"}
    assert prune_body({"kind": "text", "value": "t"}, [""]) == {"kind": "text", "value": "t"}
