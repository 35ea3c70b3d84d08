"""The contract_strength flow end to end, on temp copies of the corpus's notes suite (real child processes).

Each test copies two probes of ``corpus/suites/notes`` (P-001, a defect its contract catches, and
P-006, the clean control) with the corpus scoring policy, and the committed baseline's entries for
them, then runs the real flow: live pre-flight legs through the leg cache, the score tasks, the gate.
The leg cache is shared by the module (as nights share it), so only the first test spawns the
unchanged legs.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalquality_core.artifacts.evidence import EvidenceArtifact
from evalquality_core.artifacts.preflight_verdict import PreflightVerdict
from evalquality_core.canonical import digest_artifact, scan_json
from evalquality_core.preflight.plan import plan_preflight
from flows.contract_strength import (
    COST_FILE,
    StrengthRun,
    make_task_runner,
    run_contract_strength,
)
from flows.strength_report import HISTORY_FILE, REPORT_FILE
from tasks.strength_document import read_suite_strength
from tests.ports import server_port

PROJECT = Path(__file__).resolve().parents[3]
KEPT = ("P-001", "P-006")

# One module fixture runs the flow(s) every test here reads: one worker builds it once (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("contract-strength")]


@pytest.fixture(scope="module", autouse=True)
def shared_home(tmp_path_factory) -> Iterator[Path]:
    """One eval-quality home (leg cache, workspaces) for the module's runs, like successive nights."""
    home = tmp_path_factory.mktemp("strength-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALQUALITY_HOME", str(home))
        patch.delenv("EVALQUALITY_SUITES", raising=False)
        patch.delenv("EVALQUALITY_STRENGTH_BASELINE", raising=False)
        yield home


def make_corpus(root: Path) -> Path:
    """``<root>/corpus`` holding the notes suite cut to ``KEPT`` and the committed baseline cut alike."""
    source = PROJECT / "corpus"
    corpus = root / "corpus"
    suite = corpus / "suites" / "notes"
    shutil.copytree(source / "suites" / "notes", suite)
    shutil.copy(source / "scoring-policy.json", corpus / "scoring-policy.json")
    for probe in (suite / "probes").glob("*.json"):
        if probe.stem not in KEPT:
            probe.unlink()
            shutil.rmtree(suite / "trials" / probe.stem, ignore_errors=True)
    recorded = json.loads((source / "expected-strength.json").read_text())["notes"]
    recorded["probes"] = {pid: entry for pid, entry in recorded["probes"].items() if pid in KEPT}
    # Every probe is scored under one suite-wide pre-flight, whose leg count is the cut suite's: the
    # core planner over the kept probes says how many legs that is.
    probes = [json.loads((suite / "probes" / f"{pid}.json").read_text()) for pid in KEPT]
    legs = len(plan_preflight(json.loads((suite / "contract.json").read_text()), probes, "cut", clean_witness_legs=True).legs)
    for entry in recorded["probes"].values():
        entry["preflightLegs"] = legs
    (corpus / "expected-strength.json").write_text(json.dumps({"notes": recorded}, indent=2))
    return corpus


def _flow_run_state(flow_run_id: str):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id).state


def _task_run_names(flow_run_id: str, wait: bool = True) -> set[str]:
    """The names of a flow run's task runs, once the server has recorded the seal task (a few seconds;
    ``wait=False``: as soon as the server has recorded the flow run's end, whatever they are)."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            names = {run.name for run in runs}
            if not wait or "seal/notes" in names and {"score/notes/P-001", "score/notes/P-006"} <= names:
                return names
            if time.monotonic() > deadline:
                return names
            time.sleep(0.25)


def run(corpus: Path, out: Path, **options) -> StrengthRun:
    return run_contract_strength(
        suites_dir=str(corpus / "suites"),
        out_dir=str(out),
        baseline=str(corpus / "expected-strength.json"),
        **options,
    )


def test_matches_the_committed_baseline_and_a_rerun_spawns_and_rescores_nothing(tmp_path):
    from prefect.artifacts import Artifact

    corpus = make_corpus(tmp_path)
    out = tmp_path / "out"
    first = run(corpus, out)
    assert first.exit_code == 0, first.summary_lines()
    assert first.counts.legs_spawned > 0
    assert first.counts.scores_run + first.counts.scores_cached == 2
    cost = (out / COST_FILE).read_bytes()
    assert json.loads(cost)["legsSpawned"] == first.counts.legs_spawned

    # What the run wrote: per probe its verdict and evidence, per suite the brief and the document.
    folder = out / "notes"
    document = read_suite_strength(folder / "contract-strength.json")
    assert set(document.probes) == set(KEPT)
    # One suite-wide pre-flight verdict; every probe's evidence carries its fixture digest.
    verdict = scan_json((folder / "preflight.json").read_bytes())
    assert PreflightVerdict.model_validate(verdict, by_alias=True).passed is True
    assert document.preflight == "passed" and document.fixture_digest == verdict["fixtureDigest"]
    assert not list(folder.glob("preflight-*.json"))
    for pid in KEPT:
        evidence = scan_json((folder / f"evidence-{pid}.json").read_bytes())
        EvidenceArtifact.model_validate(evidence, by_alias=True)
        assert document.probes[pid].evidence_digest == digest_artifact(evidence)
        assert evidence["scoringVersionInputs"]["fixtureDigest"] == verdict["fixtureDigest"]
    # The aggregate is accepted (one scoring version) and decided against suite.toml's floor.
    assert document.aggregate_refusal is None and (folder / "strength-aggregate.json").is_file()
    assert document.floors == {"defect": 0.8}
    assert document.aggregate.defect.model_dump() == {
        "exercised": 1, "caught": 1, "rate": 1, "eligible": 1, "comparable": True
    }
    assert document.floor_decisions["defect"].describe() == "meets (rate-meets-floor)"
    assert document.probes["P-001"].strength.defect.caught == 1
    assert (folder / "sealed-evaluator-brief.json").is_file()

    second = run(corpus, out)
    assert second.exit_code == 0, second.summary_lines()
    assert (second.counts.legs_spawned, second.counts.scores_run, second.counts.scores_cached) == (0, 0, 2)
    assert second.summary_lines()[0].startswith("0 legs run and ")
    assert "0 probes re-scored and 2 answered from cache" in second.summary_lines()[0]
    assert (out / COST_FILE).read_bytes() == cost  # a cached night never overwrites the spending night's record
    assert read_suite_strength(folder / "contract-strength.json") == document
    assert len(json.loads((out / HISTORY_FILE).read_text())["nights"]) == 2
    assert (out / REPORT_FILE).read_text().count("<svg") == 2  # this night's bars, and the line across nights

    table = Artifact.get("strength-notes")
    assert table is not None and "P-001" in str(table.data)
    summary = Artifact.get("contract-strength-summary")
    assert summary is not None and "0 probes re-scored and 2 answered from cache" in str(summary.data)
    link = Artifact.get("strength-report")
    # Prefect 3 stores a link artifact as markdown: [text](link).
    assert link is not None and f"]({(out / REPORT_FILE).resolve().as_uri()})" in str(link.data)

    # Each run is on record with its own timestamp and flow run, which is named by what it ran and when.
    nights = json.loads((out / HISTORY_FILE).read_text())["nights"]
    assert nights[0]["flowRunId"] != nights[1]["flowRunId"]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", night["at"]) for night in nights)
    assert re.fullmatch(r"contract-strength 1 suite \d{4}-\d\d-\d\dT\d\d:\d\dZ", nights[1]["flowRunName"])
    html_text = (out / REPORT_FILE).read_text()
    assert 'id="since">No change since the previous run' in html_text  # the second run changed nothing
    assert 'href="./notes/evidence-P-001.json"' in html_text and "store-write-deletion" in html_text
    names = _task_run_names(nights[0]["flowRunId"])
    # (compile/notes ran in the pre-flight subflow, whose answer the strength flow reads back.)
    assert {"seal/notes", "score/notes/P-001", "score/notes/P-006"} <= names
    # The second night found every stage answered before submitting it (tasks.caching.stored_result):
    # no compile, seal, score or aggregate task run, so a night with nothing changed costs no orchestration.
    again = _task_run_names(nights[1]["flowRunId"], wait=False)
    assert not {name for name in again if name.split("/")[0] in {"compile", "seal", "score", "aggregate-strength"}}, again


def test_a_stored_catch_edited_into_a_miss_exits_1_naming_the_probe(tmp_path):
    corpus = make_corpus(tmp_path)
    record_path = corpus / "suites/notes/trials/P-001/trial-1/sealed-run-record.json"
    record = json.loads(record_path.read_text())
    # The evaluator now says the designated oracle held, and files no defect finding against it.
    for disposition in record["oracleDispositions"]:
        if disposition["oracleId"] == "O-001":
            disposition["disposition"] = "held"
    record["findings"] = [f for f in record["findings"] if f["oracleId"] != "O-001"]
    record_path.write_text(json.dumps(record))

    result = run(corpus, tmp_path / "out")
    assert result.exit_code == 1, result.summary_lines()
    # One trial of three missed: the probe is still caught (2/3 > catchThreshold), so the floor holds.
    assert result.gate.lines() == ["notes P-001: verdict moved PASS -> FAIL"]
    # The flow run itself ended Failed, with one line naming what moved (no traceback).
    night = json.loads((tmp_path / "out" / HISTORY_FILE).read_text())["nights"][-1]
    state = _flow_run_state(night["flowRunId"])
    assert (state.type.value, state.message) == (
        "FAILED", "contract strength gate exit 1: notes P-001: verdict moved PASS -> FAIL"
    )
    assert result.counts.legs_spawned == 0  # the environment did not change: every leg from the cache
    assert result.documents["notes"].probes["P-001"].basis == [
        "oracle O-001 resolved missed at or above the severity floor"
    ]


def test_every_trial_edited_into_a_miss_moves_the_floor_decision_too(tmp_path):
    corpus = make_corpus(tmp_path)
    for record_path in sorted((corpus / "suites/notes/trials/P-001").glob("trial-*/sealed-run-record.json")):
        record = json.loads(record_path.read_text())
        for disposition in record["oracleDispositions"]:
            if disposition["oracleId"] == "O-001":
                disposition["disposition"] = "held"
        record["findings"] = [f for f in record["findings"] if f["oracleId"] != "O-001"]
        record_path.write_text(json.dumps(record))

    result = run(corpus, tmp_path / "out")
    assert result.exit_code == 1, result.summary_lines()
    assert result.gate.lines() == [
        "notes: defect floor decision moved meets (rate-meets-floor) -> does-not-meet (rate-below-floor)",
        "notes P-001: verdict moved PASS -> FAIL",
    ]
    assert result.documents["notes"].aggregate.defect.rate == 0


def test_a_defused_seeded_fault_fails_preflight_and_exits_2_naming_the_check(tmp_path):
    corpus = make_corpus(tmp_path)
    mutation_path = corpus / "suites/notes/mutations/store-write-deletion.json"
    mutation = json.loads(mutation_path.read_text())
    assert mutation["probeId"] == "P-001"
    # The P-001 leg's system now keeps the write: its seeded fault no longer fires.
    mutation["replace"] = mutation["find"].replace("\n    return", "  # defused\n    return")
    mutation_path.write_text(json.dumps(mutation))

    result = run(corpus, tmp_path / "out")
    assert result.exit_code == 2, result.summary_lines()
    # One suite-wide pre-flight: its failure is the suite's, and every probe is scored under it.
    assert "notes: suite-wide pre-flight moved passed -> failed: seeded-fault-fired" in result.gate.lines()
    for pid in KEPT:
        assert f"notes {pid}: pre-flight moved passed -> failed: seeded-fault-fired" in result.gate.lines()
        assert result.documents["notes"].probes[pid].verdict is None
        assert "pre-flight verdict did not pass" in result.documents["notes"].probes[pid].basis


def test_the_same_flow_runs_on_a_dask_cluster_of_processes(tmp_path):
    pytest.importorskip("prefect_dask", reason="prefect-dask is a test extra: pip install -e '.[test]'")
    corpus = make_corpus(tmp_path)
    result = run(corpus, tmp_path / "out", task_runner=make_task_runner("dask", 2))
    assert result.task_runner == "DaskTaskRunner"
    assert result.exit_code == 0, result.summary_lines()
    assert result.documents["notes"].probes["P-001"].verdict == "PASS"


def test_a_moved_night_run_as_a_deployment_ends_failed_in_one_line_without_a_traceback(tmp_path):
    """The nightly path for real: a deployment of the flow, a flow run created from it, executed by Prefect's
    own engine entry point in a child process (as a worker or ``serve`` runs it), on a server process."""
    import os
    import subprocess
    import sys

    from prefect.client.orchestration import get_client
    from prefect.deployments.runner import EntrypointType
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.contract_strength import contract_strength

    corpus = make_corpus(tmp_path)
    record_path = corpus / "suites/notes/trials/P-001/trial-1/sealed-run-record.json"
    record = json.loads(record_path.read_text())
    for disposition in record["oracleDispositions"]:
        if disposition["oracleId"] == "O-001":
            disposition["disposition"] = "held"
    record["findings"] = [f for f in record["findings"] if f["oracleId"] != "O-001"]
    record_path.write_text(json.dumps(record))

    # A port of its own (SubprocessASGIServer() without one is the process's embedded server, a singleton
    # which must keep running), below the ephemeral range (tests/ports.py).
    server = SubprocessASGIServer(port=server_port())
    server.start(timeout=120)
    try:
        with temporary_settings({PREFECT_API_URL: server.api_url}):
            deployment = contract_strength.to_deployment(
                name="test-nightly",
                parameters={
                    "suites_dir": str(corpus / "suites"), "out_dir": str(tmp_path / "out"),
                    "baseline": str(corpus / "expected-strength.json"), "fail_on_movement": True,
                },
                entrypoint_type=EntrypointType.MODULE_PATH,
            )
            deployment_id = deployment.apply()
            with get_client(sync_client=True) as client:
                flow_run = client.create_flow_run_from_deployment(deployment_id)
        env = {**os.environ, "PREFECT_API_URL": server.api_url}
        done = subprocess.run(
            [sys.executable, "-m", "prefect.engine", str(flow_run.id)], cwd=PROJECT, env=env,
            capture_output=True, text=True, timeout=600,
        )
        with temporary_settings({PREFECT_API_URL: server.api_url}):
            with get_client(sync_client=True) as client:
                finished = client.read_flow_run(flow_run.id)
    finally:
        server.stop()
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-3000:]
    assert finished.state.type.value == "FAILED", output[-3000:]
    assert finished.state.message == "contract strength gate exit 1: notes P-001: verdict moved PASS -> FAIL"
    assert finished.name == f"test-nightly {finished.expected_start_time:%Y-%m-%d}"
    assert "suite:notes" in finished.tags
