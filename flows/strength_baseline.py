"""The contract-strength gate: compare a run with ``corpus/expected-strength.json`` (harness.md A.5, A.11).

Exit 2 when a suite could not run, a written artifact failed its schema, the baseline is missing or
unreadable, or any *environment* fact moved (a suite or probe the baseline does not record or that
this run did not produce, a pre-flight outcome string, a planned leg count; a null count against a
recorded integer counts, the suite-wide pre-flight outcome). Else exit 1 when any probe's verdict or
any class's floor decision moved (a floor decision moving from ``meets`` to ``does-not-meet`` is the
contract getting weaker against the floor its suite declares; an aggregate refused where one was
recorded moves every decision to ``refused``). Else 0. Movement in either direction fails: "a
baseline nobody has to update is a baseline nobody reads".

The baseline is a projection of the per-suite ``contract-strength.json`` documents, in the TEA shape
of harness.md A.11 minus ``comparableResult`` (the evidence files hold it). It is written as indented
JSON, not canonical JSON, because people review its diffs. A run over a subset of suites (``--suite``)
compares, and ``--update-baseline`` rewrites, only those suites.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalquality_core.artifacts.base import (
    ArtifactModel,
    BehaviorId,
    Digest,
    NonNegativeInt,
    read_artifact,
    to_wire,
)
from evalquality_core.artifacts.contract_strength import (
    CONTRACT_STRENGTH_FILE,
    VECTOR_CLASSES,
    AggregateClasses,
    SuiteStrength,
)
from evalquality_core.artifacts.evidence import StrengthVector
from evalquality_core.canonical import scan_json
from evalquality_core.faults import RuntimeFault
from evalquality_core.printable import printable
from evalquality_core.registries import ProbeClass, Verdict
from evalquality_core.suite.load import SuiteError, read_suite_bytes
from flows.lifecycle import FlowArgumentParser, crash_exit
from tasks.output import write_atomically
from tasks.strength_document import read_suite_strength

#: The baseline's file name under the corpus root (harness.md A.5).
BASELINE_FILE = "expected-strength.json"

#: Exit codes of the gate (harness.md A.0 exit classes).
EXIT_MATCHED = 0
EXIT_MEASURED_MOVE = 1
EXIT_ENVIRONMENT = 2

MoveKind = Literal["environment", "measured"]


class BaselineProbe(ArtifactModel):
    """One probe's recorded result (harness.md A.11, without ``comparableResult``)."""

    probe_class: ProbeClass
    expected_clean: bool
    behavior_id: BehaviorId | None
    preflight: str
    preflight_legs: NonNegativeInt | None
    verdict: Verdict | None
    exit_code: NonNegativeInt
    strict_promotable: bool | None
    basis: list[str]
    qualification: list[str] | None
    strength: StrengthVector | None


class BaselineSuite(ArtifactModel):
    """One suite's recorded result (harness.md A.11)."""

    contract_id: str
    corpus_digest: Digest
    probe_count: NonNegativeInt
    strength: StrengthVector
    unsatisfied_coverage_rules: list[str]
    probes: dict[str, BaselineProbe]
    #: The suite-wide fields (document version 2). The reference's A.11 baseline records none of them,
    #: so each is optional: a field a baseline does not record (null) is not compared.
    preflight: str | None = None
    floors: dict[str, float] | None = None
    aggregate: AggregateClasses | None = None
    #: Per class ``<decision> (<basis>)``, e.g. ``meets (rate-meets-floor)``; ``refused`` for every class
    #: when the aggregate was refused.
    floor_decisions: dict[str, str] | None = None


@dataclass(frozen=True)
class Move:
    """One difference between the run and the baseline; ``kind`` decides its exit class."""

    kind: MoveKind
    suite: str
    probe: str | None
    what: str
    recorded: Any
    now: Any

    def describe(self) -> str:
        """One line naming the suite, the probe and both values, e.g. for the run summary."""
        where = f"{self.suite} {self.probe}" if self.probe else self.suite
        return f"{where}: {self.what} moved {_show(self.recorded)} -> {_show(self.now)}"


@dataclass(frozen=True)
class GateResult:
    """The gate's decision: exit code, every move, and every problem that stopped measurement."""

    exit_code: int
    moves: list[Move] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: What the gate did besides comparing (``baseline rewritten: <file>``), said first.
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Human lines for the summary: what it did, problems, then every move, or the all-matched sentence."""
        out = list(self.notes)
        out += [f"could not measure: {p}" for p in self.problems]
        out += [m.describe() for m in self.moves]
        if self.exit_code == EXIT_MATCHED:
            out.append("every probe matched the outcome the baseline records")
        return out


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def project_suite(document: SuiteStrength) -> BaselineSuite:
    """The baseline entry of one suite: the A.11 fields of its contract-strength document."""
    probes = {
        probe_id: BaselineProbe(
            probe_class=p.probe_class,
            expected_clean=p.expected_clean,
            behavior_id=p.behavior_id,
            preflight=p.preflight,
            preflight_legs=p.preflight_legs,
            verdict=p.verdict,
            exit_code=p.exit_code,
            strict_promotable=p.strict_promotable,
            basis=list(p.basis),
            qualification=None if p.qualification is None else list(p.qualification),
            strength=p.strength,
        )
        for probe_id, p in sorted(document.probes.items())
    }
    return BaselineSuite(
        contract_id=document.contract_id,
        corpus_digest=document.corpus_digest,
        preflight=document.preflight,
        probe_count=document.probe_count,
        strength=document.strength,
        floors=dict(document.floors),
        aggregate=document.aggregate,
        floor_decisions=floor_decisions_of(document),
        unsatisfied_coverage_rules=list(document.unsatisfied_coverage_rules),
        probes=probes,
    )


#: What a class's floor decision reads as when the aggregate was refused (no decision at all).
REFUSED = "refused"


def floor_decisions_of(document: SuiteStrength) -> dict[str, str]:
    """The document's floor decisions as the strings the gate compares; ``refused`` per class when the
    aggregate was refused (there is no decision to compare, and that itself is what moved)."""
    if document.floor_decisions is None:
        return {cls: REFUSED for cls in VECTOR_CLASSES}
    return {cls: decision.describe() for cls, decision in sorted(document.floor_decisions.items())}


def read_baseline(path: Path) -> dict[str, BaselineSuite] | None:
    """Read the baseline; ``None`` when the file is missing; ``RuntimeFault`` naming the path when malformed."""
    if not path.is_file():
        return None
    try:
        raw = read_suite_bytes(path)  # under the input size cap, as every suite file
    except SuiteError as problem:
        raise RuntimeFault("budget-exhausted", str(path), str(problem)) from None
    data = scan_json(raw, str(path))
    if not isinstance(data, dict):
        raise RuntimeFault("schema-parse-failure", str(path), "expected an object keyed by suite")
    return {suite: read_artifact(BaselineSuite, entry, f"{path}.{suite}") for suite, entry in data.items()}


def render_baseline(suites: Mapping[str, BaselineSuite]) -> str:
    """The baseline file's text: suites and probes sorted, two-space indent, trailing newline."""
    value = {name: to_wire(suites[name]) for name in sorted(suites)}
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def update_baseline(path: Path, documents: Iterable[SuiteStrength]) -> dict[str, BaselineSuite]:
    """Rewrite the baseline from this run's documents, keeping recorded suites this run did not cover."""
    try:
        recorded = read_baseline(path) or {}
    except RuntimeFault:
        recorded = {}  # a malformed baseline is replaced wholesale by the update it asked for
    merged = dict(recorded)
    for document in documents:
        merged[document.suite] = project_suite(document)
    write_atomically(path, render_baseline(merged).encode("utf-8"))
    return merged


def compare_with_baseline(
    documents: Mapping[str, SuiteStrength],
    baseline: Mapping[str, BaselineSuite] | None,
    *,
    could_not_run: Mapping[str, str] | None = None,
    schema_failures: Iterable[str] = (),
    compare_verdicts: bool = True,
    complete: bool = False,
    baseline_name: str = BASELINE_FILE,
) -> GateResult:
    """Decide the exit code of a run (harness.md A.5), naming every move in either direction.

    ``documents`` maps each suite that ran to its document; ``could_not_run`` maps each suite that
    did not to its reason; ``schema_failures`` lists artifacts that failed their schema. With
    ``compare_verdicts`` false (a pre-flight-only run) verdicts are not compared. With ``complete``
    (the run covered every suite of the corpus) a recorded suite that neither ran nor failed to run
    has vanished, which is a move; without it the run is a subset and such suites are not compared.
    ``baseline_name`` is how a missing baseline is named in the problem line.
    """
    problems = [f"suite {name}: {reason}" for name, reason in sorted((could_not_run or {}).items())]
    problems += [f"artifact failed its schema: {failure}" for failure in schema_failures]
    if baseline is None:
        problems.append(f"baseline {baseline_name} is missing (run with --update-baseline to record one)")
        return GateResult(EXIT_ENVIRONMENT, [], problems)
    moves: list[Move] = []
    for suite in sorted(documents):
        moves += _suite_moves(suite, documents[suite], baseline.get(suite), compare_verdicts)
    if complete:
        vanished = set(baseline) - set(documents) - set(could_not_run or {})
        moves += [Move("environment", suite, None, "suite", "recorded", "not found") for suite in sorted(vanished)]
    moves.sort(key=lambda m: (m.kind != "environment", m.suite, m.probe or "", m.what))
    if problems or any(m.kind == "environment" for m in moves):
        code = EXIT_ENVIRONMENT
    elif moves:
        code = EXIT_MEASURED_MOVE
    else:
        code = EXIT_MATCHED
    return GateResult(code, moves, problems)


def _suite_moves(
    suite: str, document: SuiteStrength, recorded: BaselineSuite | None, compare_verdicts: bool
) -> list[Move]:
    if recorded is None:
        return [Move("environment", suite, None, "suite", "not in the baseline", "ran")]
    moves: list[Move] = []
    if recorded.preflight is not None and recorded.preflight != document.preflight:
        moves.append(Move("environment", suite, None, "suite-wide pre-flight", recorded.preflight, document.preflight))
    if compare_verdicts and recorded.floor_decisions is not None:
        was_decisions, now_decisions = recorded.floor_decisions, floor_decisions_of(document)
        for cls in sorted(set(was_decisions) | set(now_decisions)):
            was, now = was_decisions.get(cls, "not decided"), now_decisions.get(cls, "not decided")
            if was != now:
                moves.append(Move("measured", suite, None, f"{cls} floor decision", was, now))
    for probe_id in sorted(set(recorded.probes) | set(document.probes)):
        was = recorded.probes.get(probe_id)
        now = document.probes.get(probe_id)
        if was is None:
            moves.append(Move("environment", suite, probe_id, "probe", "not in the baseline", "ran"))
            continue
        if now is None:
            moves.append(Move("environment", suite, probe_id, "probe", "recorded", "did not run"))
            continue
        if was.preflight != now.preflight:
            moves.append(Move("environment", suite, probe_id, "pre-flight", was.preflight, now.preflight))
        # A null count against a recorded integer is a move too, so a broken sink cannot pass (A.5).
        if was.preflight_legs != now.preflight_legs:
            moves.append(
                Move("environment", suite, probe_id, "planned legs", was.preflight_legs, now.preflight_legs)
            )
        if compare_verdicts and was.verdict != now.verdict:
            moves.append(Move("measured", suite, probe_id, "verdict", was.verdict or "Invalid", now.verdict or "Invalid"))
    return moves


def documents_in(out_dir: Path) -> dict[str, SuiteStrength]:
    """Every ``<suite>/contract-strength.json`` under a run's output folder, by suite."""
    found = sorted(out_dir.glob(f"**/{CONTRACT_STRENGTH_FILE}"))
    documents = [read_suite_strength(path) for path in found]
    return {document.suite: document for document in documents}


@crash_exit("python -m flows.strength_baseline")
def main(argv: list[str] | None = None) -> int:
    """``python -m flows.strength_baseline --out DIR [--baseline FILE] [--update-baseline]``.

    Gates the documents a contract-strength run already wrote (no re-run): prints every move and
    returns the exit code. A document that does not read is a schema failure (exit 2).
    """
    import sys

    from tasks.home import PROJECT_ROOT

    # A usage error is one line and 64: argparse's 2 would read as "could not measure".
    parser = FlowArgumentParser(prog="python -m flows.strength_baseline", description=main.__doc__.splitlines()[0])
    parser.add_argument("--out", metavar="DIR", required=True, help="a contract-strength run's output folder")
    parser.add_argument("--baseline", metavar="FILE", default=str(PROJECT_ROOT / "corpus" / BASELINE_FILE))
    parser.add_argument("--update-baseline", action="store_true", help="rewrite the baseline from these documents")
    args = parser.parse_args(argv)
    baseline_path = Path(args.baseline)
    try:
        documents = documents_in(Path(args.out))
    except RuntimeFault as fault:
        print(printable(f"could not measure: artifact failed its schema: {fault}"))
        return EXIT_ENVIRONMENT
    if not documents:
        print(printable(f"could not measure: no contract-strength.json under {args.out}"), file=sys.stderr)
        return EXIT_ENVIRONMENT
    if args.update_baseline:
        update_baseline(baseline_path, documents.values())
        print(printable(f"baseline rewritten: {baseline_path}"))
    try:
        recorded = read_baseline(baseline_path)
    except RuntimeFault as fault:
        print(printable(f"could not measure: baseline unreadable: {fault}"))
        return EXIT_ENVIRONMENT
    result = compare_with_baseline(documents, recorded, baseline_name=str(baseline_path))
    for line in result.lines():
        print(printable(line))
    return result.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
