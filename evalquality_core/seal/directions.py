"""The direction prose generator (artifacts.md §4.3): one sentence group per oracle.

An evaluator may see *what* each oracle claims but never the planted answer, so the brief carries
prose rendered from the oracle's ``direction`` only (never its ``check``): the relation claim over
the rendered evidence references, the polarity, and the author's scope and negative domain. Steps
are named by their operation and binding clause, never by step id; when two steps of one operation
would read the same, the clause escalates generic → kind → literal until they differ, or the
direction is ``irreducible-step-reference``. Every sort and every length is UTF-16 based.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import rfc8785

from evalquality_core.compile.plan_index import Json, PlanIndex, bound_entries
from evalquality_core.compile.pointers import EvidenceTarget, parse_interaction_pointer
from evalquality_core.compile.strings import es_trim, join_and, utf16_key, utf16_length, utf16_sorted
from evalquality_core.faults import StructuralFailure

#: Escalation levels of a step reference's binding clause, in order.
LEVELS: tuple[str, ...] = ("generic", "kind", "literal")
#: Capture-expansion budget in UTF-16 code units, and the one retry's larger budget.
DEFAULT_BUDGET = 100_000
RETRY_BUDGET = 4_000_000

#: Relation claim per relation; ``{E}`` is the rendered evidence references.
RELATION_CLAIMS: dict[str, str] = {
    "for-all": "Every element reachable through {E} is asserted to meet the declared condition.",
    "for-any": "At least one element reachable through {E} is asserted to meet the declared condition.",
    "all": "{E} is asserted to satisfy every declared condition together.",
    "any": "{E} is asserted to satisfy at least one declared condition.",
    "not": "{E} is asserted to fail the declared condition, not to satisfy it.",
    "existence": "{E} is asserted to be present.",
    "absence": "{E} is asserted to be absent.",
    "equality": "{E} is asserted to be equal.",
    "deep-equality": "{E} is asserted to be deeply, structurally equal.",
    "containment": "{E} is asserted to contain the declared member.",
}
POLARITY_SENTENCES: dict[str, str] = {
    "expects-hold": "The declared polarity expects this relation to hold.",
    "expects-violation": "The declared polarity expects this relation to be a violation.",
}
_ARRAY_INDEX_KEY = re.compile(r"^(?:0|[1-9][0-9]*)$")
_FIRST_ASCII_LETTER = re.compile(r"[a-zA-Z]")


class SealRefusal(ValueError):
    """A contract that compiled but cannot be sealed (the reference's precondition TypeError)."""


@dataclass
class Budget:
    """Characters left for capture expansions, and whether one was suppressed for lack of them."""

    remaining: int
    suppressed: bool = False


def ensure_sentence(text: str) -> str:
    """Trim, upper-case the first ASCII letter, and end with ``.`` unless already ``.``/``!``/``?``."""
    text = es_trim(text)
    match = _FIRST_ASCII_LETTER.search(text)
    if match is not None:
        text = text[: match.start()] + match.group(0).upper() + text[match.end() :]
    if not text.endswith((".", "!", "?")):
        text += "."
    return text


def literal_text(value: Any) -> str:
    """``LIT(v)``: compact JSON as JCS writes values, with JavaScript's own member order
    (array-index keys first, numerically, then the rest in UTF-16 order) at every depth."""
    if isinstance(value, dict):
        indices = sorted(
            (k for k in value if _ARRAY_INDEX_KEY.match(k) and int(k) <= 4294967294), key=int
        )
        rest = utf16_sorted(k for k in value if k not in set(indices))
        members = [f"{json.dumps(k, ensure_ascii=False)}:{literal_text(value[k])}" for k in [*indices, *rest]]
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(literal_text(item) for item in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return rfc8785.dumps(value).decode("utf-8")


def local_phrase(target: EvidenceTarget, *, tool_call: bool = False) -> str:
    """``LOCAL(t)``: what the pointer reads, relative to its step.

    A tool call (contract 6+; no reference brief exercises one, so this wording is ours) reads as
    one: "the title argument you sent", "the structured result you obtained", "whether it reported
    a tool error" (its ``response-status``, 1 or 0).
    """
    field = ".".join(token for token in target.tail if token != "")
    channel = target.channel
    if channel == "response-status":
        return "whether it reported a tool error" if tool_call else "its transport status"
    if channel == "exit-code":
        return "its exit code"
    if channel == "call-inputs" and target.input_channel == "arguments":
        return f"the {field} argument you sent" if field else "the arguments you sent"
    if channel == "call-inputs":
        return f"the {target.input_channel} {field} value you sent" if field else f"the {target.input_channel} you sent"
    if channel == "response-body" and tool_call and not field:
        return "the structured result you obtained"
    if channel == "response-body":
        return f"its {field} field" if field else "the response body you obtained"
    if channel == "response-headers":
        return f"its {field} header" if field else "the response headers you obtained"
    if channel == "stdout":
        return f"the {field} field of its standard output" if field else "the standard output you obtained"
    if channel == "stderr":
        return f"the {field} field of its standard error" if field else "the standard error you obtained"
    return f"the {field} field of the {target.artifact_id} it wrote" if field else f"the {target.artifact_id} it wrote"


def entry_name(channel: str, key: str) -> str:
    """How a bound parameter is named: "{channel} {key}" ("body title"); a tool call's "{key} argument"."""
    return f"{key} argument" if channel == "arguments" else f"{channel} {key}"


def _entry_phrase(channel: str, key: str, value: Json, level: str) -> str:
    name = entry_name(channel, key)
    if value.get("matcher") == "type-violating":
        return f"a malformed {name} value"
    if "matcher" in value or level == "generic":
        return f"the supplied {name}"
    if "literal" in value:
        return f"the {name} {literal_text(value['literal'])}" if level == "literal" else f"the stated {name}"
    if "principal" in value:
        return f"the {name} of the {value['principal']} account"
    return f"the {name} you obtained earlier"


#: The operation noun's last word by shape family (a tool call is "the search notes tool": our wording).
_NOUN_SUFFIX = {"command": " command", "tool-call": " tool", "http": " endpoint"}


class DirectionRenderer:
    """Renders directions against one contract's plan and operations."""

    def __init__(self, index: PlanIndex) -> None:
        self.index = index

    def _operation(self, step_id: str) -> tuple[Json, Any]:
        step = self.index.step(step_id)
        if step is None:
            raise SealRefusal(f'evidence target names step "{step_id}", which the interaction plan does not declare')
        operation = self.index.operation_for_step(step)
        if operation is None:
            raise SealRefusal(f'step "{step_id}" names operation "{step.get("operationId")}", which no interface declares')
        return step, operation

    def local(self, target: EvidenceTarget) -> str:
        """``LOCAL(t)`` worded for the kind of operation the target's step calls."""
        operation = self.index.operation_of_step(target.step_id)
        return local_phrase(target, tool_call=operation is not None and operation.is_tool_call)

    def _expandable(self, value: Json, path: frozenset[str], budget: Budget) -> EvidenceTarget | None:
        pointer = value.get("captured")
        if not isinstance(pointer, str):
            return None
        target = parse_interaction_pointer(pointer)
        if target is None or target.step_id in path or self.index.operation_of_step(target.step_id) is None:
            return None
        if budget.remaining <= 0:
            budget.suppressed = True
            return None
        return target

    def step_reference(self, step_id: str, level: str, path: frozenset[str], budget: Budget) -> str:
        """``STEPREF``: the operation noun plus the binding clause at ``level``."""
        step, operation = self._operation(step_id)
        noun = "the " + operation.operation_id.replace("-", " ") + _NOUN_SUFFIX[operation.family]
        if operation.operation_id in self.index.shared_operation_ids:
            # 5.0.0: only an operation id several interfaces declare needs its interface named.
            noun += f' of interface "{operation.interface_id}"'

        entries = bound_entries(step)
        malformed = [e for e in entries if isinstance(e[2], dict) and e[2].get("matcher") == "type-violating"]
        if malformed:
            entries = malformed
        if not entries:
            return noun
        phrases = self._phrases(entries, level, path, budget)
        return f"{noun} (with {join_and(phrases)})"

    def _phrases(self, entries: list[tuple[str, str, Json]], level: str, path: frozenset[str], budget: Budget) -> list[str]:
        if level != "literal":
            return [_entry_phrase(channel, key, value, level) for channel, key, value in entries]
        items: list[tuple[str, Any]] = []
        groups: dict[str, list[tuple[str, str, EvidenceTarget]]] = {}
        for channel, key, value in entries:
            target = self._expandable(value, path, budget) if isinstance(value, dict) else None
            if target is None:
                items.append(("entry", (channel, key, value)))
            elif target.step_id in groups:
                groups[target.step_id].append((channel, key, target))
            else:
                groups[target.step_id] = [(channel, key, target)]
                items.append(("group", target.step_id))
        phrases = []
        for kind, item in items:
            if kind == "entry":
                phrases.append(_entry_phrase(*item, level))
                continue
            members = groups[item]
            names = join_and([entry_name(channel, key) for channel, key, _ in members])
            if budget.remaining <= 0:
                budget.suppressed = True
                phrases.append(f"the {names} you obtained earlier")
                continue
            inner = self.step_reference(item, level, path | {item}, budget)
            budget.remaining -= utf16_length(inner)
            reads = join_and([self.local(target) for _, _, target in members])
            phrases.append(f"the {names} you obtained as {reads} from {inner}")
        return phrases

    def laddered_reference(self, step_id: str, siblings: list[str]) -> str:
        """The step reference at the first level where every sibling's reference differs."""
        for size in (DEFAULT_BUDGET, RETRY_BUDGET):
            suppressed = False
            for level in LEVELS:
                rendered = []
                for sibling in siblings:
                    budget = Budget(size)
                    rendered.append(self.step_reference(sibling, level, frozenset({sibling}), budget))
                    suppressed = suppressed or budget.suppressed
                if len(set(rendered)) == len(rendered):
                    return self.step_reference(step_id, level, frozenset({step_id}), Budget(size))
            if not suppressed:
                break
        operation_id = self._operation(step_id)[1].operation_id
        raise StructuralFailure(
            "irreducible-step-reference",
            f"EvalContract.interactionPlan[operationId={operation_id}]",
            f'steps of operation "{operation_id}" read alike at every escalation level, so the brief cannot tell them apart',
        )

    def evidence_references(self, targets: list[str]) -> str:
        """``E``: the direction's evidence targets as one English phrase."""
        parsed: list[EvidenceTarget] = []
        for pointer in dict.fromkeys(targets):
            target = parse_interaction_pointer(pointer)
            if target is None:
                raise SealRefusal(f'evidence target "{pointer}" is not an interaction pointer')
            self._operation(target.step_id)
            parsed.append(target)
        by_step: dict[str, list[EvidenceTarget]] = {}
        for target in parsed:
            by_step.setdefault(target.step_id, []).append(target)
        operation_of = {
            step_id: (self._operation(step_id)[1].interface_id, self._operation(step_id)[1].operation_id)
            for step_id in by_step
        }
        references: dict[str, str] = {}

        def reference(step_id: str) -> str:
            if step_id not in references:
                siblings = [s for s in by_step if operation_of[s] == operation_of[step_id]]
                references[step_id] = self.laddered_reference(step_id, siblings)
            return references[step_id]

        def full(target: EvidenceTarget) -> str:
            joiner = " to " if target.channel == "call-inputs" else " from "
            return self.local(target) + joiner + reference(target.step_id)

        ordered = utf16_sorted(by_step)
        singles = [s for s in ordered if len(by_step[s]) == 1]
        chosen: dict[str, str] = {}
        for successor in singles:
            anchor = self.index.step(successor).get("after")  # type: ignore[union-attr]
            if anchor is not None and anchor != successor and anchor in singles:
                if anchor not in chosen or utf16_key(successor) < utf16_key(chosen[anchor]):
                    chosen[anchor] = successor
        pairs: list[tuple[str, str]] = []
        paired: set[str] = set()
        for root in singles:
            if root in chosen.values():
                continue
            chain = [root]
            while chain[-1] in chosen and chosen[chain[-1]] not in chain:
                chain.append(chosen[chain[-1]])
            for k in range(0, len(chain) - 1, 2):
                pairs.append((chain[k], chain[k + 1]))
                paired.update(chain[k : k + 2])
        phrases = [self._pair_phrase(a, b, by_step, reference, full) for a, b in pairs]
        for step_id in ordered:
            if step_id in paired:
                continue
            group = by_step[step_id]
            if len(group) == 1:
                phrases.append(full(group[0]))
            else:
                locals_ = utf16_sorted(self.local(target) for target in group)
                phrases.append(f"{reference(step_id)}: {join_and(locals_)}")
        return join_and(utf16_sorted(phrases))

    @staticmethod
    def _pair_phrase(a: str, b: str, by_step: dict[str, list[EvidenceTarget]], reference: Any, full: Any) -> str:
        def key(step_id: str) -> tuple[int, bytes, bytes]:
            target = by_step[step_id][0]
            signature = json.dumps(
                [target.channel, target.input_channel, target.artifact_id, list(target.tail)],
                separators=(",", ":"),
                ensure_ascii=False,
            )
            return (0 if target.channel == "call-inputs" else 1, utf16_key(signature), utf16_key(reference(step_id)))

        first, second = (a, b) if key(a) <= key(b) else (b, a)
        return f"{full(by_step[first][0])}, compared with {full(by_step[second][0])}"

    def direction_text(self, direction: Json) -> str:
        """The whole sentence group for one direction."""
        references = self.evidence_references(list(direction.get("evidenceTargets") or []))
        relation = str(direction.get("relation"))
        template = RELATION_CLAIMS.get(relation, f'{{E}} is asserted to satisfy the declared "{relation}" condition.')
        parts = [template.replace("{E}", references), POLARITY_SENTENCES[str(direction.get("polarity"))]]
        scope = direction.get("scope")
        if isinstance(scope, str) and es_trim(scope):
            parts.append(scope)
        negative = direction.get("negativeDomain")
        if isinstance(negative, str) and es_trim(negative):
            parts.append(re.sub(r"[.!?]+\Z", "", es_trim(negative)) + " is treated as a defect.")
        return " ".join(ensure_sentence(part) for part in parts)


def render_direction_text(direction: Json, index: PlanIndex) -> str:
    """The prose for one oracle's direction (artifacts.md §4.3)."""
    return DirectionRenderer(index).direction_text(direction)
