"""The leg cache key of an api leg covers its service's staged build exactly as a cli leg's covers its
system: over a copy of the real notes-api suite, changing one mutation changes only the key of the
seeded-fault leg that stages it, changing the server's code changes every leg's key, changing the
``[service]`` declaration changes every key, and the per-call port never enters a key. (The flows
answer a leg from the cache by this key: ``test_http_preflight_flow`` shows a re-run spawning nothing.)"""

from __future__ import annotations

import shutil
from pathlib import Path

from evalquality_core.preflight.plan import plan_preflight
from tasks.preflight import leg_key
from tasks.suites import load_suite
from tests.adapters.http_notes import SUITE


def _keys(suite_dir: Path) -> dict[tuple[str, str], str]:
    """(probe, leg) → key, for every leg of every probe's plan, as the pre-flight flow computes them."""
    suite = load_suite(suite_dir)
    keys = {}
    for probe in suite.probes:
        for leg in plan_preflight(suite.contract, [probe], "r").legs:
            keys[(probe["probeId"], leg.leg_id)] = leg_key(
                leg.request, suite.policy, suite.staged_digest_of_leg(probe, leg.leg_id),
                mcp_policy=suite.mcp_policy, targets=suite.targets,
            )
    return keys


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, path
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_changed_build_changes_exactly_the_keys_of_the_legs_that_run_it(tmp_path: Path) -> None:
    suite_dir = tmp_path / "notes-api"
    shutil.copytree(SUITE, suite_dir)
    before = _keys(suite_dir)
    assert len(before) > 5 and len(set(before.values())) > 5
    assert _keys(suite_dir) == before  # deterministic, whatever port a call will get

    # One mutation: only the seeded-fault leg that stages it re-runs.
    _edit(suite_dir / "mutations" / "content-type-text.json", '\\"text/plain\\")', '\\"text/plain; charset=utf-8\\")')
    after_mutation = _keys(suite_dir)
    changed = {leg for leg in before if before[leg] != after_mutation[leg]}
    suite = load_suite(suite_dir)
    probe = next(probe for probe in suite.probes if probe["probeId"] == "P-003")
    fault_legs = {("P-003", leg.leg_id) for leg in plan_preflight(suite.contract, [probe], "r").legs
                  if leg.purpose == "seeded-fault"}
    assert changed == fault_legs and len(fault_legs) == 1

    # The server's own code: every leg re-runs.
    _edit(suite_dir / "system" / "notes_api.py", "import datetime\n", "import datetime  # rebuilt\n")
    after_code = _keys(suite_dir)
    assert all(after_code[leg] != after_mutation[leg] for leg in before)

    # How the service is started: every leg re-runs.
    _edit(suite_dir / "targets.toml", "ready_timeout_ms = 15000", "ready_timeout_ms = 14000")
    after_service = _keys(suite_dir)
    assert all(after_service[leg] != after_code[leg] for leg in before)
