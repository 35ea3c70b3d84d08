"""The AD-40 defect-signature witness match and the finding buckets (scoring.md §3.6, §3.7).

The signature is contract-independent: an HTTP signature names a method and a path template whose
parameter names are erased before matching (``/notes/{id}`` ≡ ``/notes/{noteId}``); a command signature
names an executable and subcommand path. Detection holds iff a defect finding cites a satisfying
observation of the home operation; identifiers govern the match, quotations never feed it.
Everything is computed on wire JSON (models are converted on the way in).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.evaluate import (
    ResolutionContext,
    as_wire,
    decode_tokens,
    observation_satisfies_bindings,
    resolve_check,
)
from evalquality_core.score.outcome import FindingBucket, WitnessResult

#: The reserved step id every signature pointer is rooted at.
OBSERVED_STEP = "observed"
#: The regex budget of the witness match (fixed, not the policy's: §3.6 step 4).
WITNESS_REGEX_STEP_BUDGET = 1_000_000
_PARAMETER = re.compile(r"\{[^}]*\}")


def erase_parameters(path_template: str) -> str:
    """Replace every ``{name}`` with ``{}``."""
    return _PARAMETER.sub("{}", path_template)


def signature_identity(signature: Mapping[str, Any]) -> str:
    """HTTP: ``METHOD /path/{}``; command: executable and subcommand segments joined by spaces."""
    if "toolName" in signature:
        return f"tool {signature['toolName']}"
    if signature.get("interfaceKind") == "cli":
        inv = signature["invocation"]
        return " ".join([inv["executable"], *inv["subcommandPath"]])
    return f"{signature['method']} {erase_parameters(signature['pathTemplate'])}"


def _operation_identity(kind: str, operation: Mapping[str, Any]) -> str | None:
    if kind == "mcp" and "toolName" in operation:
        return f"tool {operation['toolName']}"
    if kind == "cli":
        inv = operation.get("invocation")
        return None if inv is None else " ".join([inv["executable"], *inv["subcommandPath"]])
    if "method" in operation and "pathTemplate" in operation:
        return f"{operation['method']} {erase_parameters(operation['pathTemplate'])}"
    return None


@dataclass(frozen=True)
class HomeOperation:
    """The contract operation a signature names, with its declaring interface."""

    interface_id: str
    interface_kind: str
    operation: Mapping[str, Any]

    @property
    def operation_id(self) -> str:
        """The operation identifier."""
        return self.operation["operationId"]

    def observed(self, observation: Mapping[str, Any]) -> bool:
        """Whether an observation is a call of this operation: same operation id and, when the
        observation names one (record 7+), the same interface (the (interfaceId, operationId) pair)."""
        interface_id = observation.get("interfaceId")
        return observation["operationId"] == self.operation_id and interface_id in (None, self.interface_id)


def resolve_home_operation(contract: Any, signature: Mapping[str, Any] | None) -> HomeOperation | None:
    """First operation whose identity equals the signature's (compile forbids post-erasure collisions)."""
    if signature is None:
        return None
    wanted = signature_identity(as_wire(signature))
    for interface in as_wire(contract)["permittedInterfaces"]:
        for operation in interface["operations"]:
            if _operation_identity(interface["kind"], operation) == wanted:
                return HomeOperation(interface["logicalId"], interface["kind"], operation)
    return None


@dataclass(frozen=True)
class WitnessMatch:
    """The result of one signed probe against one trial (§3.6)."""

    result: WitnessResult
    #: The candidates, ascending by sequence then id.
    observation_ids: tuple[str, ...]
    satisfying_ids: tuple[str, ...]
    refuting_ids: tuple[str, ...]
    inconclusive_ids: tuple[str, ...]
    witness_observation_ids: tuple[str, ...]
    unwitnessed_finding_ids: tuple[str, ...]
    exercised: bool
    home_operation_resolved: bool
    basis: str = "measured"


def _sorted(observations: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(observations, key=lambda o: (o["sequence"], o["observationId"]))


def _unexercised(resolved: bool) -> WitnessMatch:
    return WitnessMatch("unexercised", (), (), (), (), (), (), False, resolved)


def match_witness(
    contract: Any,
    probe: Any,
    observations: Sequence[Any],
    findings: Sequence[Any],
    home: HomeOperation | None = None,
) -> WitnessMatch:
    """Match a signed probe (``expectedClean`` false, signature present) against one trial's evidence.

    ``home`` may be passed when already resolved. Runtime faults from the predicate propagate.
    """
    p = as_wire(probe)
    signature = p["defectSignature"]
    home = home or resolve_home_operation(contract, signature)
    if home is None:
        return _unexercised(False)
    obs = [as_wire(o) for o in observations]
    home_obs = [o for o in obs if home.observed(o)]
    exercised = [o for o in home_obs if o["provenance"] == "evaluator-chosen"]
    if not exercised:
        return _unexercised(True)
    selector_step = {"stepId": OBSERVED_STEP, "inputBinding": signature["condition"]["selector"]["inputBinding"]}
    candidates = _sorted([o for o in exercised if observation_satisfies_bindings(o, selector_step, home.operation, {})])
    locations = frozenset(
        (OBSERVED_STEP, decode_tokens(loc["pointer"]))
        for loc in (home.operation.get("responseDescriptor") or {}).get("collectionLocations") or []
    )
    satisfying: list[str] = []
    refuting: list[str] = []
    inconclusive: list[str] = []
    for candidate in candidates:
        context = ResolutionContext(
            bound={OBSERVED_STEP: candidate},
            reference_sets={},
            collection_locations=locations,
            regex_step_budget=WITNESS_REGEX_STEP_BUDGET,
            artifact_path=f"Probe[probeId={p['probeId']}].defectSignature.condition.predicate",
        )
        resolution = resolve_check(signature["condition"]["predicate"], context).resolution
        {"true": satisfying, "false": refuting}.get(resolution, inconclusive).append(candidate["observationId"])
    home_ids = {o["observationId"] for o in home_obs}
    satisfying_set = set(satisfying)
    witnesses: list[str] = []
    unwitnessed: list[str] = []
    for finding in (as_wire(f) for f in findings):
        if finding["findingType"] != "defect" or finding["probeId"] != p["probeId"]:
            continue
        cited_home = [i for i in finding["observationIds"] if i in home_ids]
        if not cited_home:
            continue  # an unrelated real defect
        hits = [i for i in cited_home if i in satisfying_set]
        if hits:
            witnesses.extend(i for i in hits if i not in witnesses)
        else:
            unwitnessed.append(finding["findingId"])
    if unwitnessed:
        result: WitnessResult = "unwitnessed-claim"
    elif satisfying:
        result = "matched" if witnesses else "manifested-unclaimed"
    elif not candidates or refuting:
        result = "not-triggered"
    else:
        result = "vacuous"
    ordered_witnesses = tuple(i for i in satisfying if i in witnesses)
    return WitnessMatch(
        result=result,
        observation_ids=tuple(c["observationId"] for c in candidates),
        satisfying_ids=tuple(satisfying),
        refuting_ids=tuple(refuting),
        inconclusive_ids=tuple(inconclusive),
        witness_observation_ids=ordered_witnesses,
        unwitnessed_finding_ids=tuple(sorted(unwitnessed)),
        exercised=True,
        home_operation_resolved=True,
    )


def map_findings(
    findings: Sequence[Any],
    observations: Sequence[Any],
    probes: Mapping[str, Any],
    homes: Mapping[str, HomeOperation | None],
) -> dict[FindingBucket, tuple[str, ...]]:
    """Bucket every defect finding (§3.7): dangling, signatureless, mapped or unmapped; each sorted.

    ``probes`` maps the scored probe ids to probes; ``homes`` their resolved home operations.
    """
    by_id: dict[str, list[Mapping[str, Any]]] = {}
    for o in (as_wire(o) for o in observations):
        by_id.setdefault(o["observationId"], []).append(o)
    buckets: dict[FindingBucket, list[str]] = {"mapped": [], "unmapped": [], "signatureless": [], "dangling": []}
    for finding in (as_wire(f) for f in findings):
        if finding["findingType"] != "defect":
            continue
        pid = finding["probeId"]
        if pid not in probes:
            buckets["dangling"].append(finding["findingId"])
            continue
        probe = as_wire(probes[pid])
        if probe["expectedClean"] or probe.get("defectSignature") is None:
            buckets["signatureless"].append(finding["findingId"])
            continue
        home = homes.get(pid)
        if home is not None and any(home.observed(o) for i in finding["observationIds"] for o in by_id.get(i, ())):
            buckets["mapped"].append(finding["findingId"])
        else:
            buckets["unmapped"].append(finding["findingId"])
    return {k: tuple(sorted(v)) for k, v in buckets.items()}
