"""The generation of one system's mutants: candidates → static filter → per-line → sample → records.

Pure: it takes the system's Python sources (``system/<file>`` → text) and returns every candidate with
its fate. A kept mutant is a :class:`GeneratedMutant`, written in the suite's mutation shape
(``mutations/*.json``: ``probeId``, ``operator``, ``target``, ``description``, ``find``, ``replace``)
plus a ``generated`` object that marks it machine-made and carries what the report needs (its id,
``mutatorName``, location, the replaced and replacing code, the original file's digest).

Ids are content-addressed (``m-`` + 12 hex of the target, position, operator and replacement), so the
same mutant keeps its id across runs while the source around it is unchanged. ``probeId`` is the id a
derived probe would take, ``P-`` followed by 1001 + the candidate's index in source order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalquality_core.canonical import digest_bytes
from evalquality_core.mutants.catalogue import MUTATOR_NAMES, OPERATOR_NAMES
from evalquality_core.mutants.edits import apply_edit, edit_between
from evalquality_core.mutants.filter import Rejection, StaticFilter, compile_problem
from evalquality_core.mutants.operators import candidate_list
from evalquality_core.mutants.select import per_line, sample

#: The marker a generated mutation carries (``generated.by``).
GENERATOR = "eval-quality mutants generate"


@dataclass(frozen=True)
class GeneratedMutant:
    """One generated mutation (module docstring)."""

    mutant_id: str
    probe_id: str
    operator: str
    target: str
    find: str
    replace: str
    start: tuple[int, int]
    end: tuple[int, int]
    original: str
    replacement: str
    source_digest: str
    source_text: str = field(repr=False, compare=False)

    @property
    def mutated_text(self) -> str:
        """The whole mutated file, rebuilt from the original on demand: a generation keeps one shared
        original per file, never a mutated copy per mutant (a 9.8k-line system held 1.4 GB; issue 34)."""
        return self.source_text.replace(self.find, self.replace, 1)

    @property
    def mutator_name(self) -> str:
        """The report's ``mutatorName`` of this mutant's operator."""
        return MUTATOR_NAMES[self.operator]

    @property
    def lines(self) -> range:
        """The 1-based source lines the mutated node spans."""
        return range(self.start[0], self.end[0] + 1)

    def description(self) -> str:
        """One line: what was replaced by what, where."""
        return f"{self.mutator_name}: `{self.original}` -> `{self.replacement}` at {self.target}:{self.start[0]}:{self.start[1] + 1}"

    def to_mutation(self) -> dict[str, Any]:
        """The mutation-file JSON (the suite's shape plus ``generated``)."""
        return {
            "probeId": self.probe_id,
            "operator": self.operator,
            "target": self.target,
            "description": self.description(),
            "find": self.find,
            "replace": self.replace,
            "generated": {
                "by": GENERATOR,
                "mutantId": self.mutant_id,
                "mutatorName": self.mutator_name,
                "location": location(self.start, self.end),
                "original": self.original,
                "replacement": self.replacement,
                "sourceDigest": self.source_digest,
            },
        }


def location(start: tuple[int, int], end: tuple[int, int]) -> dict[str, Any]:
    """A report location: 1-based lines and columns (libcst columns are 0-based)."""
    return {"start": {"line": start[0], "column": start[1] + 1}, "end": {"line": end[0], "column": end[1] + 1}}


@dataclass(frozen=True)
class RejectedMutant:
    """A candidate the static filter refused: never staged, reported with its reason."""

    mutant_id: str
    operator: str
    target: str
    start: tuple[int, int]
    end: tuple[int, int]
    original: str
    replacement: str
    rejection: Rejection


@dataclass(frozen=True)
class Progress:
    """Where a generation is: file ``file_number`` of ``files`` (``target``), ``done`` of its
    ``file_candidates`` candidates examined (None: the file is being parsed); ``examined`` candidates
    and ``valid`` mutants in all."""

    target: str
    file_number: int
    files: int
    done: int
    file_candidates: int | None
    examined: int
    valid: int


@dataclass(frozen=True)
class Cut:
    """Why and where a generation stopped before its last candidate: ``reason`` (one line),
    ``examined`` candidates of the ``counted`` ones the files parsed so far hold, the last candidate
    examined (``target``, line; None: none), and the files never reached."""

    reason: str
    examined: int
    counted: int
    last: tuple[str, int] | None
    not_reached: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        """The manifest's ``cut`` member."""
        return {"reason": self.reason, "examined": self.examined, "counted": self.counted,
                "last": None if self.last is None else {"target": self.last[0], "line": self.last[1]},
                "notReached": list(self.not_reached)}

    def line(self, reason: str | None = None) -> str:
        """One line: what was cut (``reason`` in place of :attr:`reason`, e.g. the caller's flag)."""
        where = f"; the last one examined is at {self.last[0]}:{self.last[1]}" if self.last else ""
        files = f"; not reached: {', '.join(self.not_reached)}" if self.not_reached else ""
        return f"{reason or self.reason}: {self.examined} of {self.counted} candidates examined{where}{files}"


@dataclass(frozen=True)
class Generation:
    """Every candidate's fate: kept (and selected), rejected, or left out by ``--per-line``/``--sample``."""

    kept: tuple[GeneratedMutant, ...]
    rejected: tuple[RejectedMutant, ...]
    valid_count: int
    unselected: tuple[str, ...]
    candidates_per_operator: Mapping[str, int]
    lines_of_code: Mapping[str, int]
    settings: Mapping[str, Any]
    cut: Cut | None = None

    def manifest(self) -> dict[str, Any]:
        """The generation's summary (written as ``mutants/generated.json``; ``cut`` only when it was)."""
        return ({"cut": self.cut.as_json()} if self.cut is not None else {}) | {
            "by": GENERATOR,
            "settings": dict(self.settings),
            "linesOfCode": dict(self.lines_of_code),
            "candidatesPerOperator": dict(self.candidates_per_operator),
            "valid": self.valid_count,
            "selected": [m.mutant_id for m in self.kept],
            "rejected": [
                {"mutantId": r.mutant_id, "status": r.rejection.status, "reason": r.rejection.reason,
                 "operator": r.operator, "target": r.target, "location": location(r.start, r.end),
                 "original": r.original, "replacement": r.replacement}
                for r in self.rejected
            ],
        }


def mutant_id_of(target: str, start: tuple[int, int], operator: str, replacement: str) -> str:
    """The content-addressed id of a candidate (module docstring)."""
    text = f"{target}\0{start[0]}:{start[1]}\0{operator}\0{replacement}"
    return "m-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


class SourceProblem(ValueError):
    """A system source that cannot be parsed (the original, before any mutation)."""


def generate(
    sources: Mapping[str, str],
    *,
    operators: Sequence[str] = OPERATOR_NAMES,
    sample_size: int | None = None,
    seed: int = 0,
    per_line_limit: int | None = None,
    max_candidates: int | None = None,
    stop: Callable[[], str | None] | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Generation:
    """Every mutant of ``sources`` (``system/<file>.py`` → text), filtered and selected (module docstring).

    ``max_candidates`` and ``stop`` bound it: before each file and each candidate, generation ends when
    ``max_candidates`` have been examined or ``stop()`` returns a reason (the caller's clock: this
    function stays pure); what was found is then selected as usual and :attr:`Generation.cut` says what
    was cut. ``progress`` is called before and after each file is parsed and after each candidate."""
    static = StaticFilter()
    valid: list[GeneratedMutant] = []
    rejected: list[RejectedMutant] = []
    per_operator = {name: 0 for name in operators}
    lines: dict[str, int] = {}
    index = 0
    counted = 0
    last: tuple[str, int] | None = None
    cut: Cut | None = None
    targets = sorted(sources)

    def stopped() -> str | None:
        if max_candidates is not None and index >= max_candidates:
            return f"the limit of {max_candidates} candidates"
        return stop() if stop is not None else None

    for number, target in enumerate(targets, start=1):
        reason = stopped() if number > 1 else (stop() if stop is not None else None)
        if reason is not None:
            cut = Cut(reason, index, counted, last, tuple(targets[number - 1:]))
            break
        text = sources[target]
        problem = compile_problem(text, target)
        if problem is not None:
            raise SourceProblem(f"{target}: the original {problem}")
        lines[target] = sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))
        source_digest = digest_bytes(text.encode("utf-8"))
        if progress is not None:
            progress(Progress(target, number, len(targets), 0, None, index, len(valid)))
        found = candidate_list(text, operators)
        counted += len(found)
        if progress is not None:
            progress(Progress(target, number, len(targets), 0, len(found), index, len(valid)))
        for done, (candidate, renderer) in enumerate(found):
            reason = stopped()
            if reason is not None:
                cut = Cut(reason, index, counted, last, tuple(targets[number:]))
                break
            index += 1
            last = (target, candidate.start[0])
            per_operator[candidate.operator] += 1
            mutant_id = mutant_id_of(target, candidate.start, candidate.operator, candidate.mutated)
            spliced = renderer.splice()
            if spliced is None:
                mutated, same_before, same_after = renderer(), 0, 0
            else:
                begin, end, code = spliced
                mutated = text if code == text[begin:end] else text[:begin] + code + text[end:]
                same_before, same_after = begin, len(text) - end
            edit = None if mutated == text else edit_between(text, mutated, same_before=same_before, same_after=same_after)
            rejection = static.check(mutant_id, target, text, mutated, edit)
            del mutated  # one mutated file at a time: never kept
            if rejection is not None or edit is None:
                assert rejection is not None
                rejected.append(RejectedMutant(mutant_id, candidate.operator, target, candidate.start, candidate.end,
                                               candidate.original, candidate.mutated, rejection))
            else:
                valid.append(GeneratedMutant(
                    mutant_id=mutant_id, probe_id=f"P-{1000 + index}", operator=candidate.operator, target=target,
                    find=edit.find, replace=edit.replace, start=candidate.start, end=candidate.end,
                    original=candidate.original, replacement=candidate.mutated, source_digest=source_digest,
                    source_text=text,
                ))
            if progress is not None:
                progress(Progress(target, number, len(targets), done + 1, len(found), index, len(valid)))
        del found  # the file's tree and candidates go before the next file is parsed
        if cut is not None:
            break
    chosen = valid
    if per_line_limit is not None:
        chosen = per_line(chosen, lambda m: (m.target, m.start[0]), lambda m: m.mutant_id, per_line_limit, seed)
    chosen = sample(chosen, lambda m: m.mutant_id, sample_size, seed)
    chosen_ids = {m.mutant_id for m in chosen}
    return Generation(
        kept=tuple(chosen),
        rejected=tuple(rejected),
        valid_count=len(valid),
        unselected=tuple(m.mutant_id for m in valid if m.mutant_id not in chosen_ids),
        candidates_per_operator=per_operator,
        lines_of_code=lines,
        settings={"operators": list(operators), "sample": sample_size, "seed": seed, "perLine": per_line_limit},
        cut=cut,
    )


# ------------------------------------------------------------------ a generation as JSON (its cache)


def generation_record(generation: Generation) -> dict[str, Any]:
    """The generation as plain JSON, every field but the mutated texts (``generation_from_record``
    rebuilds them from the sources: a record is a fraction of their size)."""
    return {
        "kept": [
            {"mutantId": m.mutant_id, "probeId": m.probe_id, "operator": m.operator, "target": m.target, "find": m.find,
             "replace": m.replace, "start": list(m.start), "end": list(m.end), "original": m.original,
             "replacement": m.replacement, "sourceDigest": m.source_digest}
            for m in generation.kept
        ],
        "rejected": [
            {"mutantId": r.mutant_id, "operator": r.operator, "target": r.target, "start": list(r.start),
             "end": list(r.end), "original": r.original, "replacement": r.replacement,
             "status": r.rejection.status, "reason": r.rejection.reason}
            for r in generation.rejected
        ],
        "valid": generation.valid_count,
        "unselected": list(generation.unselected),
        "candidatesPerOperator": dict(generation.candidates_per_operator),
        "linesOfCode": dict(generation.lines_of_code),
        "settings": dict(generation.settings),
    }


def _position(value: Any) -> tuple[int, int]:
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        raise ValueError(f"not a position: {value!r}")
    return (value[0], value[1])


def generation_from_record(record: Mapping[str, Any], sources: Mapping[str, str]) -> Generation:
    """The :class:`Generation` a :func:`generation_record` describes, for the same ``sources``.

    Every kept mutant is checked against the sources before it is trusted: its original file's digest,
    its content-addressed id, and its edit applying exactly once (the mutated text is rebuilt from it).
    Anything that does not fit raises ``ValueError`` (the caller regenerates)."""
    try:
        kept = []
        for m in record["kept"]:
            text = sources[m["target"]]
            start, end = _position(m["start"]), _position(m["end"])
            if m["sourceDigest"] != digest_bytes(text.encode("utf-8")):
                raise ValueError(f"{m['target']}: the source changed since the generation")
            if m["mutantId"] != mutant_id_of(m["target"], start, m["operator"], m["replacement"]):
                raise ValueError(f"{m['mutantId']}: the id does not match the mutant")
            kept.append(GeneratedMutant(
                mutant_id=m["mutantId"], probe_id=m["probeId"], operator=m["operator"], target=m["target"],
                find=m["find"], replace=m["replace"], start=start, end=end, original=m["original"],
                replacement=m["replacement"], source_digest=m["sourceDigest"], source_text=text,
            ))
            apply_edit(text, m["find"], m["replace"])  # raises unless ``find`` occurs exactly once
        rejected = tuple(
            RejectedMutant(r["mutantId"], r["operator"], r["target"], _position(r["start"]), _position(r["end"]),
                           r["original"], r["replacement"], Rejection(r["status"], r["reason"]))
            for r in record["rejected"]
        )
        return Generation(
            kept=tuple(kept), rejected=rejected, valid_count=int(record["valid"]),
            unselected=tuple(str(i) for i in record["unselected"]),
            candidates_per_operator=dict(record["candidatesPerOperator"]), lines_of_code=dict(record["linesOfCode"]),
            settings=dict(record["settings"]),
        )
    except (KeyError, TypeError, AttributeError) as problem:
        raise ValueError(f"not a generation record: {type(problem).__name__}: {problem}") from None
