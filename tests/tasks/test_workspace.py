"""Per-leg workspaces: fresh, removed afterwards, and reclaimed by a later run when their owner died."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tasks.workspace import leg_workspace, reclaim_workspaces

_LEAVE_ONE = """
import os, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from tasks.workspace import leg_workspace
with leg_workspace(Path({root_dir!r})) as ws:
    (ws / "artifact").write_text("x")
    os._exit(0)  # dies inside the leg, as a SIGKILL would: no cleanup runs
"""


def test_each_leg_gets_a_fresh_directory_removed_afterwards(tmp_path):
    with leg_workspace(tmp_path) as first, leg_workspace(tmp_path) as second:
        assert first != second and list(first.iterdir()) == [] and list(second.iterdir()) == []
        (first / "verdict.json").write_text("{}")
    assert list(tmp_path.iterdir()) == []


def test_workspaces_of_a_dead_owner_are_reclaimed_and_live_ones_kept(tmp_path):
    root = str(Path(__file__).resolve().parents[2])
    subprocess.run([sys.executable, "-c", _LEAVE_ONE.format(root=root, root_dir=str(tmp_path))], check=True)
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and (left[0] / "artifact").exists()
    with leg_workspace(tmp_path) as mine:
        assert reclaim_workspaces(tmp_path) == left
        assert mine.exists()
    assert list(tmp_path.iterdir()) == []
