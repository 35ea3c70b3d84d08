"""``eval-quality preflight`` end to end over the skill-defect chain (read in place): exit codes, output, errors."""

from __future__ import annotations

import json

from evalquality_core.cli.main import main
from tests.core.preflight.chains import by_leg, load


def _args(conformance, observations: str, out: str, run_id: str = "skill-defect-run-0001") -> list[str]:
    chain = conformance / "chains" / "skill-defect"
    return [
        "preflight",
        "--contract", str(chain / "eval-contract.json"),
        "--probes", str(chain / "probe.json"),
        "--observations", observations,
        "--run-id", run_id,
        "--out", out,
    ]


def test_passed_exits_0_and_writes_the_stored_verdict(conformance, tmp_path, capsys):
    observations = conformance / "chains" / "skill-defect" / "reconstructed-inputs" / "preflight-observations.json"
    code = main(_args(conformance, str(observations), str(tmp_path)))
    assert code == 0
    written = (tmp_path / "preflight-verdict.json").read_bytes()
    assert written.endswith(b"}\n") and written.count(b"\n") == 1  # canonical JSON plus one newline
    verdict = json.loads(written)
    stored = load(conformance, "skill-defect/preflight-verdict.json")
    assert verdict["fixtureDigest"] == stored["fixtureDigest"]
    assert [{k: v for k, v in c.items() if k != "interfaceId"} for c in verdict["checks"]] == stored["checks"]
    stderr = capsys.readouterr().err.splitlines()
    assert stderr[0] == 'eval-quality: preflight: skill-defect-run-0001: leg "witness-frontend": planned'
    assert stderr[-1] == "eval-quality: preflight: skill-defect-run-0001: reduced 5 leg(s): passed"


def test_failed_exits_3_and_still_writes(conformance, tmp_path):
    observations = load(conformance, "skill-defect/reconstructed-inputs/preflight-observations.json")
    by_leg(observations)["preflight-control-observe"]["exitCode"] = 1
    path = tmp_path / "observations.json"
    path.write_text(json.dumps(observations))
    out = tmp_path / "verdict.json"
    assert main(_args(conformance, str(path), str(out))) == 3
    verdict = json.loads(out.read_text())
    assert verdict["passed"] is False


def test_whitespace_run_id_and_missing_file_are_usage_errors(conformance, tmp_path, capsys):
    observations = conformance / "chains" / "skill-defect" / "reconstructed-inputs" / "preflight-observations.json"
    assert main(_args(conformance, str(observations), str(tmp_path), run_id="   ")) == 64
    assert main(_args(conformance, str(tmp_path / "nope.json"), str(tmp_path))) == 64
    assert "eval-quality: usage:" in capsys.readouterr().err


def test_duplicate_echo_is_a_fault(conformance, tmp_path, capsys):
    observations = load(conformance, "skill-defect/reconstructed-inputs/preflight-observations.json")
    path = tmp_path / "observations.json"
    path.write_text(json.dumps([*observations, observations[0]]))
    assert main(_args(conformance, str(path), str(tmp_path))) == 5
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        "eval-quality: port-contract-violation: PreflightVerdict: two observations echoed"
    )


def test_probe_at_another_version_is_refused_before_parsing(conformance, tmp_path, capsys):
    probe = load(conformance, "skill-defect/probe.json")
    probe["schemaVersion"] = 7
    probe["unknownKey"] = True  # would fail parsing; the stamp is compared first
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(probe))
    observations = conformance / "chains" / "skill-defect" / "reconstructed-inputs" / "preflight-observations.json"
    args = _args(conformance, str(observations), str(tmp_path / "out.json"))
    args[args.index("--probes") + 1] = str(path)
    assert main(args) == 5
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        "eval-quality: schema-version-mismatch: Probe[probeId=P-001].schemaVersion:"
    )
    assert not (tmp_path / "out.json").exists()


def test_an_unparseable_probe_is_reported_at_probe(conformance, tmp_path, capsys):
    """Issue 10 / §2.6: a probe that fails its schema is schema-parse-failure at `Probe` (not `Probe[0]`)."""
    probe = load(conformance, "skill-defect/probe.json")
    probe["unknownKey"] = True
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(probe))
    observations = conformance / "chains" / "skill-defect" / "reconstructed-inputs" / "preflight-observations.json"
    args = _args(conformance, str(observations), str(tmp_path / "out.json"))
    args[args.index("--probes") + 1] = str(path)
    assert main(args) == 5
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("eval-quality: schema-parse-failure: Probe: probe [0] at Probe.unknownKey:"), last
    assert not (tmp_path / "out.json").exists()


def test_a_contract_without_a_numeric_stamp_is_a_parse_failure(conformance, tmp_path, capsys):
    """Issue 10: a missing or non-numeric contract stamp is schema-parse-failure at EvalContract in pre-flight."""
    observations = conformance / "chains" / "skill-defect" / "reconstructed-inputs" / "preflight-observations.json"
    for stamp in (None, "5", "missing"):
        contract = load(conformance, "skill-defect/eval-contract.json")
        if stamp == "missing":
            del contract["schemaVersion"]
        else:
            contract["schemaVersion"] = stamp
        path = tmp_path / "contract.json"
        path.write_text(json.dumps(contract))
        args = _args(conformance, str(observations), str(tmp_path / "out.json"))
        args[args.index("--contract") + 1] = str(path)
        assert main(args) == 5
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("eval-quality: schema-parse-failure: EvalContract: schemaVersion is"), last
