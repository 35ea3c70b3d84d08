"""The evaluator command protocol, version 1: how a live trial hands its evidence to an evaluator command.

A suite declares its evaluator command in ``suite.toml`` (absent: the reference evaluator):

.. code-block:: toml

    [evaluator]
    argv = ["{python}", "-m", "evalquality_core.suite.reference_evaluator"]  # {python}: this interpreter
    environment = []            # host environment keys the command may see (values are never recorded)
    wall-clock-seconds = 60     # budget: the command is killed (process group) after this
    tool-calls = 50             # budget: the answer's toolCalls may not exceed it
    model = "corpus-reference-evaluator-1"   # the model identity the trial is sealed with
    sees-oracle-checks = true   # send the contract: a deterministic stand-in that resolves the checks itself

The command runs through the same default-deny command-line adapter as any target (one authorization,
built here, for exactly that argv; no shell; a fresh empty working directory; the budget as its deadline).

**Request** (stdin, one JSON object): ``{"protocol": "eval-quality-evaluator/1", "trialIndex": n,
"brief": <SealedEvaluatorBrief>, "observations": [<sealed-run-record observations>], "contract":
<EvalContract> | null}``. ``contract`` (with the oracles' checks the brief seals away) is sent only with
``sees-oracle-checks = true``: a deterministic stand-in such as the reference evaluator resolves the
checks itself, an agent judges from the brief alone. The probe and its planted defect are never sent.

**Answer** (stdout, one JSON object): ``{"protocol": "eval-quality-evaluator/1", "oracleDispositions":
[{oracleId, disposition, observationIds, note}], "findings": [{findingId, findingType, oracleId,
behaviorId, severity, summary, confidence, observationIds, evidenceArtifacts, quotedEvidence}],
"recommendation": "PASS" | "CONCERNS" | "FAIL", "toolCalls": n}``, or ``{"protocol": ..., "refusal":
"<why>"}``. We add each finding's ``probeId`` when sealing. A malformed answer, a non-zero exit, a
timeout, a refusal or an overspent budget is a :class:`TrialFault` with its reason: recorded on the
trial, never a crash, never cached.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalquality_core.adapters.command_line import CommandLineAdapter
from evalquality_core.canonical import digest_artifact
from evalquality_core.canonical.nesting import TooDeep, json_too_deep
from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.faults import EvalQualityFault
from evalquality_core.probe.policy import CommandTargetAuthorization, CommandTargetPolicy, time_budget_problem

PROTOCOL = "eval-quality-evaluator/1"
#: The reference evaluator, the default evaluator command of every suite.
REFERENCE_ARGV: tuple[str, ...] = ("{python}", "-m", "evalquality_core.suite.reference_evaluator")
REFERENCE_MODEL = "corpus-reference-evaluator-1"
#: ``[evaluator]`` keys of suite.toml.
EVALUATOR_KEYS: frozenset[str] = frozenset(
    {"argv", "environment", "wall-clock-seconds", "tool-calls", "model", "sees-oracle-checks"}
)
ANSWER_KEYS: frozenset[str] = frozenset({"protocol", "oracleDispositions", "findings", "recommendation", "toolCalls"})
RECOMMENDATIONS: frozenset[str] = frozenset({"PASS", "CONCERNS", "FAIL"})
#: Most bytes an answer may have (the adapter caps the read; a flood is a fault).
MAX_ANSWER_BYTES = 4 * 1024 * 1024


class TrialFault(Exception):
    """A trial that produced no judgement: ``reason`` is one of ``timeout``, ``exit``, ``malformed-answer``,
    ``refusal``, ``budget``, ``port``; ``detail`` one line. Never cached."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class EvaluatorCommand:
    """A suite's evaluator command (module docstring). ``argv[0]`` may be ``{python}``."""

    argv: tuple[str, ...] = REFERENCE_ARGV
    environment: tuple[str, ...] = ()
    wall_clock_seconds: int = 60
    tool_calls: int = 50
    model: str = REFERENCE_MODEL
    sees_oracle_checks: bool = True

    def resolved_argv(self) -> list[str]:
        """The argv with ``{python}`` filled in by this interpreter."""
        return [sys.executable if part == "{python}" else part for part in self.argv]

    def identity(self) -> dict[str, Any]:
        """What identifies the evaluator in a trial key and its sealed configuration: the declared argv
        (``{python}`` unresolved, so a key survives a venv move), environment key names, budgets, model."""
        return {
            "protocol": PROTOCOL,
            "argv": list(self.argv),
            "environment": sorted(self.environment),
            "wallClockSeconds": self.wall_clock_seconds,
            "toolCalls": self.tool_calls,
            "model": self.model,
            "seesOracleChecks": self.sees_oracle_checks,
        }

    def policy(self) -> CommandTargetPolicy:
        """One default-deny authorization for exactly this command."""
        argv = self.resolved_argv()
        return CommandTargetPolicy(
            authorizations=[
                CommandTargetAuthorization(
                    interface_id="evaluator",
                    executable="evaluator",
                    target=argv[0],
                    target_args=argv[1:],
                    permitted_subcommand_paths=[[]],
                    permitted_environment_keys=sorted(self.environment),
                    cwd=".",
                    artifacts={},
                    max_elapsed_ms=self.wall_clock_seconds * 1000,
                    max_output_bytes=MAX_ANSWER_BYTES,
                )
            ]
        )


def evaluator_command_of(settings: Mapping[str, Any], where: str) -> EvaluatorCommand:
    """The ``[evaluator]`` table of a suite's settings (absent: the reference evaluator); ``ValueError`` naming
    ``where`` and the key for a table that is not the documented shape."""
    table = settings.get("evaluator")
    if table is None:
        return EvaluatorCommand()
    if not isinstance(table, Mapping):
        raise ValueError(f"{where}: [evaluator] must be a table")
    unknown = sorted(set(table) - EVALUATOR_KEYS)
    if unknown:
        raise ValueError(f"{where}: [evaluator] has unknown key(s) {', '.join(unknown)}")
    argv = table.get("argv", list(REFERENCE_ARGV))
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise ValueError(f"{where}: [evaluator] argv must be a non-empty list of strings")
    environment = table.get("environment", [])
    if not isinstance(environment, list) or not all(isinstance(k, str) for k in environment):
        raise ValueError(f"{where}: [evaluator] environment must be a list of key names")
    numbers = {}
    for key, default in (("wall-clock-seconds", 60), ("tool-calls", 50)):
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where}: [evaluator] {key} must be a positive integer")
        numbers[key] = value
    # The wall clock becomes the evaluator's max_elapsed_ms: the one time-budget bound applies.
    problem = time_budget_problem("[evaluator] wall-clock-seconds", numbers["wall-clock-seconds"], unit="s")
    if problem is not None:
        raise ValueError(f"{where}: {problem}")
    model = table.get("model", REFERENCE_MODEL if list(argv) == list(REFERENCE_ARGV) else " ".join(argv))
    sees = table.get("sees-oracle-checks", list(argv) == list(REFERENCE_ARGV))
    if not isinstance(model, str) or not model or not isinstance(sees, bool):
        raise ValueError(f"{where}: [evaluator] model must be a string and sees-oracle-checks a boolean")
    return EvaluatorCommand(
        tuple(argv), tuple(environment), numbers["wall-clock-seconds"], numbers["tool-calls"], model, sees
    )


def request_of(
    command: EvaluatorCommand, brief: Any, observations: Sequence[Mapping[str, Any]], contract: Mapping[str, Any],
    trial_index: int,
) -> dict[str, Any]:
    """The request document sent on stdin (module docstring)."""
    return {
        "protocol": PROTOCOL,
        "trialIndex": trial_index,
        "brief": as_wire(brief),
        "observations": [dict(o) for o in observations],
        "contract": dict(contract) if command.sees_oracle_checks else None,
    }


@dataclass(frozen=True)
class ParsedAnswer:
    """A parsed answer: dispositions, findings (without probeId), recommendation, tool calls spent."""

    dispositions: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    recommendation: str
    tool_calls: int
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def parse_answer(stdout: str, command: EvaluatorCommand) -> ParsedAnswer:
    """Read the command's answer; a :class:`TrialFault` for a refusal, a malformed answer or an overspent budget."""
    # The answer is a target's output: nested past the bound it is this trial's fault, found by a linear
    # scan before json.loads could recurse that deep and crash the run.
    if json_too_deep(stdout):
        raise TrialFault("malformed-answer", f"stdout {TooDeep()}")
    try:
        answer = json.loads(stdout)
    except ValueError as problem:
        raise TrialFault("malformed-answer", f"stdout is not one JSON object: {problem}") from None
    if not isinstance(answer, dict):
        raise TrialFault("malformed-answer", "stdout is not a JSON object")
    if answer.get("protocol") != PROTOCOL:
        raise TrialFault("malformed-answer", f"protocol is {answer.get('protocol')!r}, not {PROTOCOL!r}")
    if "refusal" in answer:
        raise TrialFault("refusal", str(answer["refusal"])[:200])
    missing = sorted(ANSWER_KEYS - set(answer))
    unknown = sorted(set(answer) - ANSWER_KEYS)
    if missing or unknown:
        raise TrialFault("malformed-answer", f"missing {missing or 'nothing'}, unknown {unknown or 'nothing'}")
    dispositions, findings = answer["oracleDispositions"], answer["findings"]
    if not isinstance(dispositions, list) or not all(isinstance(d, dict) for d in dispositions):
        raise TrialFault("malformed-answer", "oracleDispositions must be a list of objects")
    if not isinstance(findings, list) or not all(isinstance(f, dict) and "probeId" not in f for f in findings):
        raise TrialFault("malformed-answer", "findings must be a list of objects without probeId")
    if answer["recommendation"] not in RECOMMENDATIONS:
        raise TrialFault("malformed-answer", f"recommendation {answer['recommendation']!r} is not one of PASS, CONCERNS, FAIL")
    calls = answer["toolCalls"]
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
        raise TrialFault("malformed-answer", "toolCalls must be a non-negative integer")
    if calls > command.tool_calls:
        raise TrialFault("budget", f"{calls} tool calls spent, the budget is {command.tool_calls}")
    return ParsedAnswer(dispositions, findings, answer["recommendation"], calls)


def run_evaluator(
    command: EvaluatorCommand, request: Mapping[str, Any], *, abort: Any = None, scratch: Path | None = None
) -> ParsedAnswer:
    """Run the command once through the default-deny adapter in a fresh empty directory; parse its answer."""
    environment = {key: os.environ[key] for key in command.environment if key in os.environ}
    probe_request = {
        "kind": "cli",
        "probeId": "evaluate",
        "interfaceId": "evaluator",
        "operationId": "judge",
        "executable": "evaluator",
        "subcommandPath": [],
        "channels": {"argument": {}, "option": {}, "environment": environment, "stdin": {"kind": "json", "value": dict(request)}},
    }
    adapter = CommandLineAdapter(command.policy())
    with tempfile.TemporaryDirectory(prefix="eq-evaluator-", dir=scratch) as workdir:
        try:
            timed = adapter.probe_timed(probe_request, abort=abort, workdir=workdir)
        except EvalQualityFault as fault:
            if fault.code == "budget-exhausted":
                reason = "timeout" if "elapsed" in fault.detail.lower() or "time" in fault.detail.lower() else "budget"
            else:
                reason = "port"
            raise TrialFault(reason, f"{fault.code}: {fault.detail}") from None
    observation = as_wire(timed.observation)
    if observation.get("exitCode") != 0:
        raise TrialFault("exit", f"the evaluator exited {observation.get('exitCode')}; stderr: {_text(observation.get('stderr'))[:200]}")
    judgement = parse_answer(_text(observation.get("stdout")), command)
    return ParsedAnswer(judgement.dispositions, judgement.findings, judgement.recommendation, judgement.tool_calls,
                     timed.elapsed_ms / 1000)


def _text(body: Any) -> str:
    if isinstance(body, Mapping):
        if body.get("kind") == "text":
            return str(body.get("value", ""))
        if body.get("kind") == "json":
            return json.dumps(body.get("value"))
    return ""


def evaluator_identity_digest(command: EvaluatorCommand) -> str:
    """The digest of the evaluator's identity (argv, environment keys, budgets, model): part of every trial key."""
    return digest_artifact(command.identity())
