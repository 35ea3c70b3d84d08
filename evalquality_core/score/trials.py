"""One vote per trial (AD-40 designated oracle) and the trial-set reduction (scoring.md §5.1–§5.2).

The vote of a trial is ``designatedState ?? firstInvalidatingState ?? firstState`` over its outcomes in
contract declaration order. ``reduce_trial_set`` excludes invalidating votes as invalidated attempts
(keyed by the trial's own ``trialIndex``), ignores unvoted states, and decides ``caught`` by division
against the catch threshold — strictly greater, never by multiplying the threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evalquality_core.registries import OUTCOME_STATES, OutcomeState
from evalquality_core.score.outcome import INVALIDATING_STATES, UNVOTED_STATES


@dataclass(frozen=True)
class Vote:
    """The single vote of one trial."""

    trial_index: int
    state: OutcomeState


@dataclass(frozen=True)
class ExcludedAttempt:
    """A trial excluded from the reduction because its vote was an invalidating state."""

    attempt: int
    reason: OutcomeState


@dataclass(frozen=True)
class TrialSetResult:
    """The reduction of one probe's votes."""

    exercised: bool
    caught: bool
    valid_count: int
    caught_count: int
    invalidated_attempts: tuple[ExcludedAttempt, ...]
    trial_votes: tuple[Vote, ...]


def trial_vote(
    trial_index: int, states: Sequence[tuple[str, OutcomeState]], designated_oracle: str | None
) -> Vote | None:
    """The trial's vote from its ``(oracle id, state)`` pairs in declaration order; None without oracles."""
    if not states:
        return None
    designated = next((s for oid, s in states if designated_oracle is not None and oid == designated_oracle), None)
    invalidating = next((s for _, s in states if s in INVALIDATING_STATES), None)
    return Vote(trial_index, designated or invalidating or states[0][1])


def reduce_trial_set(votes: Sequence[Vote], catch_threshold: float) -> TrialSetResult:
    """Reduce one probe's votes (§5.2); a threshold outside [0, 1] or an unknown state is a programming error."""
    if isinstance(catch_threshold, bool) or not math.isfinite(catch_threshold) or not 0 <= catch_threshold <= 1:
        raise ValueError(f"catch threshold {catch_threshold!r} is not a finite number in [0, 1]")
    invalidated: list[ExcludedAttempt] = []
    valid = caught = 0
    for vote in votes:
        if vote.state not in OUTCOME_STATES:
            raise ValueError(f"vote state {vote.state!r} is not an outcome state")
        if vote.state in INVALIDATING_STATES:
            invalidated.append(ExcludedAttempt(vote.trial_index, vote.state))
        elif vote.state in UNVOTED_STATES:
            continue
        else:
            valid += 1
            caught += vote.state == "caught"
    exercised = valid > 0
    return TrialSetResult(
        exercised=exercised,
        caught=exercised and caught / valid > catch_threshold,
        valid_count=valid,
        caught_count=caught,
        invalidated_attempts=tuple(invalidated),
        trial_votes=tuple(votes),
    )
