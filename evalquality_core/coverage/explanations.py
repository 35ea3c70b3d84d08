"""What each AD-20 coverage rule asks of a contract, in a user's words, with the example from our corpus.

One row per rule of :data:`evalquality_core.coverage.rules.COVERAGE_RULES` (scoring.md §6.2), in the same
order; ``eval-quality explain <rule>`` prints a row and the README's "Coverage rules" section repeats
them. A gap at or above the policy's severity floor makes a verdict CONCERNS (scoring.md §4, row
``coverage-gap-at-or-above-floor``); the gap's severity is the highest severity among the contract's
behaviours, so a contract with one critical behaviour has every gap at critical.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleExplanation:
    """One rule: when it applies, what satisfies it, and the corpus example."""

    rule: str
    summary: str
    applies_when: str
    satisfied_when: str
    example: str


EXPLANATIONS: tuple[RuleExplanation, ...] = (
    RuleExplanation(
        "success-indicator-separation",
        "A success flag is checked beside what it claims, never alone.",
        "An operation's responseDescriptor gives a channel role to a pointer other than its successIndicator "
        "(a payload, a diagnostic, a collection), or leaves channelRoles null, or declares no success "
        "indicator (successIndicator null and no protocolSuccessIndicator).",
        "No operation leaves channelRoles null or declares no success indicator, and for every such operation "
        "one plan step using it and ONE oracle that a behaviour lists address both the success indicator and "
        "one of the other roled pointers at that step, each in the oracle's check AND in its "
        "direction.evidenceTargets. The indicator is the body pointer successIndicator, or with "
        "\"protocolSuccessIndicator\": \"response-status\" the protocol's own answer at "
        "/interactions/<step>/response-status (the HTTP status; for an mcp tool call 1 on isError, else 0).",
        "corpus/suites/notes: get-note's indicator /ok beside its payload /note is witnessed by O-001, which "
        "checks /interactions/read-back/stdout/ok equals true together with "
        "/interactions/read-back/stdout/note/title and lists both as evidence targets; list-notes' /ok beside "
        "/notes by O-003 (an `all` of the /ok equality and the for-all over /notes); patch-note's by O-002.",
    ),
    RuleExplanation(
        "whole-body",
        "A response with several required keys is checked as a whole.",
        "An operation's responseDescriptor.requiredKeys names more than one distinct key.",
        "For each such operation, one step using it and one oracle that addresses every required key at that "
        "step (check and evidence targets), e.g. a `shape` check of the whole body plus the targets.",
        "corpus/suites/review and trace keep this gap on purpose (their verdicts are CONCERNS): their "
        "operations require several keys and no single oracle addresses them all. notes requires only /ok, so "
        "the rule does not apply there.",
    ),
    RuleExplanation(
        "malformed-input",
        "Every operation that declares inputs is sent one malformed input, and the answer is checked.",
        "An operation declares requiredKeys, permittedKeys or types on any input channel.",
        "For each such operation, a plan step using it binds {\"matcher\": \"type-violating\"} for a key whose "
        "type is declared (the evaluator sends a value of another JSON kind), and some oracle's check "
        "addresses that same step (/interactions/<step>/...).",
        "corpus/suites/notes: steps malformed-write (patch with tags not a list), malformed-read (get with a "
        "number id) and malformed-list (list with a number limit); O-004 and O-006 check that each is refused "
        "(ok false, exit 2); evaluator.json chooses the violating values.",
    ),
    RuleExplanation(
        "per-record",
        "A collection is checked element by element, not by its first element.",
        "An operation's responseDescriptor.collectionLocations is null or non-empty ([] says there is none).",
        "No operation leaves collectionLocations null, and every declared location has a for-all or for-any "
        "whose collection pointer is exactly /interactions/<step>/<descriptor root><location pointer>.",
        "corpus/suites/notes: O-003's for-all over /interactions/collection/stdout/notes checks the shape of "
        "every note (the planted defect drops a field after the first).",
    ),
    RuleExplanation(
        "sibling-cross-check",
        "Operations (or parameters) the contract calls siblings are checked against each other.",
        "siblingGroups is null, or declares an operation group or a parameter group.",
        "siblingGroups is declared, and for every operation group one oracle addresses (check and evidence "
        "targets) steps of at least two members; for every parameter group one oracle addresses "
        "/interactions/<step>/call-inputs/<channel>/<key> for at least two of its keys.",
        "corpus/suites/notes declares operations [[get-note, list-notes]], witnessed by O-005 (the note get "
        "returns deep-equals the list's first element), and parameters [[title, body]], witnessed by O-001 "
        "(both patched fields are read back).",
    ),
    RuleExplanation(
        "omission-and-completeness",
        "A collection that must match a known reference set is reconciled against it.",
        "An operation leaves collectionLocations null, or a location names a referenceSet.",
        "No collectionLocations is null, and each location with a referenceSet is reconciled at its step: a "
        "covers-by-key of the reference set (cardinality mode exact), or a for-all whose predicate is directly "
        "a set-membership in the reference set (page-bounded or at-most).",
        "corpus/suites/notes: its one collection location names no reference set, so the rule does not apply; "
        "declaring one (\"referenceSet\": \"seeded-notes\") would require O-003 to reconcile against it.",
    ),
    RuleExplanation(
        "state-change-read-back",
        "A write is read back by a separate call, not trusted from its own answer.",
        "An operation has stateChangeMarker true.",
        "For each such operation, a write step w, a step r with after = w on an operation with "
        "stateChangeMarker false, and one oracle with ONE leaf (e.g. an equality) whose operands address "
        "/interactions/<w>/call-inputs/... and /interactions/<r>/<descriptor root>... (two leaves under an "
        "`all` relate nothing).",
        "corpus/suites/notes: O-001's equality of /interactions/read-back/stdout/note/title with "
        "/interactions/write/call-inputs/stdin/title; read-back runs after write. It is the only oracle that "
        "catches the silent write of probe P-001.",
    ),
)

#: rule id → explanation.
BY_RULE: dict[str, RuleExplanation] = {row.rule: row for row in EXPLANATIONS}


def explain(rule: str) -> str:
    """The explanation of ``rule`` as text (KeyError for an unknown rule)."""
    row = BY_RULE[rule]
    return (
        f"{row.rule}: {row.summary}\n"
        f"  applies when: {row.applies_when}\n"
        f"  satisfied when: {row.satisfied_when}\n"
        f"  example: {row.example}\n"
    )
