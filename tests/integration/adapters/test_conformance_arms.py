"""The three conformance arms against their real adapters (preflight-adapter.md §5.3–§5.5): every arm has its
spec's cases in the spec's order, the real adapter passes all of them (the command line with real child
processes, HTTP against a real loopback server, mcp against the SDK tool server and the standard-library one),
and a short list never passes. Non-vacuity is ``test_conformance_non_vacuity.py``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from evalquality_core.probe.conformance import CONFORMANCE_OUTCOME_COUNTS, format_conformance_report
from tests.adapters import mcp_subject
from tests.adapters.conformance_arms import ARM_BY_PORT, ARMS, Arm, arm_id, loopback_server, subject_of  # noqa: F401 (a fixture)

SHARED_SIX = [
    "probe/typed-fault",
    "probe/single-underlying-call-on-success",
    "probe/single-underlying-call-on-failure",
    "probe/prompt-abort",
    "probe/no-in-band-error",
    "probe/schema-valid-return",
]

#: Each arm's own cases, as the spec lists them (§5.3, §5.4, §5.5).
OWN_CASES = {
    "command-probe": [
        "command/allow-authorized-invocation",
        "command/observe-nonzero-exit",
        "command/deny-unmapped-interface",
        "command/deny-unmapped-executable",
        "command/deny-unauthorized-subcommand",
        "command/deny-unauthorized-environment-key",
        "command/argument-passed-literally",
        "command/capture-declared-artifact",
        "command/cap-elapsed",
        "command/cap-output-bytes",
    ],
    "environment-probe": [
        "probe/allow-authorized-loopback",
        "probe/observe-anomalous-status",
        "probe/deny-unmapped-interface",
        "probe/deny-unauthorized-loopback",
        "probe/deny-private",
        "probe/deny-link-local",
        "probe/deny-metadata",
        "probe/deny-unauthorized-method",
        "probe/deny-unauthorized-scheme",
        "probe/deny-on-redirect",
        "probe/cap-redirects",
        "probe/cap-response-bytes",
        "probe/cap-elapsed",
    ],
    "mcp-probe": [
        "mcp/allow-authorized-tool-call",
        "mcp/observe-error-result",
        "mcp/deny-unmapped-interface",
        "mcp/deny-unauthorized-tool",
        "mcp/arguments-passed-as-declared",
        "mcp/observe-declared-result-channel",
        "mcp/cap-elapsed",
        "mcp/cap-result-bytes",
    ],
}


@pytest.mark.parametrize("arm", ARMS, ids=arm_id)
def test_the_arm_has_its_spec_cases_in_spec_order(arm: Arm) -> None:
    assert arm.case_ids == SHARED_SIX + OWN_CASES[arm.port]
    assert len(arm.case_ids) == CONFORMANCE_OUTCOME_COUNTS[arm.port] == {"command-probe": 16, "environment-probe": 19,
                                                                         "mcp-probe": 14}[arm.port]


@pytest.mark.parametrize("arm", ARMS, ids=arm_id)
def test_the_real_adapter_passes_every_case(arm: Arm, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    report = arm.run(subject_of(arm, request, tmp_path), clock=time.monotonic)
    text = format_conformance_report(report)
    assert report.passed, text
    total = CONFORMANCE_OUTCOME_COUNTS[arm.port]
    assert text.splitlines()[0] == f'PASS {arm.port} conformance for "{arm.subject_name}": {total}/{total} assertions passed'
    assert [outcome.id for outcome in report.outcomes] == arm.case_ids


@pytest.mark.parametrize("arm", ARMS, ids=arm_id)
def test_a_short_list_never_passes(arm: Arm, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    report = arm.run(subject_of(arm, request, tmp_path), clock=time.monotonic, cases=arm.cases[6:9])
    assert [outcome.passed for outcome in report.outcomes] == [True, True, True]
    assert not report.passed


def test_the_mcp_arm_passes_against_the_plain_server_too(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The non-vacuity mutants run against the standard-library server: unmutated, it passes all fourteen."""
    arm = ARM_BY_PORT["mcp-probe"]
    report = arm.run(subject_of(arm, request, tmp_path, server=mcp_subject.PLAIN_SERVER), clock=time.monotonic)
    assert report.passed, format_conformance_report(report)
