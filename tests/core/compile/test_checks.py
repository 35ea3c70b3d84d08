"""One test per way each CHECKS row fires, proving both the code/path and the row's priority.

For every case, the rows before the case's row must pass and the row itself must raise: so the
case is reported by *that* check, and the order of §3.1 decides it. A census requires every row of
CHECKS to be exercised by at least one case.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalquality_core.compile import CHECKS, compile_contract, run_checks
from evalquality_core.faults import FAILURE_CODES, RuntimeFault, StructuralFailure
from tests.core.compile.cases import API_BASE, CASES, Case, load


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_fires_its_row_first(case: Case, conformance: Path) -> None:
    contract = case.contract()
    for row in CHECKS[: case.row]:
        row.run(contract)  # nothing earlier may claim this defect
    with pytest.raises((StructuralFailure, RuntimeFault)) as caught:
        CHECKS[case.row].run(contract)
    assert caught.value.code == case.code
    assert caught.value.code in CHECKS[case.row].codes
    assert caught.value.artifact_path == case.path


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_through_compile_contract(case: Case, conformance: Path) -> None:
    with pytest.raises((StructuralFailure, RuntimeFault)) as caught:
        compile_contract(case.contract())
    assert (caught.value.code, caught.value.artifact_path) == (case.code, case.path)


def test_every_row_is_exercised() -> None:
    assert {case.row for case in CASES} == {row.number for row in CHECKS}


def test_rows_are_in_spec_order_and_name_registered_codes() -> None:
    assert [row.number for row in CHECKS] == list(range(35))
    for row in CHECKS[1:]:
        assert set(row.codes) <= set(FAILURE_CODES)
    assert [row.number for row in CHECKS if row.strict_only] == [14, 15]


@pytest.mark.parametrize("case", [c for c in CASES if c.row in (14, 15)], ids=lambda c: c.name)
def test_strict_only_rows_are_skipped_without_strict_inputs(case: Case, conformance: Path) -> None:
    run_checks(case.contract(), strict_inputs=False)


def test_first_failure_wins(conformance: Path) -> None:
    # Two defects at once: the earlier row (#2) is reported, not the later (#30).
    contract = load(API_BASE)
    contract["waivers"][0]["approval"] = None
    contract["behaviors"][0]["requirementLinks"] = []
    contract["behaviors"][0]["riskLinks"] = []
    with pytest.raises(StructuralFailure) as caught:
        compile_contract(contract)
    assert caught.value.code == "missing-requirement-linkage"


def test_requirement_link_alone_or_risk_link_alone_suffices(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["behaviors"][0]["riskLinks"] = []
    compile_contract(contract)
    contract["behaviors"][0]["requirementLinks"] = []
    contract["behaviors"][0]["riskLinks"] = [{"scheme": "x", "id": "y"}]
    compile_contract(contract)


def test_zero_rubrics_and_null_waiver_condition_compile(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["rubrics"] = []
    assert contract["waivers"][0]["condition"] is None
    compile_contract(contract)


def test_mcp_tool_call_form_is_an_unsupported_interface_kind(conformance: Path) -> None:
    contract = load(API_BASE)
    contract["permittedInterfaces"][0]["kind"] = "mcp"
    with pytest.raises(StructuralFailure) as caught:
        compile_contract(contract)
    assert caught.value.code == "unsupported-interface-kind"


def test_every_failure_code_is_reachable() -> None:
    # Every registered code is fired by some case here, except the brief's scripting audit, which
    # seal offers separately (tests/core/seal/test_seal.py fires it).
    fired = {case.code for case in CASES}
    assert set(FAILURE_CODES) - fired == {"brief-exceeds-scripting-bound"}
