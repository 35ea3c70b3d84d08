"""Classifying a mutant from what the contract's legs and interaction plan observed, clean vs mutated.

A *run* is one pre-flight leg (one request in a fresh workspace) or one step of the interaction plan
(the plan runs in order in one workspace). Each run's observation is reduced to what a contract can
see on it (:func:`channels_of`): the response channels (``exit-code``, ``stdout``, ``stderr`` of a
command; ``status``, ``headers``, ``body`` of an HTTP call; ``is-error``, ``result``, ``exit-code`` of a
tool call) and the ``artifacts`` (files the command left). Correlation labels (leg id, observation id,
sequence, provenance) and the inputs sent are not observations and never differ a mutant.

The decision table (:func:`classify`), first row that applies:

==============  ==================================================================================
NoCoverage      line coverage of the clean system is known and no leg or plan step reaches a
                mutated line: nothing runs (issue 18).
Timeout         some run of the mutant exceeded its wall-clock budget (``budget-exhausted``,
                ``maxElapsedMs``; a command, an HTTP exchange cut mid-answer, a tool-server
                session alike): detected, as in mutation testing.
Stillborn       every run of the mutant fails the same way at start-up: all faults with one code, or
                all answers identical to each other AND a failure (a non-zero exit, a tool error, a
                5xx: a crash at import or start-up), while the clean answers are not all so. Not a
                valid mutant (RuntimeError). A run that answers without failing is never a start-up
                failure, however alike the answers: identical successful answers (a command that
                always prints the same line) and silence (exit 0 with nothing on stdout or stderr: a
                main that exits at once, a dead ``__main__`` guard) are answers the contract's
                oracles check against the clean ones, so the rows below decide (issue 34; before, a
                silent exit 0 was Stillborn and left out of the score even when oracles killed it).
Unobservable    every observation equals the clean one: equivalent for this contract.
ArtifactOnly    only artifacts differ (qualification would refuse an artifact-channel signature).
Observable      some response channel differs (or some run faulted where the clean one answered).
==============  ==================================================================================

Runs the coverage shows do not reach the mutated lines are not spawned: a deterministic system
answers them exactly as it answered clean, so the clean observation stands for them (issue 18:
"run only the legs that reach the mutated line").

The **difference vector** of a mutant is the sorted tuple of ``(run, channel, pointer)`` where its
observations differ from the clean ones (pointers, not values): Observable mutants with the same
vector collapse onto one representative, the first in source order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The statuses this module decides, in decision-table order.
CLASSIFICATIONS: tuple[str, ...] = ("NoCoverage", "Timeout", "Stillborn", "Unobservable", "ArtifactOnly", "Observable")
#: The response channels, in the order a manifestation witness prefers the smallest difference
#: (issue 18: exit code, then stdout/stderr, then body).
RESPONSE_CHANNELS: tuple[str, ...] = ("exit-code", "status", "is-error", "stdout", "stderr", "headers", "body", "result")


@dataclass(frozen=True)
class RunOutcome:
    """What one run answered: its observation (a leg's port observation or a plan step's record
    observation, wire JSON), or the fault that ended it (``fault_code``, one line in ``fault``)."""

    run_id: str
    observation: Mapping[str, Any] | None = None
    fault_code: str | None = None
    fault: str | None = None

    @property
    def timed_out(self) -> bool:
        """Whether the run exceeded its wall-clock budget."""
        return self.fault_code == "budget-exhausted" and "maxElapsedMs" in (self.fault or "")


def channels_of(observation: Mapping[str, Any]) -> dict[str, Any]:
    """What a contract can observe of one run, by channel (module docstring); leg and record shapes alike."""
    kind = observation.get("kind")
    if kind == "cli":
        return {"exit-code": observation["exitCode"], "stdout": observation["stdout"], "stderr": observation["stderr"],
                "artifacts": dict(observation.get("artifacts") or {})}
    if kind == "api":
        return {"status": observation["status"], "headers": observation["headers"], "body": observation["body"]}
    if kind == "mcp":
        return {"is-error": observation["isError"], "result": observation["result"], "exit-code": observation.get("exitCode")}
    # A sealed-run-record observation (a plan step): its shape says which kind of call it was.
    if observation.get("responseHeaders") is not None:
        return {"status": observation["responseStatus"], "headers": observation["responseHeaders"],
                "body": observation["responseBody"]}
    if observation.get("exitCode") is None and observation.get("stdout", {}).get("kind") == "absent" and (
        observation.get("responseStatus") is not None
    ):
        return {"is-error": observation["responseStatus"] == 1, "result": observation["responseBody"]}
    return {"exit-code": observation.get("exitCode"), "stdout": observation.get("stdout"),
            "stderr": observation.get("stderr"), "artifacts": dict(observation.get("artifacts") or {})}


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def differing_pointers(clean: Any, mutated: Any, prefix: str = "") -> list[str]:
    """JSON pointers (RFC 6901) under ``prefix`` where two JSON values differ: the deepest object
    members that differ; a list of another length, or a value of another kind, differs as a whole."""
    if clean == mutated:
        return []
    if isinstance(clean, dict) and isinstance(mutated, dict):
        out: list[str] = []
        for key in sorted(set(clean) | set(mutated)):
            pointer = f"{prefix}/{_escape(str(key))}"
            if key not in clean or key not in mutated:
                out.append(pointer)
            else:
                out.extend(differing_pointers(clean[key], mutated[key], pointer))
        return out
    if isinstance(clean, list) and isinstance(mutated, list) and len(clean) == len(mutated):
        out = []
        for index, (a, b) in enumerate(zip(clean, mutated, strict=True)):
            out.extend(differing_pointers(a, b, f"{prefix}/{index}"))
        return out
    return [prefix]


@dataclass(frozen=True)
class Difference:
    """One place a mutant's observation differs: the run, the channel, the pointer inside the channel."""

    run_id: str
    channel: str
    pointer: str

    def as_tuple(self) -> tuple[str, str, str]:
        """The difference as a sortable tuple."""
        return (self.run_id, self.channel, self.pointer)


@dataclass(frozen=True)
class Classification:
    """A mutant's class, why, and where it differs (empty unless Observable or ArtifactOnly)."""

    status: str
    reason: str
    differences: tuple[Difference, ...] = ()
    runs: tuple[str, ...] = ()
    covered_by: tuple[str, ...] = field(default=())

    @property
    def vector(self) -> tuple[tuple[str, str, str], ...]:
        """The difference vector (module docstring)."""
        return tuple(sorted(d.as_tuple() for d in self.differences))


def _differences(run_id: str, clean: RunOutcome, mutated: RunOutcome) -> list[Difference]:
    if mutated.fault_code is not None or clean.fault_code is not None:
        if (clean.fault_code, clean.fault) == (mutated.fault_code, mutated.fault):
            return []
        return [Difference(run_id, "fault", "")]
    assert clean.observation is not None and mutated.observation is not None
    before, after = channels_of(clean.observation), channels_of(mutated.observation)
    out = []
    for channel in sorted(set(before) | set(after)):
        for pointer in differing_pointers(before.get(channel), after.get(channel)):
            out.append(Difference(run_id, channel, pointer))
    return out


def _same_way(outcomes: Sequence[RunOutcome]) -> bool:
    """Whether every run answered identically (response channels) or faulted with one code."""
    if len(outcomes) < 2:
        return False
    if all(o.fault_code is not None for o in outcomes):
        return len({o.fault_code for o in outcomes}) == 1
    if any(o.fault_code is not None for o in outcomes):
        return False
    answers = []
    for outcome in outcomes:
        assert outcome.observation is not None
        channels = channels_of(outcome.observation)
        channels.pop("artifacts", None)
        answers.append(channels)
    return all(answer == answers[0] for answer in answers[1:]) and _failed(answers[0])


def _failed(answer: Mapping[str, Any]) -> bool:
    """Whether one answer is a failure a crash at start-up gives: a non-zero exit, a tool error, a server
    error. A successful answer, even an empty one (exit 0, nothing said), is not (module docstring)."""
    if answer.get("exit-code") not in (None, 0) or answer.get("is-error") is True:
        return True
    return isinstance(answer.get("status"), int) and bool(answer["status"] >= 500)


def classify(
    clean: Mapping[str, RunOutcome],
    mutated: Mapping[str, RunOutcome],
    *,
    coverage_known: bool,
) -> Classification:
    """The mutant's class (module docstring's table).

    ``clean`` holds every run of the clean system (leg ids and ``plan/<step>`` ids); ``mutated`` the runs
    that reached the mutated lines and were run against the mutant (empty: none reached them). A run
    missing from ``mutated`` answered as ``clean`` did.
    """
    ran = tuple(sorted(mutated))
    if not mutated:
        if coverage_known:
            return Classification("NoCoverage", "no leg or plan step reaches a mutated line", runs=ran)
        return Classification("Unobservable", "no run was made", runs=ran)
    timed_out = sorted(run for run, outcome in mutated.items() if outcome.timed_out)
    if timed_out:
        return Classification("Timeout", f"{timed_out[0]} exceeded its time budget ({len(timed_out)} run(s))", runs=ran)
    every = [mutated.get(run, outcome) for run, outcome in sorted(clean.items())]
    if _same_way(every) and not _same_way([clean[run] for run in sorted(clean)]):
        first = every[0]
        how = f"fault {first.fault_code}" if first.fault_code else _brief(first.observation)
        return Classification("Stillborn", f"every run answers the same way: {how}", runs=ran)
    differences = [d for run in ran for d in _differences(run, clean[run], mutated[run])]
    if not differences:
        return Classification("Unobservable", "every observation equals the clean one", runs=ran)
    if all(d.channel == "artifacts" for d in differences):
        return Classification("ArtifactOnly", f"only artifacts differ ({_where(differences)})", tuple(differences), ran)
    response = [d for d in differences if d.channel != "artifacts"]
    return Classification("Observable", f"differs at {_where(response)}", tuple(differences), ran)


def _where(differences: Sequence[Difference]) -> str:
    first = differences[0]
    more = f" and {len(differences) - 1} more" if len(differences) > 1 else ""
    return f"{first.run_id} {first.channel}{first.pointer}{more}"


def _brief(observation: Mapping[str, Any] | None) -> str:
    if observation is None:
        return "nothing"
    channels = channels_of(observation)
    if "exit-code" in channels and channels["exit-code"] not in (None, 0):
        return f"exit {channels['exit-code']}"
    if "status" in channels:
        return f"status {channels['status']}"
    return "one identical answer"


def collapse(classified: Sequence[tuple[str, Classification]]) -> dict[str, str]:
    """For each Observable mutant id, the representative it collapses onto (the first with its vector)."""
    first: dict[tuple[tuple[str, str, str], ...], str] = {}
    out: dict[str, str] = {}
    for mutant_id, classification in classified:
        if classification.status != "Observable":
            continue
        out[mutant_id] = first.setdefault(classification.vector, mutant_id)
    return out


def smallest_difference(classification: Classification) -> Difference | None:
    """The response difference a derived probe's witness uses: the channel first in
    :data:`RESPONSE_CHANNELS` order, then the shortest pointer, then the run id."""
    response = [d for d in classification.differences if d.channel in RESPONSE_CHANNELS]
    if not response:
        return None
    return min(response, key=lambda d: (RESPONSE_CHANNELS.index(d.channel), d.pointer.count("/"), d.pointer, d.run_id))
