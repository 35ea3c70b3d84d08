"""plan_preflight against the reference chains and one derived variant per planning rule (preflight-adapter.md §1)."""

from __future__ import annotations

import copy

import pytest

from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.preflight.plan import plan_preflight
from evalquality_core.registries import LEG_PURPOSES
from tests.core.preflight.chains import EMPTY_CLI_INPUTS, keyless_operation, load, operation, skill_defect


def test_skill_defect_plans_five_legs_in_reference_order(conformance):
    contract, probe, observations = skill_defect(conformance)
    plan = plan_preflight(contract, [probe], "skill-defect-run-0001")
    # chains/README.md §1: 2 sensitivity legs, 2 control legs (no fixtureReset), 1 seeded-fault leg; the
    # reference's own observations carry exactly these ids.
    assert [(leg.leg_id, leg.purpose) for leg in plan.legs] == [
        ("witness-frontend", "sensitivity"),
        ("witness-backend", "sensitivity"),
        ("preflight-control-observe", "control-observe"),
        ("preflight-control-observe-2", "control-observe"),
        ("skill-defect-leg", "seeded-fault"),
    ]
    assert [leg.leg_id for leg in plan.legs] == [o["probeId"] for o in observations]
    assert [c.kind for c in plan.checks] == [
        "interface-present",
        "input-sensitivity",
        "state-reset",
        "clean-control",
        "seeded-faults-scoped",
        "seeded-fault-fired",
    ]


def test_cli_request_carries_the_correlation_triple_and_the_invocation(conformance):
    contract, probe, _ = skill_defect(conformance)
    plan = plan_preflight(contract, [probe], "r")
    witness_leg = operation(contract)["sensitivityWitness"]["legs"][0]
    request = plan.legs[0].request
    assert request == {
        "kind": "cli",
        "probeId": "witness-frontend",
        "interfaceId": "skill-runner",
        "operationId": "run-skill",
        "executable": "skill-runner",
        "subcommandPath": [],
        "channels": witness_leg["inputs"],
    }
    # Control legs reuse the first witness leg's inputs (§1.5).
    assert plan.legs[2].request["channels"] == witness_leg["inputs"]


def test_workflow_capture_control_block_and_check_order(conformance):
    contract = load(conformance, "workflow-capture/eval-contract.json")
    probe = load(conformance, "workflow-capture/probe.json")
    expected = load(conformance, "expected.json")["workflow-capture"]["preflight"]
    plan = plan_preflight(contract, [probe], expected["runId"])
    assert len(plan.legs) == expected["legs"]
    assert [leg.leg_id for leg in plan.legs if leg.purpose.startswith("control")] == expected["controlLegOrder"]
    assert [f"{c.kind} {c.operation_id or 'null'}" for c in plan.checks] == [
        " ".join(line.split()[:2]) for line in expected["checks"]
    ]
    assert plan.legs[-1].leg_id == "workflow-defect-leg"
    api_request = plan.legs[0].request
    assert api_request["kind"] == "api" and set(api_request["channels"]) == {"path", "query", "header", "body"}


def test_tutorial_workflow_check_order_follows_declaration_order(conformance):
    contract = load(conformance, "tutorial-workflow/eval-contract.json")
    probes = load(conformance, "tutorial-workflow/probes.json")
    expected = load(conformance, "expected.json")["tutorial-workflow"]["preflight"]
    plan = plan_preflight(contract, probes, expected["runId"])
    assert len(plan.legs) == expected["legs"]
    assert [f"{c.kind} {c.operation_id or 'null'}" for c in plan.checks] == [
        " ".join(line.split()[:2]) for line in expected["checks"]
    ]


def test_minted_ids_avoid_every_taken_id(conformance):
    contract, probe, _ = skill_defect(conformance)
    contract["interactionPlan"][0]["stepId"] = "preflight-control-observe"
    probe["defects"][0]["manifestationWitness"]["legId"] = "preflight-control-observe-2"
    plan = plan_preflight(contract, [probe], "r")
    controls = [leg.leg_id for leg in plan.legs if leg.purpose == "control-observe"]
    assert controls == ["preflight-control-observe-3", "preflight-control-observe-4"]


def test_clean_probes_and_null_witnesses_add_no_leg(conformance):
    contract, probe, _ = skill_defect(conformance)
    clean = load(conformance, "tutorial-skill/honest-probe.json")
    probe["defects"][0]["manifestationWitness"] = None
    plan = plan_preflight(contract, [clean, probe], "r")
    assert [leg.purpose for leg in plan.legs] == ["sensitivity", "sensitivity", "control-observe", "control-observe"]
    fired = plan.checks[-1]
    assert (fired.kind, fired.operation_id, fired.defect_id) == ("seeded-fault-fired", None, "D-001")
    assert "seeded-faults-scoped" not in [c.kind for c in plan.checks]


def test_clean_legs_of_a_fault_are_every_earlier_leg_of_its_operation(conformance):
    contract, probe, _ = skill_defect(conformance)
    second = copy.deepcopy(probe["defects"][0])
    second["defectId"] = "D-002"
    second["manifestationWitness"]["legId"] = "second-fault-leg"
    probe["defects"].append(second)
    plan = plan_preflight(contract, [probe], "r")
    scoped = [c for c in plan.checks if c.kind == "seeded-faults-scoped"]
    base = ("witness-frontend", "witness-backend", "preflight-control-observe", "preflight-control-observe-2")
    assert scoped[0].clean_leg_ids == base
    assert scoped[1].clean_leg_ids == (*base, "skill-defect-leg")


def test_reset_branch_plans_observe_mutate_reset_observe(conformance):
    contract, probe, _ = skill_defect(conformance)
    interface = contract["permittedInterfaces"][0]
    interface["operations"].append(keyless_operation(operation(contract), "add-rule", mutating=True))
    interface["operations"].append(keyless_operation(operation(contract), "reset-rules", mutating=True))
    contract["fixtureReset"] = {
        "legId": "reset-rules-leg",
        "interfaceId": "skill-runner",
        "operationId": "reset-rules",
        "inputs": EMPTY_CLI_INPUTS,
    }
    plan = plan_preflight(contract, [probe], "r")
    control = [(leg.leg_id, leg.purpose, leg.operation_id) for leg in plan.legs if leg.purpose != "sensitivity"][:4]
    assert control == [
        ("preflight-control-observe", "control-observe", "run-skill"),
        ("preflight-control-mutate", "control-mutate", "add-rule"),
        ("reset-rules-leg", "control-reset", "reset-rules"),
        ("preflight-control-observe-2", "control-observe", "run-skill"),
    ]
    clean_control = next(c for c in plan.checks if c.kind == "clean-control")
    assert clean_control.leg_ids == tuple(leg_id for leg_id, _, _ in control)
    state_reset = next(c for c in plan.checks if c.kind == "state-reset")
    assert state_reset.leg_ids == ("preflight-control-observe", "preflight-control-observe-2")
    # Census: the reference's five kinds planned; ours, the witness's clean twin, only when asked for.
    assert set(LEG_PURPOSES) - {"seeded-fault-clean"} == {leg.purpose for leg in plan.legs}
    twins = plan_preflight(contract, [probe], "r", clean_witness_legs=True)
    assert set(LEG_PURPOSES) == {leg.purpose for leg in twins.legs}


def test_no_observable_operation_means_no_control_checks(conformance):
    contract, probe, _ = skill_defect(conformance)
    operation(contract)["stateChangeMarker"] = True
    plan = plan_preflight(contract, [probe], "r")
    assert not [leg for leg in plan.legs if leg.purpose.startswith("control")]
    assert {"state-reset", "clean-control"}.isdisjoint(c.kind for c in plan.checks)


def test_probe_stamp_is_checked_first(conformance):
    contract, probe, _ = skill_defect(conformance)
    probe["schemaVersion"] = 4
    contract["permittedInterfaces"][0]["kind"] = "web"  # would fail later; the stamp wins
    with pytest.raises(RuntimeFault) as caught:
        plan_preflight(contract, [probe], "r")
    assert (caught.value.code, caught.value.artifact_path) == ("schema-version-mismatch", "Probe[probeId=P-001].schemaVersion")


def test_contract_stamp(conformance):
    contract, probe, _ = skill_defect(conformance)
    contract["schemaVersion"] = 9
    with pytest.raises(RuntimeFault) as caught:
        plan_preflight(contract, [probe], "r")
    assert caught.value.artifact_path == "EvalContract.schemaVersion"


def test_unsupported_interface_kind(conformance):
    contract, probe, _ = skill_defect(conformance)
    contract["permittedInterfaces"][0]["kind"] = "web"
    with pytest.raises(StructuralFailure) as caught:
        plan_preflight(contract, [probe], "r")
    assert caught.value.code == "unsupported-interface-kind"
    assert caught.value.artifact_path == "EvalContract.permittedInterfaces[logicalId=skill-runner].kind"


def test_transport_inputs_on_a_command_operation(conformance):
    contract, probe, _ = skill_defect(conformance)
    operation(contract)["sensitivityWitness"]["legs"][0]["inputs"] = {
        "path": {},
        "query": {},
        "header": {},
        "body": {"kind": "absent"},
    }
    with pytest.raises(StructuralFailure) as caught:
        plan_preflight(contract, [probe], "r")
    assert caught.value.code == "undeclared-mandatory-input"
    assert caught.value.detail == "supplies transport channels to an operation that runs behind a command"


def test_fault_witness_missing_a_required_key(conformance):
    contract, probe, _ = skill_defect(conformance)
    probe["defects"][0]["manifestationWitness"]["inputs"]["option"] = {}
    with pytest.raises(StructuralFailure) as caught:
        plan_preflight(contract, [probe], "r")
    assert caught.value.code == "undeclared-mandatory-input"
    assert caught.value.artifact_path.startswith("Probe[probeId=P-001].defects[defectId=D-001].manifestationWitness")


def test_duplicate_leg_ids(conformance):
    contract, probe, _ = skill_defect(conformance)
    probe["defects"][0]["manifestationWitness"]["legId"] = "witness-backend"
    with pytest.raises(StructuralFailure) as caught:
        plan_preflight(contract, [probe], "r")
    assert caught.value.code == "malformed-operator-expression"
    assert "two legs sharing a probeId cannot be told apart" in caught.value.detail
    assert caught.value.artifact_path == "Probe[probeId=P-001].defects[defectId=D-001].manifestationWitness.legId"


def test_witness_naming_an_undeclared_operation(conformance):
    contract, probe, _ = skill_defect(conformance)
    probe["defects"][0]["manifestationWitness"]["operationId"] = "run-other"
    with pytest.raises(StructuralFailure) as caught:
        plan_preflight(contract, [probe], "r")
    assert caught.value.code == "unreachable-check-evidence"
    assert caught.value.artifact_path == "Probe[probeId=P-001].defects[defectId=D-001].manifestationWitness"


def test_reset_naming_an_undeclared_operation(conformance):
    contract, probe, _ = skill_defect(conformance)
    contract["permittedInterfaces"][0]["operations"].append(
        keyless_operation(operation(contract), "add-rule", mutating=True)
    )
    contract["fixtureReset"] = {
        "legId": "reset-leg",
        "interfaceId": "skill-runner",
        "operationId": "no-such-reset",
        "inputs": EMPTY_CLI_INPUTS,
    }
    with pytest.raises(StructuralFailure) as caught:
        plan_preflight(contract, [probe], "r")
    assert (caught.value.code, caught.value.artifact_path) == ("unreachable-check-evidence", "EvalContract.fixtureReset")


def test_a_plan_with_no_leg_is_refused(conformance):
    contract, _, _ = skill_defect(conformance)
    operation(contract)["sensitivityWitness"] = None  # keys declared, no witness: no control inputs either
    clean = load(conformance, "tutorial-skill/honest-probe.json")
    with pytest.raises(StructuralFailure) as caught:
        plan_preflight(contract, [clean], "r")
    assert (caught.value.code, caught.value.artifact_path) == ("unreachable-check-evidence", "EvalContract.permittedInterfaces")
