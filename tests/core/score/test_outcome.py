"""Every row of the AD-33 tables (scoring.md §3.3–§3.5): one case each, plus a census over the cases."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evalquality_core.registries import OUTCOME_STATES
from evalquality_core.score.outcome import (
    CORROBORATION_RULES,
    INVALIDATING_CONDITIONS,
    OUTCOME_RULES,
    WAIVER_RULES,
    CitedFinding,
    OutcomeInputs,
    RecordedDisposition,
    decide_outcome,
)

#: A signed defect probe, qualified; the designated oracle saw one observation; nothing else.
BASE = OutcomeInputs(
    required=True,
    disposition=RecordedDisposition("held", ("obs-1",)),
    cited_finding=None,
    witness=None,
    selections=("one",),
    selector_ambiguity=False,
    check_resolution="true",
    polarity="expects-hold",
    probe_class="defect",
    expected_clean=False,
    probe_signed=True,
    probe_qualified=True,
    waiver="none",
    judge_conduct="absent",
    evaluation_fault=False,
)
MAPPED = CitedFinding("F-001", "mapped", "critical")
CLEAN = {"expected_clean": True, "probe_class": "zero-action", "probe_signed": False}

# (row number, rule id, state, inputs changes, resolvedFrom expected)
STATE_CASES = [
    (1, "evaluation-fault", "oracle-error", {"evaluation_fault": True}, None),
    (2, "judge-malformed", "judge-error", {"judge_conduct": "malformed"}, None),
    (3, "probe-unqualified", "infrastructure-error", {"probe_qualified": False}, None),
    (4, "finding-dangling-probe", "infrastructure-error",
     {"cited_finding": CitedFinding("F-001", "dangling", "low")}, "F-001"),
    (5, "witness-unwitnessed-claim", "infrastructure-error", {"witness": "unwitnessed-claim"}, None),
    (6, "witness-vacuous", "infrastructure-error", {"witness": "vacuous"}, None),
    (7, "selector-ambiguous", "infrastructure-error", {"selector_ambiguity": True, "selections": ("several",)}, None),
    (8, "witness-unexercised", "not-applicable", {"witness": "unexercised"}, None),
    (9, "steps-unreached", "unreached", {"selections": ("none", "none")}, None),
    (10, "zero-action-detected", "caught", {"probe_class": "zero-action", "witness": "matched"}, None),
    (11, "clean-control-false-positive", "false-positive", {**CLEAN, "cited_finding": MAPPED}, "F-001"),
    (12, "clean-control-passed", "passed-clean-control", CLEAN, None),
    (13, "canary-detected", "caught",
     {"probe_class": "canary", "probe_signed": False, "cited_finding": CitedFinding("F-002", "signatureless", "low")},
     "F-002"),
    (14, "canary-undetected", "infrastructure-error", {"probe_class": "canary", "probe_signed": False}, None),
    (15, "witness-matched", "caught", {"witness": "matched"}, None),
    (16, "witness-manifested-unclaimed", "missed", {"witness": "manifested-unclaimed"}, None),
    (17, "oracle-cited-defect", "caught", {"cited_finding": MAPPED, "disposition": RecordedDisposition("violated", ("obs-1",))}, "F-001"),
    (18, "check-insufficient-evidence", "abstained", {"check_resolution": "insufficient-evidence"}, None),
    (19, "witness-not-triggered", "confirmed", {"witness": "not-triggered"}, None),
    (20, "outcome-clear", "confirmed", {}, None),
]


@pytest.mark.parametrize(("number", "rule", "state", "changes", "resolved_from"), STATE_CASES)
def test_each_state_row(number: int, rule: str, state: str, changes: dict, resolved_from: str | None) -> None:
    decision = decide_outcome(replace(BASE, **changes))
    assert (decision.rule_number, decision.rule, decision.state) == (number, rule, state)
    assert decision.resolved_from == resolved_from


def test_state_rows_match_the_spec_table() -> None:
    assert [(r.number, r.id, r.state) for r in OUTCOME_RULES] == [(n, i, s) for n, i, s, _, _ in STATE_CASES]


def test_first_match_wins_over_lower_rows() -> None:
    # an evaluation fault beats a dangling citation and an ambiguous selector
    d = decide_outcome(
        replace(BASE, evaluation_fault=True, selector_ambiguity=True, cited_finding=CitedFinding("F-1", "dangling", "low"))
    )
    assert d.state == "oracle-error"
    assert d.invalidating_conditions == ("dangling-probe-citation", "evaluation-fault", "selector-ambiguity")


CONDITION_CASES = [
    ("evaluation-fault", {"evaluation_fault": True}),
    ("judge-malformed", {"judge_conduct": "malformed"}),
    ("unqualified-probe-in-sealed-set", {"probe_qualified": False}),
    ("dangling-probe-citation", {"cited_finding": CitedFinding("F-001", "dangling", "low")}),
    ("unwitnessed-detection-claim", {"witness": "unwitnessed-claim"}),
    ("vacuous-signature", {"witness": "vacuous"}),
    ("selector-ambiguity", {"selector_ambiguity": True}),
    ("canary-non-detection", {"probe_class": "canary"}),
    ("unsupported-disposition", {"disposition": RecordedDisposition("held", ())}),
    ("disposition-missing", {"disposition": None}),
]


@pytest.mark.parametrize(("condition", "changes"), CONDITION_CASES)
def test_each_invalidating_condition(condition: str, changes: dict) -> None:
    assert decide_outcome(replace(BASE, **changes)).invalidating_conditions == (condition,)


def test_no_condition_on_the_base_case_and_conditions_are_sorted() -> None:
    assert decide_outcome(BASE).invalidating_conditions == ()
    both = decide_outcome(replace(BASE, disposition=None, evaluation_fault=True)).invalidating_conditions
    assert both == ("disposition-missing", "evaluation-fault")
    assert {c.id for c in INVALIDATING_CONDITIONS} == {c for c, _ in CONDITION_CASES}


def test_waiver_rows() -> None:
    missed = replace(BASE, witness="manifested-unclaimed")
    met = decide_outcome(replace(missed, waiver="applied-condition-met"))
    unmet = decide_outcome(replace(missed, waiver="applied-condition-unmet"))
    expired = decide_outcome(replace(missed, waiver="expired"))
    assert (met.state, met.waiver_rule) == ("not-applicable", "waiver-honoured")
    assert (unmet.state, unmet.waiver_rule) == ("bypassed", "waiver-bypassed")
    assert (expired.state, expired.waiver_rule) == ("missed", None)  # an expired waiver reinstates the gap
    # only missed is waivable
    assert decide_outcome(replace(BASE, waiver="applied-condition-met")).waiver_rule is None
    assert [w.id for w in WAIVER_RULES] == ["waiver-honoured", "waiver-bypassed"]


CORROBORATION_CASES = [
    (1, "disposition-unsupported", "disagrees", {"disposition": RecordedDisposition("held", ())}),
    (2, "disposition-contradicts-evidence", "disagrees", {"disposition": RecordedDisposition("violated", ("o",))}),
    (3, "citation-declined", "disagrees",
     {"cited_finding": CitedFinding("F-001", "unmapped", "low"), "disposition": RecordedDisposition("violated", ("o",))}),
    (4, "examined-nothing", "agrees", {"check_resolution": "insufficient-evidence"}),
    (5, "never-ran", "not-evaluable", {"check_resolution": None}),
    (6, "check-confirms-silence", "agrees", {}),
    (7, "check-confirms-finding", "agrees",
     {"cited_finding": MAPPED, "disposition": RecordedDisposition("violated", ("o",)), "check_resolution": "false"}),
    (8, "check-and-findings-diverge", "disagrees", {"check_resolution": "false"}),
]


@pytest.mark.parametrize(("number", "rule", "value", "changes"), CORROBORATION_CASES)
def test_each_corroboration_row(number: int, rule: str, value: str, changes: dict) -> None:
    d = decide_outcome(replace(BASE, **changes))
    assert (d.corroboration_rule, d.corroboration) == (rule, value)
    assert [r.id for r in CORROBORATION_RULES][number - 1] == rule


def test_examined_nothing_with_a_citation_disagrees_and_expects_violation_polarity() -> None:
    d = decide_outcome(
        replace(
            BASE,
            check_resolution="insufficient-evidence",
            cited_finding=MAPPED,
            disposition=RecordedDisposition("violated", ("o",)),
        )
    )
    assert (d.corroboration_rule, d.corroboration) == ("examined-nothing", "disagrees")
    # under expects-violation a false check satisfies: silence is confirmed
    v = decide_outcome(replace(BASE, polarity="expects-violation", check_resolution="false"))
    assert v.corroboration_rule == "check-confirms-silence"


def test_declined_finding_ids_when_the_row_did_not_resolve_from_the_citation() -> None:
    d = decide_outcome(
        replace(BASE, witness="matched", cited_finding=CitedFinding("F-009", "unmapped", "low"))
    )
    assert d.state == "caught" and d.resolved_from is None and d.declined_finding_ids == ("F-009",)


def test_census_every_state_rule_and_corroboration_is_reached() -> None:
    cases = [replace(BASE, **c) for _, _, _, c, _ in STATE_CASES] + [
        replace(BASE, **c) for _, _, _, c in CORROBORATION_CASES
    ]
    cases += [replace(BASE, witness="manifested-unclaimed", waiver=w) for w in ("applied-condition-met", "applied-condition-unmet")]
    decisions = [decide_outcome(c) for c in cases]
    assert {d.state for d in decisions} == set(OUTCOME_STATES)
    assert {d.rule for d in decisions} == {r.id for r in OUTCOME_RULES}
    assert {d.corroboration_rule for d in decisions} == {r.id for r in CORROBORATION_RULES}
    assert {d.waiver_rule for d in decisions} - {None} == {w.id for w in WAIVER_RULES}
