"""``python -m evalquality_core.suite.reference_evaluator``: the reference evaluator as an evaluator command.

The default evaluator command of every suite (:mod:`evalquality_core.suite.evaluator_protocol`): reads one
protocol request on stdin, resolves every oracle check of the contract it was sent over the observations with our
evaluator (:func:`evalquality_core.suite.evaluator.judge`, the same judgement the stored trials hold) and
answers on stdout. Deterministic: the same request gives the same bytes. A request it cannot use (no
oracle checks, the wrong protocol) is answered with a refusal, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from evalquality_core.suite.evaluator_protocol import PROTOCOL


def answer_for(request: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to one request (module docstring)."""
    from evalquality_core.suite.evaluator import judge

    if request.get("protocol") != PROTOCOL:
        return {"protocol": PROTOCOL, "refusal": f"protocol {request.get('protocol')!r} is not {PROTOCOL}"}
    contract = request.get("contract")
    if not isinstance(contract, Mapping):
        return {"protocol": PROTOCOL, "refusal": "this evaluator resolves the oracle checks and was sent no contract"}
    judgement = judge(contract, request["observations"], "")
    findings = [{k: v for k, v in finding.items() if k != "probeId"} for finding in judgement.findings]
    return {
        "protocol": PROTOCOL,
        "oracleDispositions": judgement.dispositions,
        "findings": findings,
        "recommendation": judgement.recommendation,
        "toolCalls": 0,
    }


def main() -> int:
    """Read the request, write the answer; exit 0 (a refusal is an answer too)."""
    try:
        request = json.loads(sys.stdin.read())
    except ValueError as problem:
        request = {"protocol": None, "problem": str(problem)}
    if not isinstance(request, dict):
        request = {"protocol": None}
    try:
        answer = answer_for(request)
    except (KeyError, TypeError, ValueError) as problem:
        answer = {"protocol": PROTOCOL, "refusal": f"request not usable: {type(problem).__name__}: {problem}"}
    sys.stdout.write(json.dumps(answer, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
