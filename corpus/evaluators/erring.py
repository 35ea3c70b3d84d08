#!/usr/bin/env python3
"""An evaluator command that errs the way models do, deterministically by trial index.

On an odd trial index it cites the wrong observation for a read-back: for an oracle whose check compares
two different steps' observations (a write and an independent read of it), it still reports the
violation, but cites (and quotes) only the write's own answer, never the read that shows the defect, as
an agent that trusted the write's echo would. On an even index it answers as the reference evaluator
does. Its recommendation is the same in every trial (a trial set must agree on it). Over three trials
(1, 2, 3) a read-back defect is then caught, with support, in one trial of three, under the policy's
``catchThreshold`` of 0.5, so multi-trial scoring turns the probe from caught to missed
(tests/flows/test_live_trials.py shows it against the reference evaluator).

Protocol: eval-quality-evaluator/1 (evalquality_core/suite/evaluator_protocol.py), request on stdin.
"""

import json
import sys

from evalquality_core.suite.reference_evaluator import answer_for


def _steps(node, out):
    if isinstance(node, dict):
        pointer = node.get("pointer")
        if isinstance(pointer, str) and pointer.startswith("/interactions/"):
            out.add(pointer.split("/")[2])
        for value in node.values():
            _steps(value, out)
    elif isinstance(node, list):
        for value in node:
            _steps(value, out)
    return out


def main():
    request = json.loads(sys.stdin.read())
    answer = answer_for(request)
    if "refusal" in answer or request.get("trialIndex", 0) % 2 == 0:
        sys.stdout.write(json.dumps(answer, sort_keys=True) + "\n")
        return 0
    read_backs = {o["id"] for o in request["contract"]["oracles"] if len(_steps(o["check"], set())) > 1}
    by_id = {o["observationId"]: o for o in request["observations"]}
    for finding in answer["findings"]:
        if finding["oracleId"] in read_backs and finding["observationIds"]:
            first = finding["observationIds"][0]
            finding["observationIds"] = [first]
            finding["quotedEvidence"] = [{"quote": str(by_id[first]["exitCode"]), "channel": "exit-code", "artifactId": None}]
    for disposition in answer["oracleDispositions"]:
        if disposition["oracleId"] in read_backs and disposition["observationIds"]:
            disposition["observationIds"] = disposition["observationIds"][:1]
    sys.stdout.write(json.dumps(answer, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
