"""Benchmark: scoring throughput on the worked example, in process, against parsing the same inputs.

Baseline: read the seven input files of the notes-API worked example (contract, probe, record and the
four reconstructed inputs), scan them with the strict JSON reader and validate each through its model.
Subject: ingest → score → emit over the already-parsed models (selection, check resolution, witness
match, outcomes, votes, strength, coverage, ladder, artifact validation). Rounds alternate between the
two sides so host drift affects both alike. Prints each side's median per round, rounds per second, and
the ratio score / parse (how many "parses" one scoring costs).

Run: /work/venv/bin/python benchmarks/bench_score.py [rounds]   (default 300)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from results import record

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.evaluator_config import EvaluatorConfiguration
from evalquality_core.artifacts.isolation import IsolationManifest
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.run_record import SealedRunRecord
from evalquality_core.artifacts.scoring_policy import ScoringPolicy
from evalquality_core.canonical.json import scan_json
from evalquality_core.emit.emit import emit
from evalquality_core.ingest import ingest
from evalquality_core.score.score import score

EXAMPLE = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "worked-example"
INPUTS = EXAMPLE / "reconstructed-inputs"
FILES = {
    "contract": (EXAMPLE / "eval-contract.json", EvalContract),
    "probe": (EXAMPLE / "probe.json", Probe),
    "record": (EXAMPLE / "sealed-run-record.json", SealedRunRecord),
    "manifest": (INPUTS / "isolation-manifest.json", IsolationManifest),
    "configuration": (INPUTS / "evaluator-configuration.json", EvaluatorConfiguration),
    "policy": (INPUTS / "scoring-policy.json", ScoringPolicy),
    "preflight": (INPUTS / "preflight-verdict.json", PreflightVerdict),
}
CORPUS_DIGEST = "sha256:000000000000000000000000000000000000000000000000000000000000000e"


def parse_all() -> dict[str, object]:
    """The baseline: read, scan and validate every input file."""
    return {name: read_artifact(model, scan_json(path.read_bytes(), name)) for name, (path, model) in FILES.items()}


def score_once(m: dict[str, object]) -> object:
    """The subject: ingest → score → emit over parsed models."""
    trial = ingest(m["record"], m["manifest"], m["configuration"])
    result = score(m["contract"], m["probe"], [trial], m["policy"], m["preflight"])
    return emit(
        result,
        m["contract"],
        m["policy"],
        corpus_digest=CORPUS_DIGEST,
        fixture_digest=m["preflight"].fixture_digest,  # type: ignore[attr-defined]
        evaluator_configuration_digest=m["record"].evaluator_configuration_digest,  # type: ignore[attr-defined]
    )


def main(rounds: int) -> None:
    """Alternate the two sides ``rounds`` times and print medians and the ratio."""
    models = parse_all()
    score_once(models)  # warm caches (regex compilation, imports)
    parse_times: list[float] = []
    score_times: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        parse_all()
        parse_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        score_once(models)
        score_times.append(time.perf_counter() - start)
    parse_median = statistics.median(parse_times)
    score_median = statistics.median(score_times)
    print(f"worked example, {rounds} rounds per side")
    print(f"  parse + validate 7 inputs: {parse_median * 1e3:8.3f} ms  ({1 / parse_median:8.1f} /s)")
    print(f"  ingest + score + emit:     {score_median * 1e3:8.3f} ms  ({1 / score_median:8.1f} /s)")
    print(f"  ratio score / parse:       {score_median / parse_median:8.2f}")
    record(__file__, baseline="parsing and validating the worked example's seven input files (median)",
           ratios={"ingest+score+emit / parse+validate": score_median / parse_median},
           figures={"rounds": rounds, "parse+validate ms": parse_median * 1e3,
                    "ingest+score+emit ms": score_median * 1e3})


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
