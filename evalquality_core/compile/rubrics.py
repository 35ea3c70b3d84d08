"""Rubrics (artifacts.md §3.1 #23–#26; AD-22).

A rubric scores what an evaluator observed, never how it reasoned: #24 refuses wording that asks
for reasoning prose. Identifiers are settled first (#23) because every later path names a rubric
and a criterion by id. "Blank" is the ECMAScript reading (zero-width characters removed, then
``trim``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from evalquality_core.compile.plan_index import Json, PlanIndex
from evalquality_core.compile.reachability import pointer_reason
from evalquality_core.compile.strings import is_blank
from evalquality_core.faults import StructuralFailure

_SEP = r"[-\u2010\u2011\s]+"
#: Reasoning-prose wording (§3.1 #24), case-insensitive and word-bounded.
REASONING_PROSE_RE = re.compile(
    rf"\b(?:chains?{_SEP}of{_SEP}thoughts?|trains?{_SEP}of{_SEP}thoughts?|thought{_SEP}process(?:es|ing)?"
    rf"|thinking{_SEP}process(?:es)?|(?:internal|inner){_SEP}monologues?|self{_SEP}explanations?"
    rf"|reasonings?|rationales?)\b",
    re.IGNORECASE,
)


def _rubric_path(rubric: Json) -> str:
    return f"EvalContract.rubrics[id={rubric.get('id')}]"


def check_rubric_identifiers(contract: Json) -> None:
    """#23 ``rubric-unanchored``: a rubric id repeated (all rubrics first), then a criterion id
    repeated within one rubric. Paths use indices, since an id path would address two things."""
    rubrics = contract.get("rubrics") or []
    seen: set[str] = set()
    for k, rubric in enumerate(rubrics):
        if rubric.get("id") in seen:
            raise StructuralFailure(
                "rubric-unanchored", f"EvalContract.rubrics[{k}].id", f'repeats rubric id "{rubric.get("id")}" (AD-22)'
            )
        seen.add(rubric.get("id"))
    for rubric in rubrics:
        criteria: set[str] = set()
        for k, criterion in enumerate(rubric.get("criteria") or []):
            if criterion.get("id") in criteria:
                raise StructuralFailure(
                    "rubric-unanchored",
                    f"{_rubric_path(rubric)}.criteria[{k}].id",
                    f'repeats criterion id "{criterion.get("id")}" inside one rubric (AD-22)',
                )
            criteria.add(criterion.get("id"))


def _scored_texts(rubric: Json) -> Iterator[tuple[str, str]]:
    base = _rubric_path(rubric)
    for criterion in rubric.get("criteria") or []:
        yield f"{base}.criteria[id={criterion.get('id')}].text", criterion.get("text") or ""
    for k, level in enumerate(rubric.get("scaleLevels") or []):
        yield f"{base}.scaleLevels[{k}].anchor", level.get("anchor") or ""
    for k, penalty in enumerate(rubric.get("failureModePenalties") or []):
        yield f"{base}.failureModePenalties[{k}].name", penalty.get("name") or ""
        yield f"{base}.failureModePenalties[{k}].description", penalty.get("description") or ""


def check_rubric_reasoning_prose(contract: Json) -> None:
    """#24 ``rubric-scores-reasoning-prose``: criterion text, scale anchors, penalty names or
    descriptions ask for reasoning prose (chain of thought, rationale, inner monologue, …)."""
    for rubric in contract.get("rubrics") or []:
        for path, text in _scored_texts(rubric):
            match = REASONING_PROSE_RE.search(text)
            if match is not None:
                raise StructuralFailure(
                    "rubric-scores-reasoning-prose", path, f'scores reasoning prose ("{match.group(0)}"), not observed evidence'
                )


def check_rubric_anchoring(contract: Json) -> None:
    """#25 ``rubric-unanchored``, in this order: no scale levels; a repeated level; a blank anchor;
    no ``maxLength``; no failure-mode penalties; a blank penalty name; a blank criterion text."""
    for rubric in contract.get("rubrics") or []:
        base = _rubric_path(rubric)
        levels = rubric.get("scaleLevels")
        if not levels:
            raise StructuralFailure("rubric-unanchored", f"{base}.scaleLevels", "the rubric declares no scale levels")
        seen: set[int] = set()
        for k, level in enumerate(levels):
            if level.get("level") in seen:
                raise StructuralFailure(
                    "rubric-unanchored", f"{base}.scaleLevels[{k}].level", f"level {level.get('level')} is declared twice"
                )
            seen.add(level.get("level"))
        for k, level in enumerate(levels):
            if is_blank(level.get("anchor") or ""):
                raise StructuralFailure("rubric-unanchored", f"{base}.scaleLevels[{k}].anchor", "the scale level's anchor is blank")
        if rubric.get("maxLength") is None:
            raise StructuralFailure("rubric-unanchored", f"{base}.maxLength", "the rubric declares no maxLength")
        penalties = rubric.get("failureModePenalties")
        if not penalties:
            raise StructuralFailure(
                "rubric-unanchored", f"{base}.failureModePenalties", "the rubric declares no failure-mode penalties"
            )
        for k, penalty in enumerate(penalties):
            if is_blank(penalty.get("name") or ""):
                raise StructuralFailure("rubric-unanchored", f"{base}.failureModePenalties[{k}].name", "the penalty name is blank")
        for criterion in rubric.get("criteria") or []:
            if is_blank(criterion.get("text") or ""):
                raise StructuralFailure(
                    "rubric-unanchored", f"{base}.criteria[id={criterion.get('id')}].text", "the criterion text is blank"
                )


def check_rubric_evidence_reachability(contract: Json) -> None:
    """#26 ``rubric-evidence-unreachable``: a criterion's evidence pointer fails the #5 test."""
    index = PlanIndex(contract)
    for rubric in contract.get("rubrics") or []:
        for criterion in rubric.get("criteria") or []:
            pointer = criterion.get("evidence") or ""
            reason = pointer_reason(pointer, index)
            if reason is not None:
                raise StructuralFailure(
                    "rubric-evidence-unreachable",
                    f"{_rubric_path(rubric)}.criteria[id={criterion.get('id')}].evidence",
                    f'evidence pointer "{pointer}" {reason}',
                )
