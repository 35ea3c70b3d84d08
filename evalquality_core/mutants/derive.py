"""A probe derived from an Observable mutant (pure): the authored fields a hand-written probe would hold.

For one Observable representative:

* **behaviour** — the behaviour of an oracle that killed the mutant and is its behaviour's only oracle
  (the designated oracle, AD-40); none such: not derived, and the reason says so;
* **defect signature** — from the smallest difference of the interaction plan's evaluator-chosen steps
  (channel order exit code, then stdout/stderr, then body), on that step's operation: the channel and
  the differing pointer under ``/interactions/observed/<channel>``, with the predicate "equals the
  mutated value" (a member the mutant removed has no such value: not derived);
* **manifestation witness** — the pre-flight leg with the smallest observable difference, same order:
  its request's inputs, and the relation "the leg's pointer equals the mutated value"; its leg id is
  ``<mutant id>-witness`` (unique in the suite);
* the mutation itself is the generated one, ``probeId`` set, in ``mutations/<mutant id>.json``.

Only command-line (``cli``) operations are derived here: an api or mcp signature has another shape
(method and path, tool name), and deriving those is left for later (the reason names it).
The probe is then qualified by the suite's generator cycle (evalquality_core/suite/generate.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.evaluate.pointers import ABSENT, walk
from evalquality_core.mutants.classify import RESPONSE_CHANNELS, Classification, Difference
from evalquality_core.mutants.generate import GeneratedMutant

#: Channels a signature may sit on (never an artifact: qualification refuses that, AD-9).
SIGNATURE_CHANNELS: tuple[str, ...] = ("exit-code", "stdout", "stderr")


@dataclass(frozen=True)
class Derived:
    """A derived probe and its mutation, or why none could be derived."""

    mutant_id: str
    probe: dict[str, Any] | None
    mutation: dict[str, Any] | None
    reason: str


def _tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]] if pointer else []


def _value_at(channel_value: Any, pointer: str) -> Any:
    if not pointer:
        return channel_value
    found = walk(channel_value, tuple(_tokens(pointer)))
    return ABSENT if found is ABSENT else found


def _evidence_pointer(prefix: str, channel: str, pointer: str) -> str | None:
    """``/interactions/<prefix>/<channel>/<member...>`` for a difference inside a channel's value."""
    if channel == "exit-code":
        return f"{prefix}/exit-code" if pointer == "" else None
    if not pointer.startswith("/value"):
        return None  # the stream changed kind (json <-> text): no member to point at
    return f"{prefix}/{channel}{pointer.removeprefix('/value')}"


def _order(difference: Difference) -> tuple[int, int, str, str]:
    return (SIGNATURE_CHANNELS.index(difference.channel), difference.pointer.count("/"), difference.pointer, difference.run_id)


def _channel_value(observation: Mapping[str, Any], channel: str) -> Any:
    if channel == "exit-code":
        return observation.get("exitCode")
    return observation.get(channel)


def _seen_clean(difference: Difference, mutated_runs: Mapping[str, Mapping[str, Any]], clean_runs: Mapping[str, Mapping[str, Any]],
                steps: Mapping[str, Mapping[str, Any]], baseline_steps: frozenset[str]) -> bool:
    value = _value_at(_channel_value(mutated_runs[difference.run_id], difference.channel), difference.pointer)
    operation = steps[difference.run_id.removeprefix("plan/")]["operationId"]
    for step_id, step in steps.items():
        clean = clean_runs.get(f"plan/{step_id}")
        if step["operationId"] != operation or step_id in baseline_steps or clean is None:
            continue
        if _value_at(_channel_value(clean, difference.channel), difference.pointer) == value:
            return True
    return False


def derive_probe(
    contract: Mapping[str, Any],
    mutant: GeneratedMutant,
    classification: Classification,
    killed_by: Sequence[str],
    mutated_runs: Mapping[str, Mapping[str, Any]],
    legs: Mapping[str, Mapping[str, Any]],
    steps: Mapping[str, Mapping[str, Any]],
    baseline_steps: frozenset[str],
    clean_runs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Derived:
    """Derive the authored fields of a probe for one Observable mutant (module docstring).

    ``mutated_runs``: run id → the mutant's observation (leg ids, ``plan/<step>``); ``legs``: leg id →
    request; ``steps``: step id → plan step; ``clean_runs``: the clean arm's observations, same ids.
    """
    clean_runs = clean_runs or {}
    def refuse(reason: str) -> Derived:
        return Derived(mutant.mutant_id, None, None, reason)

    if classification.status != "Observable":
        return refuse(f"{classification.status}: only an Observable mutant gets a derived probe")
    operations = {op["operationId"]: (iface, op) for iface in contract["permittedInterfaces"] for op in iface["operations"]}
    behaviours = {b["id"]: b for b in contract["behaviors"]}
    designated = [
        (oracle_id, b) for oracle_id in killed_by for b in behaviours.values() if b["oracles"] == [oracle_id]
    ]
    if not designated:
        return refuse("no oracle that kills it is the only oracle of its behaviour (AD-40 designated oracle)")
    differences = [d for d in classification.differences if d.channel in SIGNATURE_CHANNELS]
    plan_side = sorted(
        (d for d in differences if d.run_id.startswith("plan/") and d.run_id.removeprefix("plan/") not in baseline_steps),
        key=_order,
    )
    leg_side = sorted((d for d in differences if not d.run_id.startswith("plan/")), key=_order)
    if not plan_side:
        return refuse("no evaluator-chosen plan step differs on a response channel: a signature would match nothing")
    # A signature must match no clean observation of its operation (qualification refuses one that matches
    # the baseline): keep only differences whose mutated value no clean step of that operation shows.
    plan_side = [d for d in plan_side if not _seen_clean(d, mutated_runs, clean_runs, steps, baseline_steps)]
    if not plan_side:
        return refuse("every differing plan value also occurs on the clean arm of the same operation: "
                      "an equality signature would match the baseline")
    if not leg_side:
        return refuse("no pre-flight leg differs on a response channel: there is no manifestation witness")
    signature_difference = plan_side[0]
    step = steps[signature_difference.run_id.removeprefix("plan/")]
    interface, operation = operations[step["operationId"]]
    if interface["kind"] != "cli":
        return refuse(f"the differing step's operation is {interface['kind']}: only cli probes are derived so far")
    observed = _value_at(_channel_value(mutated_runs[signature_difference.run_id], signature_difference.channel),
                         signature_difference.pointer)
    signature_pointer = _evidence_pointer("/interactions/observed", signature_difference.channel, signature_difference.pointer)
    if observed is ABSENT or signature_pointer is None:
        return refuse(f"{signature_difference.run_id} {signature_difference.channel}{signature_difference.pointer}: "
                      "the mutant removed it or changed the stream's kind; no equality expresses that")
    witness_difference = leg_side[0]
    leg_request = legs[witness_difference.run_id]
    witness_value = _value_at(_channel_value(mutated_runs[witness_difference.run_id], witness_difference.channel),
                              witness_difference.pointer)
    witness_id = f"{mutant.mutant_id}-witness"
    witness_pointer = _evidence_pointer(f"/interactions/{witness_id}", witness_difference.channel, witness_difference.pointer)
    if witness_value is ABSENT or witness_pointer is None:
        return refuse(f"leg {witness_difference.run_id}: the difference is a removal or a change of kind; no witness relation")
    oracle_id, behaviour = designated[0]
    binding = {key: (None if key not in step["inputBinding"] or step["inputBinding"][key] is None else
                     {name: {"matcher": "any"} for name in step["inputBinding"][key]})
               for key in ("argument", "arguments", "body", "environment", "header", "option", "path", "query", "stdin")}
    channel = signature_difference.channel
    summary = f"{mutant.description()}: {channel}{signature_difference.pointer} becomes {observed!r}"
    probe = {
        "probeId": mutant.probe_id,
        "probeClass": "defect",
        "behaviorId": behaviour["id"],
        "expectedClean": False,
        "rationale": f"Derived from generated mutant {mutant.mutant_id} ({mutant.mutator_name}); "
                     f"its designated oracle {oracle_id} resolved to failure on the mutated arm.",
        "defects": [{
            "behaviorId": behaviour["id"],
            "defectId": "D-001",
            "severity": behaviour["severity"],
            "source": "controlled-mutation",
            "summary": summary[:500],
            "manifestationWitness": {
                "legId": witness_id,
                "interfaceId": leg_request["interfaceId"],
                "operationId": leg_request["operationId"],
                "inputs": dict(leg_request["channels"]),
                "relation": {"op": "equality", "operands": [{"pointer": witness_pointer}, {"literal": witness_value}]},
            },
        }],
        "defectSignature": {
            "interfaceKind": "cli",
            "invocation": {"executable": operation["invocation"]["executable"],
                           "subcommandPath": list(operation["invocation"]["subcommandPath"])},
            "observableChannel": channel,
            "condition": {
                "selector": {"inputBinding": binding},
                "predicate": {"op": "equality", "operands": [{"pointer": signature_pointer}, {"literal": observed}]},
            },
        },
        "qualification": {"expectedObservableFailure": summary[:500]},
    }
    mutation = {**mutant.to_mutation(), "probeId": mutant.probe_id}
    return Derived(mutant.mutant_id, probe, mutation, f"derived on {behaviour['id']} ({oracle_id}); signature "
                   f"{channel}{signature_difference.pointer} at step {step['stepId']}; witness leg {witness_difference.run_id}")


__all__ = ["RESPONSE_CHANNELS", "Derived", "derive_probe"]
