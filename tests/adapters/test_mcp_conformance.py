"""The mcp arm (preflight-adapter.md §5.5) against the real stdio adapter and a real tool server."""

from __future__ import annotations

import time
from pathlib import Path

from evalquality_core.probe.conformance import CONFORMANCE_OUTCOME_COUNTS, format_conformance_report
from evalquality_core.probe.mcp_conformance import MCP_PROBE_CASES, run_mcp_probe_conformance
from tests.adapters.mcp_subject import make_mcp_subject


def test_the_arm_has_fourteen_cases_in_spec_order() -> None:
    ids = [case.id for case in MCP_PROBE_CASES]
    assert len(ids) == CONFORMANCE_OUTCOME_COUNTS["mcp-probe"] == 14
    assert ids == [
        "probe/typed-fault",
        "probe/single-underlying-call-on-success",
        "probe/single-underlying-call-on-failure",
        "probe/prompt-abort",
        "probe/no-in-band-error",
        "probe/schema-valid-return",
        "mcp/allow-authorized-tool-call",
        "mcp/observe-error-result",
        "mcp/deny-unmapped-interface",
        "mcp/deny-unauthorized-tool",
        "mcp/arguments-passed-as-declared",
        "mcp/observe-declared-result-channel",
        "mcp/cap-elapsed",
        "mcp/cap-result-bytes",
    ]


def test_the_real_adapter_passes_all_fourteen(tmp_path: Path) -> None:
    report = run_mcp_probe_conformance(make_mcp_subject(tmp_path), clock=time.monotonic)
    text = format_conformance_report(report)
    assert report.passed, text
    assert text.splitlines()[0] == 'PASS mcp-probe conformance for "stdio mcp adapter": 14/14 assertions passed'
    assert len(report.outcomes) == 14


def test_a_short_list_never_passes(tmp_path: Path) -> None:
    report = run_mcp_probe_conformance(make_mcp_subject(tmp_path), clock=time.monotonic, cases=MCP_PROBE_CASES[8:10])
    assert all(outcome.passed for outcome in report.outcomes)
    assert not report.passed
