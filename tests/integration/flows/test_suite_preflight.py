"""One pre-flight per contract (issue 14): the strength run's suite-wide verdict, over the real corpus.

One contract-strength night on a fresh home (every suite pre-flighted once over its contract and every
probe), then the per-probe pre-flight flow on the same home. Checked: the per-probe run spawns nothing
(both scopes send the same requests, so they share the leg cache); every check of a per-probe verdict
reappears with the same outcome in its suite's verdict (the suite-wide verdict reproduces the per-probe
ones where both apply); every probe is scored under its suite's fixture digest; and ``aggregate-strength``
accepts every suite, deciding each declared floor — the weak suite's defect floor is not met.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalquality_core.canonical import scan_json
from flows.contract_strength import run_contract_strength
from flows.preflight import SUITE_ROW, preflight, verdict_path
from flows.settings import load_settings

PROJECT = Path(__file__).resolve().parents[3]
SUITES = PROJECT / "corpus" / "suites"

# One module fixture runs the flow(s) every test here reads: one worker builds it once (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("suite-preflight")]


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """A strength night, then a per-probe pre-flight run, in one fresh eval-quality home."""
    home = tmp_path_factory.mktemp("suite-preflight-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALQUALITY_HOME", str(home))
        patch.delenv("EVALQUALITY_SUITES", raising=False)
        patch.delenv("EVALQUALITY_STRENGTH_BASELINE", raising=False)
        strength_out = home / "strength"
        strength = run_contract_strength(suites_dir=str(SUITES), out_dir=str(strength_out))
        settings = load_settings()
        per_probe_out = home / "per-probe"
        per_probe = preflight(
            suites_dir=str(SUITES),
            out_dir=str(per_probe_out),
            cache_dir=str(settings.leg_cache_dir),
            workspaces_dir=str(settings.workspaces_dir),
            scope="probe",
        )
        yield strength, strength_out, per_probe, per_probe_out


def _read(path: Path) -> dict:
    return scan_json(path.read_bytes(), str(path))


def test_the_strength_night_pre_flights_each_suite_once(nights):
    strength, out, _, _ = nights
    rows = strength.preflight.probes
    assert sorted(row.suite for row in rows) == sorted(strength.documents)
    assert all(row.probe_id == SUITE_ROW for row in rows)
    for name, document in strength.documents.items():
        assert document.preflight == "passed", (name, document.preflight)
        assert not list((out / name).glob("preflight-*.json")), "no per-probe verdict in the strength run"


def test_the_per_probe_pre_flight_shares_the_leg_cache_and_spawns_nothing(nights):
    strength, _, per_probe, _ = nights
    assert strength.preflight.spawned > 0
    assert per_probe.spawned == 0, per_probe.to_json()
    assert per_probe.from_cache == sum(row.legs_planned or 0 for row in per_probe.probes)


def test_the_suite_wide_verdict_reproduces_every_per_probe_check(nights):
    _, strength_out, per_probe, per_probe_out = nights
    compared = 0
    for row in per_probe.probes:
        suite_verdict = _read(verdict_path(strength_out, row.suite, SUITE_ROW))
        probe_verdict = _read(verdict_path(per_probe_out, row.suite, row.probe_id))
        suite_checks = [json.dumps(check, sort_keys=True) for check in suite_verdict["checks"]]
        for check in probe_verdict["checks"]:
            assert json.dumps(check, sort_keys=True) in suite_checks, (row.suite, row.probe_id, check)
            compared += 1
        assert probe_verdict["passed"] == suite_verdict["passed"] is True
    assert compared > 100


def test_every_probe_is_scored_under_its_suites_fixture_digest(nights):
    strength, out, _, _ = nights
    for name, document in strength.documents.items():
        digest = _read(out / name / "preflight.json")["fixtureDigest"]
        assert document.fixture_digest == digest
        for evidence in (out / name).glob("evidence-*.json"):
            assert _read(evidence)["scoringVersionInputs"]["fixtureDigest"] == digest, evidence.name


def test_aggregate_strength_accepts_every_suite_and_decides_its_floors(nights):
    strength, out, _, _ = nights
    # Every suite of the corpus, read from its folder (adding a suite updates what this checks).
    assert set(strength.documents) == {path.parent.name for path in SUITES.glob("*/contract.json")}
    for name, document in strength.documents.items():
        assert document.aggregate_refusal is None, (name, document.aggregate_refusal)
        assert (out / name / "strength-aggregate.json").is_file()
        assert document.floors == {"defect": 0.8}
        defect = document.aggregate.defect
        assert defect is not None and defect.exercised >= 1, name  # every suite exercises a defect probe
    decisions = {name: d.floor_decisions["defect"].describe() for name, d in strength.documents.items()}
    assert decisions["notes-weak"] == "does-not-meet (rate-below-floor)"
    weak = strength.documents["notes-weak"].aggregate.defect
    assert (weak.caught, weak.exercised) == (3, 4)  # the silent write is exercised and missed
    assert strength.documents["notes-weak"].probes["P-001"].strength.defect.caught == 0
    for name in ("review", "trace"):
        assert decisions[name] == "meets (rate-meets-floor)", name


def test_trace_keeps_one_refused_probe_beside_a_qualifying_one(nights):
    strength, _, _, _ = nights
    probes = strength.documents["trace"].probes
    assert probes["P-003"].qualification is None and probes["P-003"].strength.defect.caught == 1
    assert "condition-artifact-channel-contract-local" in (probes["P-001"].qualification or [])
