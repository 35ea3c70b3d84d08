"""The oracle kill score: how many generated mutants the contract's oracles catch, without an evaluator.

A mutant is **Killed** when some oracle resolves to its failing value on the mutated arm (``false`` for
an ``expects-hold`` oracle, ``true`` for an ``expects-violation`` one) and every oracle resolves to its
holding value on the clean arm; otherwise it **Survived** (an oracle that cannot resolve — abstained,
unknown — kills nothing). A Timeout counts as detected. The polarity rule is ours: the issue says
"resolves false", which is the same thing for every ``expects-hold`` oracle, and an
``expects-violation`` oracle states a failure, so it holds when its check is false (as the generator's
clean-control check reads it).

Score = detected / valid, where detected = Killed + Timeout and valid = every mutant that ran or could
have run: Invalid, Duplicate (never run) and Stillborn (a start-up failure, the report's RuntimeError)
are not valid; NoCoverage and Unobservable mutants are valid and Survived — a contract that never
reaches a line, or cannot see what it does, lets its defects through. The interval is the 95 % Wilson
score interval, exact enough at the small counts of a sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: z for a two-sided 95 % interval.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes`` out of ``trials`` (None when there are no trials)."""
    if trials <= 0:
        return None
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def holds(oracle: Mapping[str, Any], resolution: str) -> bool:
    """Whether an oracle's resolution is its holding value (module docstring)."""
    return resolution == ("false" if oracle.get("polarity") == "expects-violation" else "true")


def fails(oracle: Mapping[str, Any], resolution: str) -> bool:
    """Whether an oracle's resolution is its failing value."""
    return resolution == ("true" if oracle.get("polarity") == "expects-violation" else "false")


@dataclass(frozen=True)
class KillVerdict:
    """Killed or Survived, the oracles that killed it, and why (one line)."""

    killed: bool
    killed_by: tuple[str, ...]
    reason: str


def clean_problems(oracles: Sequence[Mapping[str, Any]], clean: Mapping[str, str]) -> list[str]:
    """The oracles that do not hold on the clean arm (then no mutant can be Killed)."""
    return [f"{o['id']} resolves {clean.get(o['id'])}" for o in oracles if not holds(o, clean.get(o["id"], ""))]


def kill_verdict(oracles: Sequence[Mapping[str, Any]], clean: Mapping[str, str], mutated: Mapping[str, str]) -> KillVerdict:
    """Killed or Survived for one mutant from every oracle's resolution on both arms."""
    problems = clean_problems(oracles, clean)
    if problems:
        return KillVerdict(False, (), "the clean arm does not hold: " + ", ".join(problems))
    killers = tuple(o["id"] for o in oracles if fails(o, mutated.get(o["id"], "")))
    if killers:
        return KillVerdict(True, killers, f"{', '.join(killers)} resolve(s) to failure on the mutated arm")
    return KillVerdict(False, (), "every oracle still holds (or cannot resolve) on the mutated arm")


#: How each classification enters the score.
NOT_VALID: frozenset[str] = frozenset({"Invalid", "Duplicate", "Stillborn"})


@dataclass(frozen=True)
class KillScore:
    """detected / valid with its 95 % Wilson interval; ``sampled`` says whether a sample was scored."""

    detected: int
    valid: int
    score: float | None
    interval: tuple[float, float] | None
    sampled: bool
    population: int

    def as_json(self) -> dict[str, Any]:
        """The score as JSON (the summary's ``killScore``)."""
        return {
            "detected": self.detected, "valid": self.valid, "score": self.score,
            "interval95": None if self.interval is None else [round(self.interval[0], 6), round(self.interval[1], 6)],
            "sampled": self.sampled, "population": self.population,
        }


def kill_score(statuses: Sequence[str], *, sampled: bool, population: int) -> KillScore:
    """The score over final report statuses (Killed, Survived, Timeout, NoCoverage, RuntimeError, …)."""
    valid = [s for s in statuses if s not in {"CompileError", "RuntimeError", "Ignored"}]
    detected = sum(1 for s in valid if s in ("Killed", "Timeout"))
    score = detected / len(valid) if valid else None
    return KillScore(detected, len(valid), score, wilson_interval(detected, len(valid)), sampled, population)
