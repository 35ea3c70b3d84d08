"""Per-leg workspaces: fresh, removed afterwards, and reclaimed by a later run when their owner died."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
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


_ORPHAN_A_LEG = """
import os, subprocess, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from tasks.workspace import leg_workspace
with leg_workspace(Path({root_dir!r})) as ws:
    (ws / "work").mkdir()
    # A leg as the adapter starts it: its own session, a grandchild in the same group, then the run dies.
    leg = subprocess.Popen(["sh", "-c", "sleep 300 & echo $! > grandchild; sleep 300"],
                           cwd=ws / "work", start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (ws / "work" / "grandchild").exists() or not (ws / "work" / "grandchild").read_text().strip():
        pass
    print(leg.pid, (ws / "work" / "grandchild").read_text().strip(), flush=True)
    os._exit(0)  # as a SIGKILL of the flow would: the leg's watchdog dies with it
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_reclaiming_kills_a_leg_the_dead_run_left_running_grandchildren_included(tmp_path):
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", _ORPHAN_A_LEG.format(root=root, root_dir=str(tmp_path))],
        check=True, capture_output=True, text=True, timeout=60,
    )
    leg, grandchild = (int(pid) for pid in done.stdout.split())
    try:
        assert _running(leg) and _running(grandchild), "the orphaned leg must still run before reclaiming"
        assert len(reclaim_workspaces(tmp_path)) == 1
        deadline = time.monotonic() + 10
        while (_running(leg) or _running(grandchild)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(leg) and not _running(grandchild)
        assert list(tmp_path.iterdir()) == []
    finally:
        for pid in (leg, grandchild):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
