"""Ingest (scoring.md §7): one test per condition row on a mutated worked example, order, and conformance."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.ingest import INGEST_CONDITION_KINDS, INGEST_CONDITIONS, IngestCondition, ingest
from evalquality_core.registries import FORBIDDEN_INPUT_FLOOR


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


Inputs = tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None, dict[str, Any]]


@pytest.fixture(scope="module")
def worked_inputs(conformance: Path) -> Inputs:
    folder = conformance / "worked-example"
    return (
        load(folder / "sealed-run-record.json"),
        load(folder / "reconstructed-inputs" / "isolation-manifest.json"),
        load(folder / "reconstructed-inputs" / "evaluator-configuration.json"),
        load(folder / "eval-contract.json"),
    )


@pytest.fixture
def worked(worked_inputs: Inputs) -> Inputs:
    return copy.deepcopy(worked_inputs)


def test_worked_example_ingests_clean(worked: Inputs) -> None:
    """scoring.md §10.2: no condition fires; the trial's contractDigest equals digest(contract)."""
    record, manifest, configuration, contract = worked
    product = ingest(record, manifest, configuration, contract)
    assert product.conditions == ()
    assert product.unwitnessed_quotations == ()
    assert product.isolation_violation == ()
    assert product.contract_digest_matches is True
    assert (product.mode, product.run_id, product.trial_index) == ("contract-scoring", "spike-run-0001", 1)
    assert product.evaluator_recommendation == "FAIL"
    assert [o["observationId"] for o in product.observations] == [
        "obs-001",
        "obs-002",
        "obs-003",
        "obs-004",
        "obs-005",
    ]
    assert [f["findingId"] for f in product.findings] == ["F-001", "F-002", "F-003"]


def test_worked_example_ingests_clean_from_models(worked: Inputs) -> None:
    record, manifest, configuration, contract = worked
    product = ingest(
        read_artifact(SealedRunRecord, record),
        read_artifact(IsolationManifest, manifest),
        read_artifact(EvaluatorConfiguration, configuration),
        read_artifact(EvalContract, contract),
    )
    assert product.conditions == ()
    assert product.contract_digest_matches is True


def test_products_never_read_array_position(worked: Inputs) -> None:
    record, manifest, configuration, _ = worked
    shuffled = copy.deepcopy(record)
    for key in ("observations", "findings", "oracleDispositions"):
        shuffled[key].reverse()
    a, b = ingest(record, manifest, configuration), ingest(shuffled, manifest, configuration)
    assert (a.observations, a.findings, a.dispositions) == (b.observations, b.findings, b.dispositions)


Mutation = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], tuple[Any, Any, Any]]


def _duplicate(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    r["observations"].append({**r["observations"][0], "sequence": 99})
    r["findings"].append(copy.deepcopy(r["findings"][2]))
    r["oracleDispositions"].append(copy.deepcopy(r["oracleDispositions"][0]))
    return r, m, c


def _dangling(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    r["findings"][1]["observationIds"] = ["obs-404", "obs-001", "obs-404", "obs-000"]
    return r, m, c


def _dangling_disposition(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    r["oracleDispositions"][0]["observationIds"].append("obs-999")
    return r, m, c


def _unwitnessed(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    r["findings"][0]["quotedEvidence"].append({"channel": "response-body", "quote": '"title": "Revised"'})
    return r, m, c


def _manifest_absent(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    return r, None, c


def _violation(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    m["violation"] = "evaluator read the repository"
    m["allowedMounts"] = ["/work"]
    m["observedMounts"] = ["/etc", "/work", "/etc", "/home"]
    m["observedToolCalls"] = ["shell"]
    return r, m, c


def _not_withheld(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    m["forbiddenInputAccounting"]["human-labels"]["withheld"] = False
    m["forbiddenInputAccounting"]["source-code"]["withheld"] = False
    return r, m, c


def _disagreement(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    m["runId"] = "another-run"
    m["evaluatorConfigurationDigest"] = "sha256:" + "1" * 64
    m["conditionArm"] = "something-else"  # deliberately not compared
    return r, m, c


def _configuration_absent(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    return r, m, None


def _digest_mismatch(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    c["seed"] = 7  # the record and manifest still agree with each other; only recomputation disagrees
    return r, m, c


def _unscored(r: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> tuple[Any, Any, Any]:
    r["judgeResults"] = [
        {"rubricId": "R-002", "criterionId": "RC-001", "score": None, "note": None},
        {"rubricId": "R-001", "criterionId": "RC-002", "score": None, "note": None},
        {"rubricId": "R-001", "criterionId": "RC-002", "score": None, "note": "again"},
        {"rubricId": "R-001", "criterionId": "RC-001", "score": 3, "note": None},
    ]
    return r, m, c


ROW_CASES: dict[str, tuple[Mutation, list[dict[str, Any]]]] = {
    "duplicate-record-identifier": (
        _duplicate,
        [
            {
                "kind": "duplicate-record-identifier",
                "subject": "finding",
                "identifier": "F-003",
                "occurrences": 2,
            },
            {
                "kind": "duplicate-record-identifier",
                "subject": "observation",
                "identifier": "obs-001",
                "occurrences": 2,
            },
            {
                "kind": "duplicate-record-identifier",
                "subject": "oracle-disposition",
                "identifier": "O-001",
                "occurrences": 2,
            },
        ],
    ),
    "dangling-citation": (
        _dangling,
        [
            {
                "kind": "dangling-citation",
                "findingId": "F-002",
                "unresolvedObservationIds": ["obs-404", "obs-000"],
            }
        ],
    ),
    "dangling-disposition-citation": (
        _dangling_disposition,
        [
            {
                "kind": "dangling-disposition-citation",
                "oracleId": "O-001",
                "unresolvedObservationIds": ["obs-999"],
            }
        ],
    ),
    "unwitnessed-quotation": (
        _unwitnessed,
        [
            {
                "kind": "unwitnessed-quotation",
                "quotations": [
                    {
                        "findingId": "F-001",
                        "quoteIndex": 2,
                        "channel": "response-body",
                        "quote": '"title": "Revised"',  # pretty-printed: not in the canonical serialization
                        "citedObservationIds": ["obs-003", "obs-004"],
                    }
                ],
            }
        ],
    ),
    "isolation-manifest-absent": (_manifest_absent, [{"kind": "isolation-manifest-absent"}]),
    "isolation-manifest-violation": (
        _violation,
        [
            {
                "kind": "isolation-manifest-violation",
                "violation": "evaluator read the repository",
                "mountsOutsideAllowlist": ["/etc", "/home"],
                "networkTargetsOutsideAllowlist": [],
                "toolCallsOutsideAllowlist": ["shell"],
            }
        ],
    ),
    "forbidden-input-not-withheld": (
        _not_withheld,
        [{"kind": "forbidden-input-not-withheld", "inputs": ["source-code", "human-labels"]}],
    ),
    "cross-artifact-disagreement": (
        _disagreement,
        [
            {
                "kind": "cross-artifact-disagreement",
                "field": "runId",
                "recordValue": "spike-run-0001",
                "manifestValue": "another-run",
            },
            {
                "kind": "cross-artifact-disagreement",
                "field": "evaluatorConfigurationDigest",
                "recordValue": "sha256:44708e1deb9e0d818773f38ce8242266a41d1201db7c3ed8a382c37bdd5a9d41",
                "manifestValue": "sha256:" + "1" * 64,
            },
        ],
    ),
    "evaluator-configuration-absent": (_configuration_absent, [{"kind": "evaluator-configuration-absent"}]),
    "evaluator-configuration-digest-mismatch": (
        _digest_mismatch,
        [
            {
                "kind": "evaluator-configuration-digest-mismatch",
                "declaredDigest": "sha256:44708e1deb9e0d818773f38ce8242266a41d1201db7c3ed8a382c37bdd5a9d41",
                "computedDigest": "COMPUTED",
            }
        ],
    ),
    "judge-result-unscored": (
        _unscored,
        [
            {"kind": "judge-result-unscored", "rubricId": "R-001", "criterionId": "RC-002"},
            {"kind": "judge-result-unscored", "rubricId": "R-002", "criterionId": "RC-001"},
        ],
    ),
}


@pytest.mark.parametrize("kind", list(INGEST_CONDITION_KINDS))
def test_condition_row(worked: Inputs, kind: str) -> None:
    record, manifest, configuration, _ = worked
    mutate, expected = ROW_CASES[kind]
    r, m, c = mutate(record, manifest, configuration)  # type: ignore[arg-type]
    if kind == "evaluator-configuration-digest-mismatch":
        expected = [{**expected[0], "computedDigest": digest_artifact(c)}]
        assert expected[0]["computedDigest"] != expected[0]["declaredDigest"]
    product = ingest(r, m, c)
    assert [condition.to_wire() for condition in product.conditions] == expected


def test_every_row_has_a_case() -> None:
    assert set(ROW_CASES) == set(INGEST_CONDITION_KINDS) == {row.kind for row in INGEST_CONDITIONS}
    assert len(INGEST_CONDITIONS) == 11


def test_isolation_violation_strings(worked: Inputs) -> None:
    record, manifest, configuration, _ = worked
    product = ingest(*_violation(record, manifest, configuration))  # type: ignore[arg-type]
    assert product.isolation_violation == (
        "manifest violation: evaluator read the repository",
        "mount outside allowlist: /etc",
        "mount outside allowlist: /home",
        "tool call outside allowlist: shell",
    )
    absent = ingest(record, None, configuration)
    assert absent.isolation_violation == ("isolation manifest absent",)


def test_absent_manifest_skips_manifest_checks_but_not_the_rest(worked: Inputs) -> None:
    record, _, _, _ = worked
    _dangling(record, {}, {})
    product = ingest(record, None, None)
    assert product.condition_kinds == (
        "dangling-citation",
        "isolation-manifest-absent",
        "evaluator-configuration-absent",
    )


def test_conditions_are_recorded_in_row_order(worked: Inputs) -> None:
    record, manifest, configuration, _ = worked
    for mutate in (_unscored, _digest_mismatch, _disagreement, _not_withheld, _violation, _unwitnessed,
                   _dangling_disposition, _dangling, _duplicate):  # fmt: skip
        record, manifest, configuration = mutate(record, manifest, configuration)  # type: ignore[arg-type]
    kinds = ingest(record, manifest, configuration).condition_kinds
    expected_order = [k for k in INGEST_CONDITION_KINDS if k in kinds]
    assert list(dict.fromkeys(kinds)) == expected_order
    assert set(kinds) == set(INGEST_CONDITION_KINDS) - {
        "isolation-manifest-absent",
        "evaluator-configuration-absent",
    }


def test_missing_forbidden_input_entry_counts_as_not_withheld(worked: Inputs) -> None:
    record, manifest, configuration, _ = worked
    assert manifest is not None
    del manifest["forbiddenInputAccounting"]["repository"]
    product = ingest(record, manifest, configuration)
    assert [c.to_wire() for c in product.conditions] == [
        {"kind": "forbidden-input-not-withheld", "inputs": ["repository"]}
    ]
    assert len(FORBIDDEN_INPUT_FLOOR) == 7


def test_contract_digest_mismatch_is_reported_not_a_condition(worked: Inputs) -> None:
    record, manifest, configuration, contract = worked
    contract["contractId"] = "another"
    product = ingest(record, manifest, configuration, contract)
    assert product.contract_digest_matches is False
    assert product.conditions == ()


def test_condition_payload_is_checked_against_its_row() -> None:
    with pytest.raises(ValueError):
        IngestCondition("judge-result-unscored", {"rubricId": "R-001"})
    condition = IngestCondition("isolation-manifest-absent")
    assert condition.ladder_target == "isolationViolation"


CHAIN_INPUTS = {
    "skill-defect": (
        "skill-defect/sealed-run-record.json",
        "skill-defect/reconstructed-inputs/isolation-manifest.json",
        "skill-defect/reconstructed-inputs/evaluator-configuration.json",
        "skill-defect/eval-contract.json",
    ),
    "workflow-capture": (
        "workflow-capture/sealed-run-record.json",
        "workflow-capture/reconstructed-inputs/isolation-manifest.json",
        "workflow-capture/reconstructed-inputs/evaluator-configuration.json",
        "workflow-capture/eval-contract.json",
    ),
    "tutorial-skill-honest": (
        "tutorial-skill/honest-run-record.json",
        "tutorial-skill/honest-isolation-manifest.json",
        "tutorial-skill/evaluator-configuration.json",
        "tutorial-skill/checklist-selection.json",
    ),
    "tutorial-skill-degenerate": (
        "tutorial-skill/degenerate-run-record.json",
        "tutorial-skill/degenerate-isolation-manifest.json",
        "tutorial-skill/evaluator-configuration.json",
        "tutorial-skill/checklist-selection.json",
    ),
    "tutorial-workflow": (
        "tutorial-workflow/sealed-run-record.json",
        "tutorial-workflow/isolation-manifest.json",
        "tutorial-workflow/evaluator-configuration.json",
        "tutorial-workflow/eval-contract.json",
    ),
}


@pytest.mark.parametrize("chain", sorted(CHAIN_INPUTS))
def test_chains_ingest_clean(conformance: Path, chain: str) -> None:
    """chains/expected.json scores every chain to a verdict (CONCERNS), never Invalid: no ingest condition."""
    expected = load(conformance / "chains" / "expected.json")
    entry = expected[chain.removesuffix("-honest").removesuffix("-degenerate")]
    arm = chain.rsplit("-", 1)[-1]
    score = entry["score"].get(arm, entry["score"])
    assert score["contractVerdict"] in ("PASS", "CONCERNS", "FAIL")
    paths = [conformance / "chains" / p for p in CHAIN_INPUTS[chain]]
    record, manifest, configuration, contract = (load(p) for p in paths)
    models = (
        read_artifact(SealedRunRecord, record),
        read_artifact(IsolationManifest, manifest),
        read_artifact(EvaluatorConfiguration, configuration),
        read_artifact(EvalContract, contract),
    )
    for product in (ingest(record, manifest, configuration, contract), ingest(*models)):
        assert product.conditions == ()
        assert product.contract_digest_matches is True
        assert product.mode == score.get("mode", "contract-scoring")


def test_non_canonicalizable_configuration_is_a_fault_not_a_condition(worked: Inputs) -> None:
    from evalquality_core.faults import RuntimeFault

    record, manifest, configuration, _ = worked
    assert configuration is not None
    configuration["seed"] = 2**60  # outside the safe-integer domain
    with pytest.raises(RuntimeFault) as caught:
        ingest(record, manifest, configuration)
    assert (caught.value.code, caught.value.artifact_path) == (
        "non-canonicalizable-value",
        "EvaluatorConfiguration",
    )


def test_non_canonicalizable_quoted_body_is_a_fault_naming_the_finding(worked: Inputs) -> None:
    from evalquality_core.faults import RuntimeFault

    record, manifest, configuration, _ = worked
    record["observations"][2]["responseBody"]["huge"] = 2**60  # obs-003, cited by F-001
    with pytest.raises(RuntimeFault) as caught:
        ingest(record, manifest, configuration)
    assert caught.value.code == "non-canonicalizable-value"
    assert caught.value.artifact_path == "SealedRunRecord.findings[findingId=F-001]"
