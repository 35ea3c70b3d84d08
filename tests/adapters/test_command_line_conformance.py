"""The command arm (preflight-adapter.md §5.3) against the real adapter and real child processes."""

from __future__ import annotations

import time
from pathlib import Path

from evalquality_core.probe.conformance import (
    COMMAND_PROBE_CASES,
    CONFORMANCE_OUTCOME_COUNTS,
    format_conformance_report,
    run_command_line_probe_conformance,
)
from tests.adapters.command_subject import make_subject


def test_the_arm_has_sixteen_cases_in_spec_order() -> None:
    ids = [case.id for case in COMMAND_PROBE_CASES]
    assert len(ids) == CONFORMANCE_OUTCOME_COUNTS["command-probe"] == 16
    assert ids[:6] == [
        "probe/typed-fault",
        "probe/single-underlying-call-on-success",
        "probe/single-underlying-call-on-failure",
        "probe/prompt-abort",
        "probe/no-in-band-error",
        "probe/schema-valid-return",
    ]
    assert ids[6:] == [
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
    ]


def test_the_real_adapter_passes_all_sixteen(tmp_path: Path) -> None:
    report = run_command_line_probe_conformance(make_subject(tmp_path), clock=time.monotonic)
    text = format_conformance_report(report)
    assert report.passed, text
    assert text.splitlines()[0] == 'PASS command-probe conformance for "command-line adapter": 16/16 assertions passed'
    assert len(report.outcomes) == 16


def test_a_short_list_never_passes(tmp_path: Path) -> None:
    report = run_command_line_probe_conformance(
        make_subject(tmp_path), clock=time.monotonic, cases=COMMAND_PROBE_CASES[6:9]
    )
    assert all(outcome.passed for outcome in report.outcomes)
    assert not report.passed
