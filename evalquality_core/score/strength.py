"""The AD-7 strength vector, its block, the comparability key and dominance (scoring.md §5.3–§5.4, §9.3).

Rates, never weighted composites: per class, unique qualified probe ids exercised and caught. Canaries
and clean controls never enter the vector. Comparability is the policy digest plus the covered probe
set; a miss at or above the severity floor blocks dominance. Dominance and the reduction-consistency
checks read emitted evidence artifacts in their wire form (the JSON object), so they apply equally to
artifacts we minted and artifacts read from disk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalquality_core.artifacts.evidence import ClassStrength
from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.registries import SEVERITIES, ProbeClass
from evalquality_core.score.outcome import INVALIDATING_STATES, VOTED_STATES
from evalquality_core.score.trials import TrialSetResult

#: The three classes of the vector, in wire order.
VECTOR_CLASSES: tuple[ProbeClass, ...] = ("defect", "gameability", "zero-action")

Dominance = Literal["a-dominates-b", "b-dominates-a", "equivalent", "incomparable"]


@dataclass(frozen=True)
class ProbeStrengthInput:
    """One probe as the vector reads it."""

    probe_id: str
    probe_class: ProbeClass
    expected_clean: bool
    qualified: bool
    result: TrialSetResult


def _rate(caught: int, exercised: int) -> float | int | None:
    if exercised == 0:
        return None
    rate = caught / exercised
    return int(rate) if rate.is_integer() else rate  # 1, not 1.0: JSON numbers carry no float tag


def strength_vector(probes: Sequence[ProbeStrengthInput]) -> dict[ProbeClass, ClassStrength | None]:
    """Per class: None without an eligible probe, else unique exercised / caught probe ids and the rate."""
    vector: dict[ProbeClass, ClassStrength | None] = {}
    for cls in VECTOR_CLASSES:
        eligible = [p for p in probes if p.qualified and not p.expected_clean and p.probe_class == cls]
        if not eligible:
            vector[cls] = None
            continue
        exercised = {p.probe_id for p in eligible if p.result.exercised}
        caught = {p.probe_id for p in eligible if p.result.exercised and p.result.caught}
        vector[cls] = ClassStrength(caught=len(caught), exercised=len(exercised), rate=_rate(len(caught), len(exercised)))
    return vector


def is_comparable(completed: int, minimum_trial_count: int, unreached_oracle_ids: Sequence[str]) -> bool:
    """Comparable iff enough trials completed and no outcome resolved unreached (§5.3)."""
    return completed >= minimum_trial_count and not unreached_oracle_ids


def _trials_word(n: int) -> str:
    return "trial" if n == 1 else "trials"


def strength_denominator(completed: int) -> str:
    """The fixed denominator sentence."""
    return f"unique qualified probe identifiers exercised per class, across {completed} completed {_trials_word(completed)}"


def strength_note(
    admitted: int, completed: int, minimum_trial_count: int, unreached_oracle_ids: Sequence[str]
) -> str:
    """The note's sentences in order, omitting inapplicable ones (§5.3); "probe" is never pluralised."""
    sentences = [f"{admitted} admitted probe over {completed} completed {_trials_word(completed)}."]
    if completed < minimum_trial_count:
        sentences.append(f"Below the declared minimum of {minimum_trial_count}.")
    if unreached_oracle_ids:
        sentences.append(f"{', '.join(unreached_oracle_ids)} resolved unreached.")
    if not is_comparable(completed, minimum_trial_count, unreached_oracle_ids):
        sentences.append("The vector is reported and marked non-comparable.")
    return " ".join(sentences)


def comparability_key(scoring_policy_digest: str, probe_ids: Sequence[str]) -> str:
    """Digest of ``{scoringPolicyDigest, probeIds: sorted}`` (§5.4, verified on the worked example)."""
    return digest_artifact({"scoringPolicyDigest": scoring_policy_digest, "probeIds": sorted(probe_ids)})


# ---- §9.3 reduction consistency over a wire evidence artifact --------------------------------------


def reduction_problems(artifact: Mapping[str, Any]) -> list[str]:
    """Why an artifact's ``reducedProbeOutcomes`` contradicts its own trials and outcomes (empty if none)."""
    problems: list[str] = []
    reductions = artifact.get("reducedProbeOutcomes")
    if not isinstance(reductions, list) or not reductions:
        return ["the artifact carries no reducedProbeOutcomes"]
    trials = artifact.get("trials") or {}
    trial_invalidated = {(a["attempt"], a["reason"]) for a in trials.get("invalidatedAttempts", [])}
    outcomes = artifact.get("outcomes") or []
    seen: set[str] = set()
    for red in reductions:
        pid = red["probeId"]
        if pid in seen:
            problems.append(f"probe {pid} is reduced twice")
        seen.add(pid)
        valid, caught_count, threshold = red["validCount"], red["caughtCount"], red["catchThreshold"]
        if caught_count > valid:
            problems.append(f"probe {pid}: caughtCount {caught_count} exceeds validCount {valid}")
        if red["exercised"] != (valid > 0):
            problems.append(f"probe {pid}: exercised disagrees with validCount {valid}")
        if red["caught"] != (valid > 0 and caught_count / valid > threshold):
            problems.append(f"probe {pid}: caught disagrees with {caught_count}/{valid} against {threshold}")
        mine = [o for o in outcomes if o.get("probeId") == pid]
        attempts = [a["attempt"] for a in red["invalidatedAttempts"]]
        if len(attempts) != len(set(attempts)):
            problems.append(f"probe {pid}: an invalidated attempt repeats")
        for a in red["invalidatedAttempts"]:
            if (a["attempt"], a["reason"]) not in trial_invalidated:
                problems.append(f"probe {pid}: invalidated attempt {a['attempt']} is not in trials")
            if not any(o["trialIndex"] == a["attempt"] and o["state"] in INVALIDATING_STATES for o in mine):
                problems.append(f"probe {pid}: invalidated attempt {a['attempt']} has no invalidating outcome")
        invalid_trials = set(attempts)
        voted_trials = {o["trialIndex"] for o in mine if o["state"] in VOTED_STATES} - invalid_trials
        caught_trials = {o["trialIndex"] for o in mine if o["state"] == "caught"} - invalid_trials
        if valid > len(voted_trials):
            problems.append(f"probe {pid}: validCount {valid} exceeds the trials with a voted outcome")
        if caught_count > len(caught_trials):
            problems.append(f"probe {pid}: caughtCount {caught_count} exceeds the trials with a caught outcome")
    if artifact.get("scoredProbeId") is not None and artifact["scoredProbeId"] not in seen:
        problems.append(f"scoredProbeId {artifact['scoredProbeId']} has no reduction")
    return problems


# ---- §5.4 dominance ---------------------------------------------------------------------------------


def _caught_at_or_above(artifact: Mapping[str, Any], floor: str) -> set[str]:
    floor_index = SEVERITIES.index(floor) if floor in SEVERITIES else len(SEVERITIES)
    return {
        r["probeId"]
        for r in artifact.get("reducedProbeOutcomes") or []
        if r["caught"] and r["severity"] in SEVERITIES and SEVERITIES.index(r["severity"]) >= floor_index
    }


def _caught_ids(artifact: Mapping[str, Any]) -> set[str]:
    return {r["probeId"] for r in artifact.get("reducedProbeOutcomes") or [] if r["caught"]}


def compare_dominance(a: Mapping[str, Any], b: Mapping[str, Any], severity_floor: str) -> Dominance:
    """Compare two wire evidence artifacts (§5.4)."""
    if a["comparabilityKey"] != b["comparabilityKey"]:
        return "incomparable"
    if not a["strength"]["comparable"] or not b["strength"]["comparable"]:
        return "incomparable"
    if reduction_problems(a) or reduction_problems(b):
        return "incomparable"
    wins_a = wins_b = 0
    contributing = 0
    all_equal = True
    for cls in VECTOR_CLASSES:
        va, vb = a["strength"]["vector"].get(cls), b["strength"]["vector"].get(cls)
        if va is None or vb is None or va["rate"] is None or vb["rate"] is None:
            continue
        contributing += 1
        if (va["caught"], va["exercised"]) != (vb["caught"], vb["exercised"]):
            all_equal = False
        if va["rate"] > vb["rate"]:
            wins_a += 1
        elif vb["rate"] > va["rate"]:
            wins_b += 1
    if contributing == 0:
        return "incomparable"
    if all_equal:
        return "equivalent"
    if wins_a and not wins_b:
        favoured, other, verdict = a, b, "a-dominates-b"
    elif wins_b and not wins_a:
        favoured, other, verdict = b, a, "b-dominates-a"
    else:
        return "incomparable"
    # A favoured side that missed a probe the other caught at or above the floor cannot dominate.
    if _caught_at_or_above(other, severity_floor) - _caught_ids(favoured):
        return "incomparable"
    return verdict  # type: ignore[return-value]
