"""``eval-quality score`` and ``aggregate-strength`` through the command line (scoring.md §9.2, §5.5;
preflight-adapter.md §7): real child processes for the chains, in-process runs for the usage rules.

The worked example's record names its isolation manifest by a *private* reference with a placeholder
digest. A private reference is resolved under ``--corpus-root`` (``<root>/<privateRef>``) and the SHA-256
of the raw bytes must equal the reference's digest, so the tests write the real manifest bytes into a
temporary corpus root and re-seal a copy of the record whose reference pins those bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.canonical.digest import digest_bytes
from evalquality_core.cli.main import main
from tests.scoring_inputs import WORKED_EXAMPLE_CORPUS_DIGEST, load

EQ = [sys.executable, "-m", "evalquality_core"]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a real child process."""
    return subprocess.run([*EQ, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def sealed_with_corpus(tmp: Path, record_path: Path, manifest_path: Path, *, trial_index: int | None = None,
                       name: str = "record.json") -> tuple[Path, Path]:
    """Copy the record, pin its private isolation-manifest reference to the real manifest bytes, and put
    those bytes at ``<corpus root>/<privateRef>``. Returns (record path, corpus root)."""
    record = load(record_path)
    reference = record["isolationManifestArtifact"]
    assert reference["storage"] == "private"
    data = manifest_path.read_bytes()
    root = tmp / "corpus"
    target = root / reference["privateRef"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    record["isolationManifestArtifact"] = {**reference, "digest": digest_bytes(data)}
    if trial_index is not None:
        record["trialIndex"] = trial_index
    return _write(tmp / name, record), root


def worked_args(conformance: Path, record: Path, manifest: Path) -> list[str]:
    base = conformance / "worked-example"
    inputs = base / "reconstructed-inputs"
    return [
        "score",
        "--record", str(record),
        "--contract", str(base / "eval-contract.json"),
        "--probe", str(base / "probe.json"),
        "--preflight-verdict", str(inputs / "preflight-verdict.json"),
        "--policy", str(inputs / "scoring-policy.json"),
        "--corpus-digest", WORKED_EXAMPLE_CORPUS_DIGEST,
        "--isolation-manifest", str(manifest),
        "--evaluator-configuration", str(inputs / "evaluator-configuration.json"),
    ]


def test_worked_example_through_the_cli_exits_2_and_writes_the_artifact(conformance: Path, tmp_path: Path) -> None:
    manifest = conformance / "worked-example" / "reconstructed-inputs" / "isolation-manifest.json"
    record, root = sealed_with_corpus(tmp_path, conformance / "worked-example" / "sealed-run-record.json", manifest)
    out = tmp_path / "out"
    proc = run([*worked_args(conformance, record, manifest), "--corpus-root", str(root), "--out", str(out)], tmp_path)
    assert proc.returncode == 2, proc.stderr
    raw = (out / "evidence-artifact.json").read_bytes()
    assert raw.endswith(b"}\n") and raw.count(b"\n") == 1  # canonical JSON plus one newline
    artifact = json.loads(raw)
    expected = load(conformance / "worked-example" / "expected.json")
    assert artifact["contractVerdict"] == expected["contractVerdict"]
    assert artifact["exitCode"] == expected["exitCode"]
    assert artifact["verdictBasis"] == expected["verdictBasis"]
    assert [o["state"] for o in artifact["outcomes"]] == [o["state"] for o in expected["outcomes"]]
    # --strict never changes a FAIL
    assert run([*worked_args(conformance, record, manifest), "--corpus-root", str(root), "--out", str(tmp_path / "s.json"),
                "--strict"], tmp_path).returncode == 2


def test_tampered_manifest_in_the_corpus_is_a_digest_mismatch_and_writes_nothing(conformance: Path, tmp_path: Path) -> None:
    manifest = conformance / "worked-example" / "reconstructed-inputs" / "isolation-manifest.json"
    record, root = sealed_with_corpus(tmp_path, conformance / "worked-example" / "sealed-run-record.json", manifest)
    stored = root / load(record)["isolationManifestArtifact"]["privateRef"]
    original = stored.read_bytes()
    stored.write_bytes(json.dumps(json.loads(original) | {"violation": "egress"}).encode())
    assert stored.read_bytes() != original
    out = tmp_path / "out"
    proc = run([*worked_args(conformance, record, manifest), "--corpus-root", str(root), "--out", str(out)], tmp_path)
    assert proc.returncode == 5
    assert proc.stderr.startswith("eval-quality: digest-mismatch: SealedRunRecord[0].isolationManifestArtifact: ")
    assert not out.exists() and proc.stdout == ""


def test_tampered_manifest_supplied_to_ingest_exits_3_and_writes_nothing(conformance: Path, tmp_path: Path) -> None:
    """The pinned bytes verify, but the manifest handed to ingest was altered: Invalid, nothing written."""
    manifest = conformance / "worked-example" / "reconstructed-inputs" / "isolation-manifest.json"
    record, root = sealed_with_corpus(tmp_path, conformance / "worked-example" / "sealed-run-record.json", manifest)
    tampered = load(manifest) | {"violation": "network egress to an unlisted host", "runId": "another-run"}
    tampered_path = _write(tmp_path / "tampered-manifest.json", tampered)
    out = tmp_path / "out"
    proc = run([*worked_args(conformance, record, tampered_path), "--corpus-root", str(root), "--out", str(out)], tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert not out.exists() and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "eval-quality: invalid: isolation manifest violation: manifest violation: network egress to an unlisted host",
        'eval-quality: invalid: record and manifest disagree on runId: record "spike-run-0001", manifest "another-run"',
    ]


def test_absent_manifest_is_invalid(conformance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = conformance / "worked-example" / "reconstructed-inputs" / "isolation-manifest.json"
    record, root = sealed_with_corpus(tmp_path, conformance / "worked-example" / "sealed-run-record.json", manifest)
    args = worked_args(conformance, record, manifest)
    i = args.index("--isolation-manifest")
    del args[i : i + 2]
    code = main([*args, "--corpus-root", str(root), "--out", str(tmp_path / "e.json")])
    assert code == 3
    assert "eval-quality: invalid: isolation manifest violation: isolation manifest absent" in capsys.readouterr().err
    assert not (tmp_path / "e.json").exists()


def test_private_reference_without_a_corpus_root_is_a_usage_error(conformance: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = conformance / "worked-example"
    code = main(worked_args(conformance, base / "sealed-run-record.json", base / "reconstructed-inputs" / "isolation-manifest.json"))
    assert code == 64
    assert "--corpus-root is required" in capsys.readouterr().err
    # with a root but the committed placeholder digest, the bytes cannot verify: digest-mismatch (exit 5)
    _, root = sealed_with_corpus(tmp_path, base / "sealed-run-record.json", base / "reconstructed-inputs" / "isolation-manifest.json")
    code = main([*worked_args(conformance, base / "sealed-run-record.json",
                              base / "reconstructed-inputs" / "isolation-manifest.json"), "--corpus-root", str(root)])
    assert code == 5
    assert "digest-mismatch" in capsys.readouterr().err


def test_usage_errors(conformance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = conformance / "worked-example"
    manifest = base / "reconstructed-inputs" / "isolation-manifest.json"
    record, root = sealed_with_corpus(tmp_path, base / "sealed-run-record.json", manifest)
    args = [*worked_args(conformance, record, manifest), "--corpus-root", str(root)]
    assert main(["score", "--record", str(record)]) == 64
    assert "score requires --contract, --probe, --preflight-verdict, --policy, --corpus-digest" in capsys.readouterr().err
    assert main([*args, "--designated-oracle", "O-002"]) == 64  # declared, but B-001 lists only O-001
    assert "--designated-oracle" in capsys.readouterr().err
    assert main([*args, "--designated-oracle", "O-1"]) == 64
    assert main([*args, "--designated-oracle", "O-001", "--designated-oracle", "O-001"]) == 64
    assert main([*args, "--policy", str(base / "probe.json")]) == 64  # conflicting repeat
    assert "given twice with different values" in capsys.readouterr().err
    assert main([*args, "--out", str(record)]) == 64  # --out resolves to an input
    bad_digest = [("sha256:xyz" if a == WORKED_EXAMPLE_CORPUS_DIGEST else a) for a in args]
    assert main(bad_digest) == 5
    assert "--corpus-digest" in capsys.readouterr().err
    # the designated oracle given explicitly is the default one: same verdict
    assert main([*args, "--designated-oracle", "O-001", "--out", str(tmp_path / "d.json")]) == 2


def test_schema_version_is_checked_before_shape(conformance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = conformance / "worked-example"
    manifest = base / "reconstructed-inputs" / "isolation-manifest.json"
    record, root = sealed_with_corpus(tmp_path, base / "sealed-run-record.json", manifest)
    bad_policy = _write(tmp_path / "policy.json", {"schemaVersion": 9})
    args = [*worked_args(conformance, record, manifest), "--corpus-root", str(root)]
    i = args.index("--policy")
    args[i + 1] = str(bad_policy)
    assert main(args) == 5
    assert "schema-version-mismatch" in capsys.readouterr().err
    dup = tmp_path / "dup-policy.json"
    dup.write_text((base / "reconstructed-inputs" / "scoring-policy.json").read_text()[:-1].rstrip().rstrip("}")
                   + ',"policyId":"x"}')
    args[i + 1] = str(dup)
    assert main(args) == 5
    assert "non-canonicalizable-value" in capsys.readouterr().err


def _skill_defect_trials(conformance: Path, tmp_path: Path, n: int) -> tuple[list[str], Path]:
    base = conformance / "chains" / "skill-defect"
    manifest = base / "reconstructed-inputs" / "isolation-manifest.json"
    records = []
    root = tmp_path / "corpus"
    for i in range(1, n + 1):
        record, root = sealed_with_corpus(tmp_path, base / "sealed-run-record.json", manifest, trial_index=i,
                                          name=f"record-{i}.json")
        records += ["--record", str(record)]
    inputs = base / "reconstructed-inputs"
    corpus_digest = load(base / "evidence-artifact.json")["scoringVersionInputs"]["corpusDigest"]
    return [
        "score", *records,
        "--contract", str(base / "eval-contract.json"),
        "--probe", str(base / "probe.json"),
        "--preflight-verdict", str(base / "preflight-verdict.json"),
        "--policy", str(inputs / "scoring-policy.json"),
        "--corpus-digest", corpus_digest,
        "--isolation-manifest", str(manifest),
        "--evaluator-configuration", str(inputs / "evaluator-configuration.json"),
        "--corpus-root", str(root),
    ], base


def test_three_trials_in_one_call_are_comparable(conformance: Path, tmp_path: Path) -> None:
    args, base = _skill_defect_trials(conformance, tmp_path, 3)
    policy = load(base / "reconstructed-inputs" / "scoring-policy.json")
    assert policy["minimumTrialCount"] == 3
    out = tmp_path / "three.json"
    proc = run([*args, "--out", str(out)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    artifact = load(out)
    assert artifact["trials"]["completed"] == 3
    assert artifact["trials"]["completedAttempts"] == [1, 2, 3]
    assert artifact["strength"]["comparable"] is True
    assert artifact["strength"]["vector"]["defect"] == {"caught": 1, "exercised": 1, "rate": 1}
    assert artifact["strength"]["note"] == "1 admitted probe over 3 completed trials."
    assert artifact["reducedProbeOutcomes"][0]["trialVotes"] == [{"trialIndex": i, "state": "caught"} for i in (1, 2, 3)]
    assert [o["trialIndex"] for o in artifact["outcomes"]] == [1, 1, 2, 2, 3, 3]
    # the trials line of the single-trial basis is gone; the two coverage lines remain
    single = load(conformance / "chains" / "expected.json")["skill-defect"]["score"]["verdictBasis"]
    assert artifact["verdictBasis"] == [line for line in single if "completed trials" not in line]


def test_strict_promotes_a_concerns_that_is_not_evidence_only(conformance: Path, tmp_path: Path) -> None:
    args, _ = _skill_defect_trials(conformance, tmp_path, 1)
    assert main([*args, "--out", str(tmp_path / "a.json")]) == 0
    assert main([*args, "--out", str(tmp_path / "b.json"), "--strict"]) == 1
    assert load(tmp_path / "b.json")["exitCode"] == 0  # the artifact still records 0


def test_duplicate_trial_index_is_a_trial_set_disagreement(conformance: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    args, _ = _skill_defect_trials(conformance, tmp_path, 1)
    record = args[args.index("--record") + 1]
    assert main([*args, "--record", record, "--out", str(tmp_path / "x.json")]) == 3
    assert "eval-quality: invalid: trial-set field disagreement: trialIndex: duplicate value 1" in capsys.readouterr().err


@pytest.mark.parametrize("arm", ["honest", "degenerate"])
def test_tutorial_skill_arms(conformance: Path, tmp_path: Path, arm: str) -> None:
    chains = conformance / "chains"
    base = chains / "tutorial-skill"
    expected = load(chains / "expected.json")["tutorial-skill"]
    probes = _write(tmp_path / "probes.json", [])  # the tutorial's probes.json prints as []
    run_id = f"skill-{arm}-1"
    pre = run(["preflight", "--contract", str(base / "checklist-selection.json"), "--probes", str(probes),
               "--observations", str(base / "observations.json"), "--run-id", run_id, "--out", str(tmp_path / "pv.json")],
              tmp_path)
    assert pre.returncode == 0, pre.stderr
    out = tmp_path / "ev.json"
    proc = run(["score", "--record", str(base / f"{arm}-run-record.json"), "--contract", str(base / "checklist-selection.json"),
                "--probe", str(base / f"{arm}-probe.json"), "--preflight-verdict", str(tmp_path / "pv.json"),
                "--policy", str(chains / "skill-defect" / "reconstructed-inputs" / "scoring-policy.json"),
                "--corpus-digest", expected["score"]["corpusDigest"],
                "--isolation-manifest", str(base / f"{arm}-isolation-manifest.json"),
                "--evaluator-configuration", str(base / "evaluator-configuration.json"), "--out", str(out)], tmp_path)
    want = expected["score"][arm]
    assert proc.returncode == want["exitCode"], proc.stderr
    artifact = load(out)
    assert artifact["contractVerdict"] == want["contractVerdict"]
    assert artifact["verdictBasis"] == want["verdictBasis"]
    assert [{k: o[k] for k in ("oracleId", "state", "disposition", "corroboration")} for o in artifact["outcomes"]] == want["outcomes"]
    assert artifact["strength"]["vector"] == want["strengthVector"]


def test_tutorial_workflow(conformance: Path, tmp_path: Path) -> None:
    chains = conformance / "chains"
    base = chains / "tutorial-workflow"
    want = load(chains / "expected.json")["tutorial-workflow"]["score"]
    record = load(base / "sealed-run-record.json")
    pre = run(["preflight", "--contract", str(base / "eval-contract.json"), "--probes", str(base / "probes.json"),
               "--observations", str(base / "observations.json"), "--run-id", record["runId"],
               "--out", str(tmp_path / "pv.json")], tmp_path)
    assert pre.returncode == 0, pre.stderr
    out = tmp_path / "ev.json"
    proc = run(["score", "--record", str(base / "sealed-run-record.json"), "--contract", str(base / "eval-contract.json"),
                "--probe", str(base / "probe.json"), "--preflight-verdict", str(tmp_path / "pv.json"),
                "--policy", str(chains / "skill-defect" / "reconstructed-inputs" / "scoring-policy.json"),
                "--corpus-digest", want["corpusDigest"], "--isolation-manifest", str(base / "isolation-manifest.json"),
                "--evaluator-configuration", str(base / "evaluator-configuration.json"), "--out", str(out)], tmp_path)
    assert proc.returncode == want["exitCode"], proc.stderr
    artifact = load(out)
    assert artifact["mode"] == want["mode"]
    assert artifact["contractVerdict"] == want["contractVerdict"]
    assert artifact["verdictBasis"] == want["verdictBasis"]
    assert artifact["coverageGaps"] == want["coverageGaps"]
    assert [{k: o[k] for k in ("oracleId", "state", "disposition", "corroboration")} for o in artifact["outcomes"]] == want["outcomes"]
    assert artifact["strength"]["vector"] == want["strengthVector"]


def test_aggregate_strength_over_the_tutorial_arms(conformance: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The two skill arms are one run's gameability probe and clean control: aggregate them."""
    chains = conformance / "chains"
    base = chains / "tutorial-skill"
    policy = chains / "skill-defect" / "reconstructed-inputs" / "scoring-policy.json"
    digest = load(chains / "expected.json")["tutorial-skill"]["score"]["corpusDigest"]
    probes = _write(tmp_path / "probes.json", [])
    evidence = []
    for arm in ("honest", "degenerate"):
        assert main(["preflight", "--contract", str(base / "checklist-selection.json"), "--probes", str(probes),
                     "--observations", str(base / "observations.json"), "--run-id", f"skill-{arm}-1",
                     "--out", str(tmp_path / f"pv-{arm}.json")]) == 0
        out = tmp_path / f"ev-{arm}.json"
        assert main(["score", "--record", str(base / f"{arm}-run-record.json"), "--contract", str(base / "checklist-selection.json"),
                     "--probe", str(base / f"{arm}-probe.json"), "--preflight-verdict", str(tmp_path / f"pv-{arm}.json"),
                     "--policy", str(policy), "--corpus-digest", digest,
                     "--isolation-manifest", str(base / f"{arm}-isolation-manifest.json"),
                     "--evaluator-configuration", str(base / "evaluator-configuration.json"), "--out", str(out)]) == 0
        evidence += ["--evidence", str(out)]
    floors = _write(tmp_path / "floors.json", {"gameability": 0.5, "defect": 0.8})
    out = tmp_path / "agg"
    code = main(["aggregate-strength", *evidence, "--floors", str(floors), "--policy", str(policy), "--out", str(out)])
    err = capsys.readouterr().err
    ev = [load(tmp_path / f"ev-{arm}.json") for arm in ("honest", "degenerate")]
    assert ev[0]["scoringVersion"] == ev[1]["scoringVersion"]  # one fixture, configuration, policy and corpus
    assert code == 0, err
    aggregate = load(out / "strength-aggregate.json")
    assert [i["probeId"] for i in aggregate["inputs"]] == sorted(e["scoredProbeId"] for e in ev)
    assert aggregate["classes"]["gameability"]["rate"] == 1
    assert aggregate["floorDecisions"]["gameability"]["basis"] == "not-comparable"  # one trial < minimum 3
    assert aggregate["floorDecisions"]["defect"] == {"floor": 0.8, "decision": "does-not-meet", "basis": "no-eligible-probe"}
    assert aggregate["floorDecisions"]["zero-action"]["decision"] == "undeclared"
    assert aggregate["inputs"][[i["probeId"] for i in aggregate["inputs"]].index(ev[0]["scoredProbeId"])]["probeClass"] is None
    # the same artifact twice is refused: a probe counts once
    assert main(["aggregate-strength", "--evidence", evidence[1], "--evidence", evidence[1], "--floors", str(floors),
                 "--policy", str(policy), "--out", str(tmp_path / "twice.json")]) == 4
    assert "strength-inputs-disagree" in capsys.readouterr().err
    bad_floors = _write(tmp_path / "bad-floors.json", {"canary": 0.5})
    assert main(["aggregate-strength", *evidence, "--floors", str(bad_floors), "--policy", str(policy)]) == 5


def test_private_manifest_entries_are_verified_under_the_corpus_root(conformance: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    manifest = conformance / "worked-example" / "reconstructed-inputs" / "isolation-manifest.json"
    record, root = sealed_with_corpus(tmp_path, conformance / "worked-example" / "sealed-run-record.json", manifest)
    trace = root / "traces" / "trial-1.jsonl"
    trace.parent.mkdir(parents=True)
    trace.write_bytes(b'{"step":1}\n')
    entry = {"privateRef": "traces/trial-1.jsonl", "digest": digest_bytes(trace.read_bytes()), "artifactKind": "raw-trace",
             "publicSafeRunId": None, "sanitizationPolicy": None}
    private = _write(tmp_path / "private.json", {"schemaVersion": 1, "parentDigest": None, "revisionCount": 0,
                                                 "entries": [entry]})
    args = [*worked_args(conformance, record, manifest), "--corpus-root", str(root), "--private-manifest", str(private)]
    assert main([*args, "--out=" + str(tmp_path / "ok.json")]) == 2  # the --flag=value form too
    trace.write_bytes(b'{"step":2}\n')
    assert main([*args, "--out", str(tmp_path / "bad.json")]) == 5
    assert "eval-quality: digest-mismatch: PrivateArtifactManifest.entries[0]: " in capsys.readouterr().err
    assert not (tmp_path / "bad.json").exists()
    escaping = _write(tmp_path / "escaping.json", {"schemaVersion": 1, "parentDigest": None, "revisionCount": 0,
                                                   "entries": [entry | {"privateRef": "../private.json"}]})
    args[-1] = str(escaping)
    assert main(args) == 5  # a reference leaving the root never resolves: counted as a mismatch
    assert "digest-mismatch" in capsys.readouterr().err


def test_unqualified_probe_prints_its_failures_then_the_invalid_basis(conformance: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    base = conformance / "worked-example"
    manifest = base / "reconstructed-inputs" / "isolation-manifest.json"
    record, root = sealed_with_corpus(tmp_path, base / "sealed-run-record.json", manifest)
    probe = load(base / "probe.json")
    probe["qualification"]["rollbackVerified"] = False
    args = [*worked_args(conformance, record, manifest), "--corpus-root", str(root), "--out", str(tmp_path / "e.json")]
    args[args.index("--probe") + 1] = str(_write(tmp_path / "probe.json", probe))
    assert main(args) == 3
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(
        "eval-quality: qualification-evidence-unverified: Probe[probeId=P-001].qualification.rollbackVerified: ")
    contract = load(base / "eval-contract.json")
    assert lines[1:] == [f"eval-quality: invalid: oracle {o['id']} resolved infrastructure-error" for o in contract["oracles"]]
    assert not (tmp_path / "e.json").exists()
