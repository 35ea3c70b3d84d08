"""The evaluator command protocol (evalquality_core/suite/evaluator_protocol.py), with real child processes.

The reference evaluator command answers a real request like the in-process judgement of the stored trials;
every way an evaluator can fail (garbage, a refusal, a wrong protocol, an overspent budget, a hang, a flood,
a non-zero exit) is a ``TrialFault`` with its reason, never a crash; a bad ``[evaluator]`` table names the key.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalquality_core.suite.evaluator import judge
from evalquality_core.suite.evaluator_protocol import (
    PROTOCOL,
    EvaluatorCommand,
    TrialFault,
    evaluator_command_of,
    parse_answer,
    request_of,
    run_evaluator,
)
from tests.corpus.conftest import SUITES, read

NOTES = SUITES / "notes"


def _request(trial: int = 1) -> dict:
    record = read(NOTES / "trials" / "P-001" / "trial-1" / "sealed-run-record.json")
    contract = read(NOTES / "contract.json")
    return request_of(EvaluatorCommand(), {"brief": "sealed"}, record["observations"], contract, trial)


def test_the_reference_command_answers_as_the_in_process_judgement():
    request = _request()
    judgement = run_evaluator(EvaluatorCommand(), request)
    expected = judge(request["contract"], request["observations"], "")
    assert judgement.dispositions == expected.dispositions
    assert judgement.findings == [{k: v for k, v in f.items() if k != "probeId"} for f in expected.findings]
    assert judgement.recommendation == expected.recommendation == "FAIL"  # P-001's silent write is reported


def test_an_agent_is_sent_no_contract_and_the_reference_refuses_without_one():
    command = EvaluatorCommand(sees_oracle_checks=False)
    request = request_of(command, {}, [], read(NOTES / "contract.json"), 1)
    assert request["contract"] is None and request["protocol"] == PROTOCOL
    with pytest.raises(TrialFault) as raised:
        run_evaluator(command, request)
    assert raised.value.reason == "refusal"


def _script(tmp_path: Path, body: str, **options) -> EvaluatorCommand:
    script = tmp_path / "evaluator.py"
    script.write_text(body)
    return EvaluatorCommand(argv=("{python}", str(script)), **options)


@pytest.mark.parametrize(
    ("body", "options", "reason"),
    [
        ("print('not json')", {}, "malformed-answer"),
        ("import json; print(json.dumps({'protocol': 'other/9'}))", {}, "malformed-answer"),
        (f"import json; print(json.dumps({{'protocol': {PROTOCOL!r}, 'refusal': 'out of scope'}}))", {}, "refusal"),
        (f"import json; print(json.dumps({{'protocol': {PROTOCOL!r}, 'oracleDispositions': [], 'findings': [], "
         "'recommendation': 'PASS', 'toolCalls': 9}))", {"tool_calls": 3}, "budget"),
        (f"import json; print(json.dumps({{'protocol': {PROTOCOL!r}, 'oracleDispositions': [], 'findings': [], "
         "'recommendation': 'MAYBE', 'toolCalls': 0}))", {}, "malformed-answer"),
        ("import time; time.sleep(30)", {"wall_clock_seconds": 1}, "timeout"),
        ("import sys; sys.stdout.write('x' * (8 * 1024 * 1024))", {}, "budget"),
        ("import sys; sys.exit(3)", {}, "exit"),
    ],
)
def test_every_bad_answer_is_a_trial_fault_with_its_reason(tmp_path, body, options, reason):
    command = _script(tmp_path, body, **options)
    with pytest.raises(TrialFault) as raised:
        run_evaluator(command, _request())
    assert raised.value.reason == reason, raised.value


def test_the_command_sees_only_the_environment_keys_it_declares(tmp_path, monkeypatch):
    monkeypatch.setenv("EQ_EVALUATOR_TOKEN", "declared")
    monkeypatch.setenv("EQ_SECRET", "withheld")
    # The script answers PASS only when the one declared key, and no other EQ_ key, reached it.
    body = (
        "import json, os, sys; sys.stdin.read(); seen = sorted(k for k in os.environ if k.startswith('EQ_')); "
        f"print(json.dumps({{'protocol': {PROTOCOL!r}, 'oracleDispositions': [], 'findings': [], "
        "'recommendation': 'PASS' if seen == ['EQ_EVALUATOR_TOKEN'] else 'FAIL', 'toolCalls': 0}))"
    )
    assert run_evaluator(_script(tmp_path, body, environment=("EQ_EVALUATOR_TOKEN",)), _request()).recommendation == "PASS"
    assert run_evaluator(_script(tmp_path, body), _request()).recommendation == "FAIL"


def test_parse_answer_refuses_a_finding_that_names_its_probe():
    answer = {"protocol": PROTOCOL, "oracleDispositions": [], "findings": [{"probeId": "P-001"}],
              "recommendation": "FAIL", "toolCalls": 0}
    with pytest.raises(TrialFault, match="without probeId"):
        parse_answer(json.dumps(answer), EvaluatorCommand())


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"argv": []}, "argv must be a non-empty list"),
        ({"argv": ["x"], "colour": 1}, "unknown key(s) colour"),
        ({"wall-clock-seconds": 0}, "wall-clock-seconds must be a positive integer"),
        ({"environment": "HOME"}, "environment must be a list"),
    ],
)
def test_a_bad_evaluator_table_names_the_file_and_key(table, message):
    with pytest.raises(ValueError, match="suite.toml") as raised:
        evaluator_command_of({"evaluator": table}, "suite.toml")
    assert message in str(raised.value)


def test_no_table_is_the_reference_evaluator_and_identity_decides_the_key():
    command = evaluator_command_of({}, "suite.toml")
    assert command == EvaluatorCommand() and command.resolved_argv()[0] == sys.executable
    other = evaluator_command_of({"evaluator": {"argv": ["llm-cli", "judge"], "model": "m-2"}}, "suite.toml")
    assert other.identity() != command.identity() and other.sees_oracle_checks is False
