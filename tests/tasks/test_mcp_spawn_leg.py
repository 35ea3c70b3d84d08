"""``spawn-leg`` (its body) answers an mcp leg through the stdio MCP adapter: one tool-server session
in a fresh staged workspace, the answer cached under a key that names the tool server's entry."""

from __future__ import annotations

import sys
from pathlib import Path

from evalquality_core.probe.targets import parse_targets
from tasks.preflight import LegJob, leg_call, leg_key, spawn_leg, target_entry
from tests.adapters.test_mcp_preflight import SUITE, stage


def _registry_policies() -> tuple:
    registry = parse_targets((SUITE / "targets.toml").read_text(encoding="utf-8"), "targets.toml")
    return registry.to_policy({"python": sys.executable}), registry.to_mcp_policy({"python": sys.executable})


REQUEST = {
    "kind": "mcp", "probeId": "leg-first-title", "interfaceId": "notes-tool-server", "operationId": "create-note",
    "toolName": "create_note", "channels": {"arguments": {"title": "the first note"}},
}


def test_an_mcp_leg_runs_once_and_its_twin_is_answered_from_the_cache(tmp_path: Path) -> None:
    policy, mcp_policy = _registry_policies()
    assert target_entry(policy, REQUEST, mcp_policy)["tools"] == ["search_notes", "create_note"]
    assert target_entry(policy, REQUEST) == {}  # no tool server registered: the adapter will deny it
    key = leg_key(REQUEST, policy, "sha256:" + "0" * 64, mcp_policy=mcp_policy)
    assert key != leg_key(REQUEST, policy, "sha256:" + "0" * 64)
    staged: list[Path] = []

    def stager(workspace: Path) -> None:
        staged.append(workspace)
        stage(workspace)

    def job(probe_id: str) -> LegJob:
        return LegJob(
            request={**REQUEST, "probeId": probe_id}, key=key, policy=policy, stage=stager,
            cache_dir=str(tmp_path / "cache"), cache_mode="default", invocation="inv-mcp",
            workspaces_dir=str(tmp_path / "workspaces"), mcp_policy=mcp_policy,
        )

    assert leg_call(REQUEST) == " (create_note)"
    first_state = spawn_leg.fn("notes-tools", "P-001", "leg-first-title", job("leg-first-title"), leg_call(REQUEST))
    first = first_state.result()
    assert first.source == "spawned" and first_state.name == "Completed"
    assert first_state.message.startswith("tool result in ")
    assert first.observation["kind"] == "mcp" and first.observation["isError"] is False
    assert first.observation["result"]["value"] == {"ok": True, "noteId": "n-the-first-note",
                                                    "filedAt": "2026-01-01T00:00:01Z", "noteCount": 3}
    twin_state = spawn_leg.fn("notes-tools", "P-002", "twin", job("twin"), leg_call(REQUEST))
    twin = twin_state.result()  # the same invocation: it collapsed onto the first leg's one session
    assert twin.source == "collapsed" and twin.observation["probeId"] == "twin"
    assert (twin_state.name, twin_state.message) == ("Cached", "collapsed onto notes-tools/P-001/leg-first-title (create_note)")
    assert len(staged) == 1
    assert list((tmp_path / "workspaces").iterdir()) == []


def test_an_mcp_leg_without_a_registered_server_is_a_denial(tmp_path: Path) -> None:
    policy, _ = _registry_policies()
    job = LegJob(
        request=REQUEST, key=leg_key(REQUEST, policy, "sha256:" + "1" * 64), policy=policy, stage=stage,
        cache_dir=str(tmp_path / "cache"), cache_mode="default", invocation="inv-mcp-2",
        workspaces_dir=str(tmp_path / "workspaces"),
    )
    failed = spawn_leg.fn("notes-tools", "P-001", "leg-first-title", job)
    assert failed.is_failed()
    assert (failed.data.code, failed.data.reason) == ("forbidden-target", "interface-not-authorized")
