"""Classification, kill verdicts, the Wilson interval and the report shape (issue 18, M2/M3), pure."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalquality_core.mutants.classify import (
    RunOutcome,
    classify,
    collapse,
    differing_pointers,
    smallest_difference,
)
from evalquality_core.mutants.report import MutationTestReport, build_report, report_status
from evalquality_core.mutants.score import kill_score, kill_verdict, wilson_interval


def cli(exit_code: int = 0, stdout: object = None, stderr: str = "", store: str = "{}") -> dict:
    return {
        "kind": "cli", "probeId": "leg", "interfaceId": "notes", "operationId": "get-note", "exitCode": exit_code,
        "stdout": {"kind": "absent"} if stdout is None else {"kind": "json", "value": stdout},
        "stderr": {"kind": "text", "value": stderr} if stderr else {"kind": "absent"},
        "artifacts": {"store": {"kind": "text", "value": store}},
    }


CLEAN = {
    "leg-a": RunOutcome("leg-a", cli(0, {"ok": True, "note": {"title": "A"}})),
    "leg-b": RunOutcome("leg-b", cli(2, {"ok": False, "error": "bad"})),
}


def test_no_run_reaching_the_mutated_line_is_no_coverage() -> None:
    assert classify(CLEAN, {}, coverage_known=True).status == "NoCoverage"


def test_a_run_over_its_wall_clock_budget_is_a_timeout() -> None:
    mutated = {"leg-a": RunOutcome("leg-a", None, "budget-exhausted", "CommandProbeRequest: exceeded maxElapsedMs (2000ms) and was killed")}
    assert classify(CLEAN, mutated, coverage_known=True).status == "Timeout"
    flood = {"leg-a": RunOutcome("leg-a", None, "budget-exhausted", "stdout exceeded maxOutputBytes (10)")}
    assert classify(CLEAN, flood, coverage_known=True).status == "Observable"  # a flood is not a hang


def test_every_run_failing_the_same_way_is_stillborn() -> None:
    crash = cli(1, None, "Traceback ...\nNameError: name 'jsn' is not defined")
    mutated = {"leg-a": RunOutcome("leg-a", crash), "leg-b": RunOutcome("leg-b", crash)}
    assert classify(CLEAN, mutated, coverage_known=True).status == "Stillborn"
    # Only one leg failing so: an observable difference, not a start-up failure.
    assert classify(CLEAN, {"leg-a": RunOutcome("leg-a", crash)}, coverage_known=True).status == "Observable"


def test_a_silent_exit_0_on_every_run_is_not_stillborn_but_classified_by_its_differences() -> None:
    """A main that exits 0 at once answers every run the same silent way; that is no start-up failure (issue
    34): it differs from the clean answers where the oracles look, so it is Observable, with its vector."""
    silent = cli(0, None, "", store="{}")
    mutated = {"leg-a": RunOutcome("leg-a", silent), "leg-b": RunOutcome("leg-b", silent)}
    result = classify(CLEAN, mutated, coverage_known=True)
    assert result.status == "Observable"
    # stdout went from {"kind": "json", "value": ...} to {"kind": "absent"}; leg-b's exit 2 became 0.
    assert result.vector == (("leg-a", "stdout", "/kind"), ("leg-a", "stdout", "/value"), ("leg-b", "exit-code", ""),
                             ("leg-b", "stdout", "/kind"), ("leg-b", "stdout", "/value"))
    # Silent on the legs that reach it while another leg keeps the clean answer: Observable as well.
    assert classify(CLEAN, {"leg-a": RunOutcome("leg-a", silent)}, coverage_known=True).status == "Observable"


def test_identical_failures_of_every_kind_stay_stillborn() -> None:
    """The start-up failures the table keeps: one fault code, one identical tool error, one identical 5xx."""
    fault = {run: RunOutcome(run, None, "spawn-failed", "no such interpreter") for run in CLEAN}
    assert classify(CLEAN, fault, coverage_known=True).status == "Stillborn"
    tool_error = {"kind": "mcp", "isError": True, "result": {"content": []}, "exitCode": None}
    tool_clean = {"a": RunOutcome("a", {**tool_error, "isError": False}), "b": RunOutcome("b", {**tool_error, "isError": False})}
    assert classify(tool_clean, {r: RunOutcome(r, tool_error) for r in tool_clean}, coverage_known=True).status == "Stillborn"
    server_error = {"kind": "api", "status": 500, "headers": {}, "body": None}
    api_clean = {"a": RunOutcome("a", {**server_error, "status": 200}), "b": RunOutcome("b", {**server_error, "status": 404})}
    assert classify(api_clean, {r: RunOutcome(r, server_error) for r in api_clean}, coverage_known=True).status == "Stillborn"
    # A 4xx on every run is an answer, not a crash.
    not_found = {**server_error, "status": 404}
    assert classify(api_clean, {r: RunOutcome(r, not_found) for r in api_clean}, coverage_known=True).status == "Observable"


def test_equal_observations_are_unobservable_and_artifact_differences_artifact_only() -> None:
    assert classify(CLEAN, dict(CLEAN), coverage_known=True).status == "Unobservable"
    changed = cli(0, {"ok": True, "note": {"title": "A"}}, store='{"x": 1}')
    result = classify(CLEAN, {"leg-a": RunOutcome("leg-a", changed)}, coverage_known=True)
    assert result.status == "ArtifactOnly"
    assert result.vector == (("leg-a", "artifacts", "/store/value"),)


def test_a_response_difference_is_observable_and_vectors_collapse() -> None:
    one = classify(CLEAN, {"leg-a": RunOutcome("leg-a", cli(0, {"ok": True, "note": {"title": "B"}}))}, coverage_known=True)
    two = classify(CLEAN, {"leg-a": RunOutcome("leg-a", cli(0, {"ok": True, "note": {"title": "C"}}))}, coverage_known=True)
    three = classify(CLEAN, {"leg-a": RunOutcome("leg-a", cli(3, {"ok": True, "note": {"title": "A"}}))}, coverage_known=True)
    assert one.status == two.status == three.status == "Observable"
    assert one.vector == two.vector == (("leg-a", "stdout", "/value/note/title"),)
    assert collapse([("m-1", one), ("m-2", two), ("m-3", three)]) == {"m-1": "m-1", "m-2": "m-1", "m-3": "m-3"}
    # The witness prefers the exit code, then the streams.
    both = classify(CLEAN, {"leg-a": RunOutcome("leg-a", cli(3, {"ok": True, "note": {"title": "B"}}))}, coverage_known=True)
    assert smallest_difference(both).channel == "exit-code"


def test_differing_pointers_escape_and_treat_lists_of_another_length_whole() -> None:
    assert differing_pointers({"a/b": 1, "c": [1, 2]}, {"a/b": 2, "c": [1, 2, 3]}) == ["/a~1b", "/c"]
    assert differing_pointers({"x": [1, {"y": 1}]}, {"x": [1, {"y": 2}]}) == ["/x/1/y"]
    assert differing_pointers({"k": 1}, {}) == ["/k"]


ORACLES = [{"id": "O-1", "polarity": "expects-hold"}, {"id": "O-2", "polarity": "expects-violation"}]


def test_kill_verdict_reads_polarity_and_needs_a_holding_clean_arm() -> None:
    clean = {"O-1": "true", "O-2": "false"}
    assert kill_verdict(ORACLES, clean, {"O-1": "false", "O-2": "false"}).killed_by == ("O-1",)
    assert kill_verdict(ORACLES, clean, {"O-1": "true", "O-2": "true"}).killed_by == ("O-2",)
    assert not kill_verdict(ORACLES, clean, {"O-1": "unknown", "O-2": "false"}).killed
    broken = kill_verdict(ORACLES, {"O-1": "false", "O-2": "false"}, {"O-1": "false", "O-2": "true"})
    assert not broken.killed and "clean arm does not hold" in broken.reason


def test_wilson_interval_matches_the_textbook_values() -> None:
    # Wilson (1927) score interval, z = 1.96: 0/10 -> [0, 0.2775]; 5/10 -> [0.2366, 0.7634]; 9/10 -> [0.5958, 0.9821].
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(9, 10) == pytest.approx((0.5958, 0.9821), abs=1e-4)
    assert wilson_interval(0, 0) is None


def test_kill_score_counts_timeouts_as_detected_and_leaves_out_what_never_ran_validly() -> None:
    score = kill_score(["Killed", "Timeout", "Survived", "NoCoverage", "RuntimeError", "CompileError", "Ignored"],
                       sampled=True, population=40)
    assert (score.detected, score.valid, score.score) == (2, 4, 0.5)
    assert score.as_json()["sampled"] is True and score.as_json()["population"] == 40


def test_report_statuses_and_shape() -> None:
    assert [report_status(c, k) for c, k in [("Invalid", None), ("Duplicate", None), ("Stillborn", None),
                                             ("NoCoverage", None), ("Timeout", None), ("Observable", True),
                                             ("Unobservable", False)]] == [
        "CompileError", "Ignored", "RuntimeError", "NoCoverage", "Timeout", "Killed", "Survived"]
    mutant = {"file": "system/x.py", "id": "m-1", "mutatorName": "ArithmeticOperator",
              "location": {"start": {"line": 1, "column": 5}, "end": {"line": 1, "column": 10}},
              "status": "Killed", "statusReason": "Observable: ...", "replacement": "a - b",
              "killedBy": ["O-1"], "coveredBy": ["leg-a", "plan"]}
    report = build_report({"system/x.py": "x = a + b\n"}, [mutant], version="1.0", config={})
    # The public schema's required keys, top level and per file and mutant.
    assert {"schemaVersion", "thresholds", "files"} <= set(report)
    file = report["files"]["system/x.py"]
    assert {"language", "source", "mutants"} <= set(file)
    assert {"id", "mutatorName", "location", "status"} <= set(file["mutants"][0])
    with pytest.raises(ValidationError):
        MutationTestReport.model_validate({**report, "files": {"x": {**file, "mutants": [{**file["mutants"][0], "status": "Dead"}]}}})
    with pytest.raises(ValidationError):
        MutationTestReport.model_validate({**report, "thresholds": {"high": 101, "low": 0}})


def test_a_derived_probe_is_refused_with_its_reason() -> None:
    from evalquality_core.mutants.classify import Classification, Difference
    from evalquality_core.mutants.derive import derive_probe
    from evalquality_core.mutants.generate import generate

    mutant = generate({"system/x.py": "x = 1\n"}).kept[0]
    contract = {"permittedInterfaces": [], "behaviors": [{"id": "B-001", "oracles": ["O-1", "O-2"], "severity": "material"}]}
    unobservable = derive_probe(contract, mutant, Classification("Unobservable", "-"), ["O-1"], {}, {}, {}, frozenset())
    assert unobservable.probe is None and "only an Observable mutant" in unobservable.reason
    observable = Classification("Observable", "-", (Difference("leg-a", "exit-code", ""),))
    # O-1 kills it, but its behaviour lists two oracles: no designated oracle (AD-40).
    shared = derive_probe(contract, mutant, observable, ["O-1"], {}, {}, {}, frozenset())
    assert shared.probe is None and "designated oracle" in shared.reason
    survived = derive_probe(contract, mutant, observable, [], {}, {}, {}, frozenset())
    assert survived.probe is None
    contract["behaviors"][0]["oracles"] = ["O-1"]
    legs_only = derive_probe(contract, mutant, observable, ["O-1"], {}, {}, {}, frozenset())
    assert legs_only.probe is None and "no evaluator-chosen plan step differs" in legs_only.reason
