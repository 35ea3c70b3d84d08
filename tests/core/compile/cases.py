"""Contracts for the compile tests: real conformance contracts and one-defect mutations of them.

Each case names the §3.1 row it exercises; the mutation is the smallest edit that breaks exactly
that rule (the reference's own corpus is built the same way, from ``satisfied-declarations``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFORMANCE = Path(__file__).resolve().parents[3].parent / "shared" / "conformance"
API_BASE = "corpus-dev/contracts/satisfied-declarations.json"
CLI_BASE = "chains/skill-defect/eval-contract.json"
CAPTURE_BASE = "chains/tutorial-workflow/eval-contract.json"
#: The reference's newest satisfied contract (stamp 7): the only stamp that carries stateResetPointers.
LATEST_BASE = "latest/corpus-dev/contracts/satisfied-declarations.json"


def load(relative: str) -> Any:
    """A conformance JSON file, parsed."""
    return json.loads((CONFORMANCE / relative).read_text(encoding="utf-8"))


def oracle(contract: dict[str, Any], oracle_id: str) -> dict[str, Any]:
    """The oracle with that id."""
    return next(o for o in contract["oracles"] if o["id"] == oracle_id)


def step(contract: dict[str, Any], step_id: str) -> dict[str, Any]:
    """The plan step with that id."""
    return next(s for s in contract["interactionPlan"] if s["stepId"] == step_id)


def operation(contract: dict[str, Any], operation_id: str) -> dict[str, Any]:
    """The operation with that id."""
    return next(op for i in contract["permittedInterfaces"] for op in i["operations"] if op["operationId"] == operation_id)


@dataclass(frozen=True)
class Case:
    """One defect: the row that must report it, the code and path, and how to make it."""

    name: str
    row: int
    code: str
    path: str
    base: str
    mutate: Callable[[dict[str, Any]], None]

    def contract(self) -> dict[str, Any]:
        """The base contract with this case's defect."""
        value = copy.deepcopy(load(self.base))
        self.mutate(value)
        return value


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(contract: dict[str, Any]) -> None:
        node: Any = contract
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return apply


def _dup_interface(c: dict[str, Any]) -> None:
    c["permittedInterfaces"].append(copy.deepcopy(c["permittedInterfaces"][0]))


def _artifact_pointer(c: dict[str, Any]) -> None:
    oracle(c, "O-001")["check"]["operands"][0]["pointer"] = "/interactions/frontend-case/artifact/report"


def _artifact_descriptor(c: dict[str, Any]) -> None:
    operation(c, "run-skill")["descriptorChannel"] = {"kind": "artifact", "artifactId": "report"}


def _unreachable_key(c: dict[str, Any]) -> None:
    oracle(c, "O-001")["check"]["operands"][1]["pointer"] = "/interactions/list/response-body/nope"


def _scalar_descent(c: dict[str, Any]) -> None:
    oracle(c, "O-002")["check"]["operands"][1]["operands"][0]["pointer"] = "/interactions/create/response-body/id/x"


def _call_inputs_undeclared(c: dict[str, Any]) -> None:
    oracle(c, "O-005")["check"]["operands"][1]["operands"][0]["pointer"] = "/interactions/list/call-inputs/query/offset"


def _command_body(c: dict[str, Any]) -> None:
    oracle(c, "O-001")["check"]["operands"][0]["pointer"] = "/interactions/frontend-case/response-body"


def _captured_ghost_step(c: dict[str, Any]) -> None:
    step(c, "read-back")["inputBinding"]["path"]["id"] = {"captured": "/interactions/ghost/response-body/id"}


def _captured_type(c: dict[str, Any]) -> None:
    step(c, "read-back")["inputBinding"]["path"]["id"] = {"captured": "/interactions/create/response-body/ok"}


def _captured_deep(c: dict[str, Any]) -> None:
    step(c, "read-back")["inputBinding"]["path"]["id"] = {"captured": "/interactions/create/response-body/id/x"}


def _bound_outside(c: dict[str, Any]) -> None:
    oracle(c, "O-002")["check"]["operands"][0]["operands"][0]["pointer"] = "@/id"


def _literal_container(c: dict[str, Any]) -> None:
    oracle(c, "O-006")["check"]["operands"][0] = {"literal": ["a"]}


def _ordering_call_inputs(c: dict[str, Any]) -> None:
    oracle(c, "O-002")["check"]["operands"][0] = {
        "op": "ordering",
        "operands": [{"pointer": "/interactions/create/call-inputs/body/name"}],
        "key": "id",
        "order": "ascending",
    }


def _set_membership_two_keys(c: dict[str, Any]) -> None:
    c["referenceSets"]["pairs"] = {"keys": ["a", "b"], "members": [{"a": 1, "b": 2}], "commentary": None}
    oracle(c, "O-002")["check"]["operands"][0] = {
        "op": "set-membership",
        "operands": [{"pointer": "/interactions/create/response-body/id"}, {"referenceSet": "pairs"}],
    }


def _covers_repeated_key(c: dict[str, Any]) -> None:
    c["referenceSets"]["expected-things"]["members"].append({"id": "t-1"})


def _regex(pattern: str) -> Callable[[dict[str, Any]], None]:
    def apply(c: dict[str, Any]) -> None:
        oracle(c, "O-002")["check"]["operands"][0] = {
            "op": "regex",
            "operands": [{"pointer": "/interactions/create/response-body/id"}],
            "pattern": pattern,
        }

    return apply


def _quantifier_over_string(c: dict[str, Any]) -> None:
    o = oracle(c, "O-007")
    o["check"]["collection"]["pointer"] = "/interactions/create/response-body/id"
    o["direction"]["evidenceTargets"] = ["/interactions/create/response-body/id"]


def _nested_quantifier(c: dict[str, Any]) -> None:
    oracle(c, "O-007")["check"]["predicate"] = {
        "op": "for-any",
        "collection": {"pointer": "@/tags"},
        "predicate": {"op": "existence", "operands": [{"pointer": "@/name"}]},
    }


def _unresolved_set(c: dict[str, Any]) -> None:
    oracle(c, "O-001")["check"]["operands"][0]["referenceSet"] = "ghost-set"


def _duplicate_signature(c: dict[str, Any]) -> None:
    operation(c, "list-things")["method"] = "POST"


def _undeclared_binding(c: dict[str, Any]) -> None:
    step(c, "create")["inputBinding"]["body"]["colour"] = {"matcher": "any"}


def _undeclared_principal(c: dict[str, Any]) -> None:
    step(c, "create")["inputBinding"]["body"]["name"] = {"principal": "ghost-user"}


def _missing_witness(c: dict[str, Any]) -> None:
    op = operation(c, "create-thing")
    op["stateChangeMarker"] = False
    op["sensitivityWitness"] = None


def _witness_leg_extra_key(c: dict[str, Any]) -> None:
    operation(c, "list-things")["sensitivityWitness"]["legs"][0]["inputs"]["query"]["offset"] = 3


def _misaligned_target(c: dict[str, Any]) -> None:
    oracle(c, "O-003")["direction"]["evidenceTargets"].append("/interactions/create/response-body/id")


def _misaligned_relation(c: dict[str, Any]) -> None:
    oracle(c, "O-003")["direction"]["relation"] = "any"


def _misaligned_polarity(c: dict[str, Any]) -> None:
    oracle(c, "O-003")["direction"]["polarity"] = "expects-violation"


def _nested_after(c: dict[str, Any]) -> None:
    step(c, "malformed-list")["after"] = "list"


def _anchors_three(c: dict[str, Any]) -> None:
    step(c, "malformed-create")["after"] = "create"
    step(c, "malformed-list")["after"] = "create"


def _seventeen_steps(c: dict[str, Any]) -> None:
    for n in range(13):
        extra = copy.deepcopy(step(c, "malformed-list"))
        extra["stepId"] = f"extra-{n}"
        c["interactionPlan"].append(extra)


def _captured_status(c: dict[str, Any]) -> None:
    step(c, "read-back")["inputBinding"]["path"]["id"] = {"captured": "/interactions/create/response-status"}


def _dup_rubric(c: dict[str, Any]) -> None:
    c["rubrics"].append(copy.deepcopy(c["rubrics"][0]))


def _dup_criterion(c: dict[str, Any]) -> None:
    c["rubrics"][0]["criteria"].append(copy.deepcopy(c["rubrics"][0]["criteria"][0]))


def _reasoning(c: dict[str, Any]) -> None:
    c["rubrics"][0]["criteria"][0]["text"] = "Does the evaluator show its Chain\u2010of  thought?"


def _blank_anchor(c: dict[str, Any]) -> None:
    c["rubrics"][0]["scaleLevels"][0]["anchor"] = " \u200b\ufeff "


def _rubric_evidence(c: dict[str, Any]) -> None:
    c["rubrics"][0]["criteria"][0]["evidence"] = "/interactions/list/response-body/nope"


def _irreducible(c: dict[str, Any]) -> None:
    twin = copy.deepcopy(step(c, "create"))
    twin["stepId"] = "create-again"
    c["interactionPlan"].append(twin)
    o = oracle(c, "O-002")
    o["check"]["operands"].append({"op": "existence", "operands": [{"pointer": "/interactions/create-again/response-body/id"}]})
    o["direction"]["evidenceTargets"].append("/interactions/create-again/response-body/id")


def _same_leg_ids(c: dict[str, Any]) -> None:
    operation(c, "list-things")["sensitivityWitness"]["legs"][1]["legId"] = "list-witness-a"


def _leg_is_step(c: dict[str, Any]) -> None:
    operation(c, "list-things")["sensitivityWitness"]["legs"][1]["legId"] = "create"


def _illegal_witness_channel(c: dict[str, Any]) -> None:
    operation(c, "list-things")["sensitivityWitness"]["channel"] = "body"


def _same_witness_values(c: dict[str, Any]) -> None:
    operation(c, "list-things")["sensitivityWitness"]["legs"][1]["inputs"]["query"]["limit"] = 1


def _relation_foreign_step(c: dict[str, Any]) -> None:
    relation = operation(c, "list-things")["sensitivityWitness"]["relation"]
    relation["operands"][0]["operands"][1]["pointer"] = "/interactions/list/response-body"


def _relation_one_leg(c: dict[str, Any]) -> None:
    relation = operation(c, "list-things")["sensitivityWitness"]["relation"]
    relation["operands"][0]["operands"][1]["pointer"] = "/interactions/list-witness-a/response-status"


def _relation_unreachable(c: dict[str, Any]) -> None:
    relation = operation(c, "list-things")["sensitivityWitness"]["relation"]
    relation["operands"][0]["operands"][1]["pointer"] = "/interactions/list-witness-b/response-body/nope"


def _reset_undeclared(c: dict[str, Any]) -> None:
    c["fixtureReset"]["operationId"] = "drop-things"


def _reset_leg_collides(c: dict[str, Any]) -> None:
    c["fixtureReset"]["legId"] = "read-back"


def _reset_not_state_changing(c: dict[str, Any]) -> None:
    c["fixtureReset"]["operationId"] = "get-thing"


def _reset_inputs(c: dict[str, Any]) -> None:
    c["fixtureReset"]["inputs"]["body"] = {"kind": "json", "value": {}}


def _reset_pointer_under_volatile(c: dict[str, Any]) -> None:
    operation(c, "create-thing")["stateResetPointers"] = ["/ok", "/id"]  # /id is declared volatile


def _reset_pointer_under_wildcard(c: dict[str, Any]) -> None:
    operation(c, "list-things").update(volatilePointers=["/items/*/at"], stateResetPointers=["/items/*/at/zone"])


def _reset_pointer_unreachable(c: dict[str, Any]) -> None:
    operation(c, "list-things")["stateResetPointers"] = ["/items", "/no-such-key/deep"]


_O = "EvalContract.oracles"
_P = "EvalContract.interactionPlan"
_W0 = "EvalContract.permittedInterfaces[0].operations[1].sensitivityWitness"
_R = "EvalContract.rubrics[id=R-001]"

#: One case per way a row can fire; the census test requires every CHECKS row to appear.
CASES: tuple[Case, ...] = (
    Case("stamp", 0, "schema-version-mismatch", "EvalContract.schemaVersion", API_BASE, _set(["schemaVersion"], 8)),
    Case("dup-interface", 1, "duplicate-interface-identifier", "EvalContract.permittedInterfaces[1].logicalId", API_BASE, _dup_interface),
    Case(
        "no-links", 2, "missing-requirement-linkage", "EvalContract.behaviors[id=B-001]", API_BASE,
        lambda c: c["behaviors"][0].update(requirementLinks=[], riskLinks=[]),
    ),
    Case(
        "no-criterion", 3, "no-observable-success-criterion",
        "EvalContract.behaviors[id=B-001].observableSuccessCriterion", API_BASE,
        _set(["behaviors", 0, "observableSuccessCriterion"], None),
    ),
    Case("artifact-pointer", 4, "unresolved-artifact-reference", f"{_O}[id=O-001].check.operands[0]", CLI_BASE, _artifact_pointer),
    Case(
        "artifact-descriptor", 4, "unresolved-artifact-reference",
        "EvalContract.permittedInterfaces[logicalId=skill-runner].operations[operationId=run-skill].descriptorChannel.artifactId",
        CLI_BASE, _artifact_descriptor,
    ),
    Case("undeclared-key", 5, "unreachable-check-evidence", f"{_O}[id=O-001].check.operands[1]", API_BASE, _unreachable_key),
    Case(
        "scalar-descent", 5, "unreachable-check-evidence", f"{_O}[id=O-002].check.operands[1].operands[0]", API_BASE, _scalar_descent
    ),
    Case(
        "call-inputs-key", 5, "unreachable-check-evidence", f"{_O}[id=O-005].check.operands[1].operands[0]", API_BASE,
        _call_inputs_undeclared,
    ),
    Case("command-body", 5, "unreachable-check-evidence", f"{_O}[id=O-001].check.operands[0]", CLI_BASE, _command_body),
    Case(
        "captured-ghost", 6, "unreachable-check-evidence", f'{_P}[stepId=read-back].inputBinding.path["id"]', CAPTURE_BASE,
        _captured_ghost_step,
    ),
    Case(
        "captured-type", 6, "unreachable-check-evidence", f'{_P}[stepId=read-back].inputBinding.path["id"]', CAPTURE_BASE,
        _captured_type,
    ),
    Case(
        "captured-deep", 6, "unreachable-check-evidence", f'{_P}[stepId=read-back].inputBinding.path["id"]', CAPTURE_BASE,
        _captured_deep,
    ),
    Case(
        "bound-outside", 7, "malformed-operator-expression", f"{_O}[id=O-002].check.operands[0].operands[0]", API_BASE, _bound_outside
    ),
    Case("literal-container", 8, "malformed-operator-expression", f"{_O}[id=O-006].check.operands[0]", API_BASE, _literal_container),
    Case(
        "ordering-call-inputs", 8, "malformed-operator-expression", f"{_O}[id=O-002].check.operands[0].operands[0]", API_BASE,
        _ordering_call_inputs,
    ),
    Case(
        "set-two-keys", 8, "malformed-operator-expression", f"{_O}[id=O-002].check.operands[0].operands[1]", API_BASE,
        _set_membership_two_keys,
    ),
    Case(
        "covers-repeat", 8, "malformed-operator-expression", "EvalContract.referenceSets[id=expected-things].members[3].id",
        API_BASE, _covers_repeated_key,
    ),
    Case("regex-alternation", 9, "malformed-operator-expression", f"{_O}[id=O-002].check.operands[0].pattern", API_BASE, _regex("^a|b$")),
    Case("regex-lookbehind", 9, "malformed-operator-expression", f"{_O}[id=O-002].check.operands[0].pattern", API_BASE, _regex("^(?<=a)b$")),
    Case("regex-backref", 9, "malformed-operator-expression", f"{_O}[id=O-002].check.operands[0].pattern", API_BASE, _regex("^(a)\\1$")),
    Case("regex-invalid", 9, "malformed-operator-expression", f"{_O}[id=O-002].check.operands[0].pattern", API_BASE, _regex("^(a$")),
    Case(
        "quantifier-string", 10, "quantifier-over-non-collection", f"{_O}[id=O-007].check.collection", API_BASE, _quantifier_over_string
    ),
    Case("nested-quantifier", 11, "quantifier-nesting-exceeded", f"{_O}[id=O-007].check.predicate", API_BASE, _nested_quantifier),
    Case("ghost-set", 12, "unresolved-reference-set", f"{_O}[id=O-001].check.operands[0]", API_BASE, _unresolved_set),
    Case(
        "dup-signature", 13, "duplicate-operation-signature",
        "EvalContract.permittedInterfaces[logicalId=thing-api].operations[operationId=list-things]", API_BASE, _duplicate_signature,
    ),
    Case(
        "undeclared-binding", 14, "undeclared-mandatory-input", f'{_P}[stepId=create].inputBinding.body["colour"]', API_BASE,
        _undeclared_binding,
    ),
    Case(
        "undeclared-principal", 14, "undeclared-mandatory-input", f'{_P}[stepId=create].inputBinding.body["name"]', API_BASE,
        _undeclared_principal,
    ),
    Case(
        "missing-witness", 15, "undeclared-mandatory-input",
        "EvalContract.permittedInterfaces[0].operations[0]", API_BASE, _missing_witness,
    ),
    Case("witness-extra-key", 15, "undeclared-mandatory-input", f"{_W0}.legs[0]", API_BASE, _witness_leg_extra_key),
    Case("no-direction", 16, "oracle-missing-channel", f"{_O}[id=O-003].direction", API_BASE, _set(["oracles", 2, "direction"], None)),
    Case("no-check", 16, "oracle-missing-channel", f"{_O}[id=O-003].check", API_BASE, _set(["oracles", 2, "check"], None)),
    Case(
        "misaligned-target", 17, "direction-check-misaligned", f"{_O}[id=O-003].direction.evidenceTargets", API_BASE,
        _misaligned_target,
    ),
    Case("misaligned-relation", 17, "direction-check-misaligned", f"{_O}[id=O-003].direction.relation", API_BASE, _misaligned_relation),
    Case("misaligned-polarity", 17, "direction-check-misaligned", f"{_O}[id=O-003].direction.polarity", API_BASE, _misaligned_polarity),
    Case(
        "web-kind", 18, "unsupported-interface-kind", "EvalContract.permittedInterfaces[logicalId=thing-api].kind", API_BASE,
        _set(["permittedInterfaces", 0, "kind"], "web"),
    ),
    Case("nested-after", 19, "nested-temporal-clause", f"{_P}[stepId=malformed-list].after", API_BASE, _nested_after),
    Case("anchors-three", 20, "plan-exceeds-scripting-bound", _P, API_BASE, _anchors_three),
    Case("seventeen-steps", 20, "plan-exceeds-scripting-bound", _P, API_BASE, _seventeen_steps),
    Case(
        "binding-cycle", 21, "binding-cycle", f'{_P}[stepId=create].inputBinding.body["name"]', "chains/tutorial-workflow/broken-binding-cycle.json",
        lambda c: None,
    ),
    Case(
        "captured-status", 22, "captured-channel-undeclared", f'{_P}[stepId=read-back].inputBinding.path["id"]', CAPTURE_BASE,
        _captured_status,
    ),
    Case("dup-rubric", 23, "rubric-unanchored", "EvalContract.rubrics[1].id", API_BASE, _dup_rubric),
    Case("dup-criterion", 23, "rubric-unanchored", f"{_R}.criteria[1].id", API_BASE, _dup_criterion),
    Case("reasoning-prose", 24, "rubric-scores-reasoning-prose", f"{_R}.criteria[id=RC-001].text", API_BASE, _reasoning),
    Case("blank-anchor", 25, "rubric-unanchored", f"{_R}.scaleLevels[0].anchor", API_BASE, _blank_anchor),
    Case("no-max-length", 25, "rubric-unanchored", f"{_R}.maxLength", API_BASE, _set(["rubrics", 0, "maxLength"], None)),
    Case("rubric-evidence", 26, "rubric-evidence-unreachable", f"{_R}.criteria[id=RC-001].evidence", API_BASE, _rubric_evidence),
    Case(
        "floor", 27, "forbidden-input-floor-incomplete", "EvalContract.forbiddenInputs", API_BASE,
        lambda c: c["forbiddenInputs"].remove("human-labels"),
    ),
    Case(
        "email", 28, "excluded-content-in-declaration", "EvalContract.behaviors[0].description", API_BASE,
        _set(["behaviors", 0, "description"], "Mail ada@example.com when done."),
    ),
    Case(
        "card", 28, "excluded-content-in-declaration", "EvalContract.safetyLimits[0]", API_BASE,
        _set(["safetyLimits", 0], "never charge 4111 1111 1111 1111"),
    ),
    Case(
        "resources", 29, "scoped-reference-resolves-forbidden", 'EvalContract.testData.resources["db"]', API_BASE,
        _set(["testData", "resources"], {"zz": {"kind": "queue"}, "db": {"kind": "database"}}),
    ),
    Case(
        "scoped", 29, "scoped-reference-resolves-forbidden", "EvalContract.scopedResources[0].reference", API_BASE,
        _set(["scopedResources"], [{"reference": "prod-db", "kind": "database"}]),
    ),
    Case("waiver", 30, "waiver-incomplete", "EvalContract.waivers[id=W-001].approval", API_BASE, _set(["waivers", 0, "approval"], None)),
    Case("irreducible", 31, "irreducible-step-reference", f"{_O}[id=O-002].direction.evidenceTargets", API_BASE, _irreducible),
    Case("same-leg-ids", 32, "malformed-operator-expression", f"{_W0}.legs", API_BASE, _same_leg_ids),
    Case("leg-is-step", 32, "malformed-operator-expression", f"{_W0}.legs[1].legId", API_BASE, _leg_is_step),
    Case("witness-channel", 33, "malformed-operator-expression", _W0, API_BASE, _illegal_witness_channel),
    Case("witness-same-values", 33, "malformed-operator-expression", f"{_W0}.legs", API_BASE, _same_witness_values),
    Case(
        "relation-foreign-step", 33, "unreachable-check-evidence", f"{_W0}.relation", API_BASE,
        _relation_foreign_step,
    ),
    Case(
        "reset-no-state-change", 33, "malformed-operator-expression", "EvalContract.fixtureReset", CAPTURE_BASE,
        _reset_not_state_changing,
    ),
    Case("relation-one-leg", 33, "malformed-operator-expression", f"{_W0}.relation", API_BASE, _relation_one_leg),
    Case(
        "relation-unreachable", 33, "unreachable-check-evidence", f"{_W0}.relation.operands[0].operands[1]", API_BASE,
        _relation_unreachable,
    ),
    Case("reset-undeclared", 33, "unreachable-check-evidence", "EvalContract.fixtureReset", CAPTURE_BASE, _reset_undeclared),
    Case("reset-leg-is-step", 32, "malformed-operator-expression", "EvalContract.fixtureReset.legId", CAPTURE_BASE, _reset_leg_collides),
    Case("reset-inputs", 33, "undeclared-mandatory-input", "EvalContract.fixtureReset.inputs", CAPTURE_BASE, _reset_inputs),
    Case(
        "state-reset-under-volatile", 34, "unreachable-check-evidence",
        "EvalContract.permittedInterfaces[0].operations[0].stateResetPointers[1]", LATEST_BASE, _reset_pointer_under_volatile,
    ),
    Case(
        "state-reset-under-wildcard", 34, "unreachable-check-evidence",
        "EvalContract.permittedInterfaces[0].operations[1].stateResetPointers[0]", LATEST_BASE, _reset_pointer_under_wildcard,
    ),
    Case(
        "state-reset-unreachable", 34, "unreachable-check-evidence",
        "EvalContract.permittedInterfaces[0].operations[1].stateResetPointers[1]", LATEST_BASE, _reset_pointer_unreachable,
    ),
)
