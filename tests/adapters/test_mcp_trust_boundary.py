"""A tool-server session is a leg (README "Trust boundary"): a hostile server
(``tests/fixtures/mcp/hostile_server.py``, a real process) leaves setsid and double-forked descendants
behind, dies holding its stdout through a grandchild, or keeps forking while its host is SIGKILLed;
nothing of it outlives the session, or the host."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.adapters.process_group import live_process_groups
from evalquality_core.probe.mcp_policy import parse_mcp_target_policy
from tests.adapters.mcp_subject import FIXTURES, authorization, request
from tests.adapters.test_command_line import is_dead

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HOSTILE = FIXTURES / "hostile_server.py"
TOOLS = ["setsid_grandchild", "double_fork", "die_leaving_grandchild", "fork_forever"]


def hostile_adapter(work: Path, **overrides: Any) -> McpStdioAdapter:
    entry = authorization(server=HOSTILE, tools=TOOLS, **overrides)
    return McpStdioAdapter(parse_mcp_target_policy({"authorizations": [entry]}), workdir=work)


def _alive(pid: int) -> bool:
    return not is_dead(pid)


def _pids(pid_file: Path) -> set[int]:
    return {int(line) for line in pid_file.read_text().split()} if pid_file.exists() else set()


def _all_dead_within(pids: set[int], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    alive = {pid for pid in pids if _alive(pid)}
    for pid in alive:  # never leave them running, whatever the assertion says
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"still running: {sorted(alive)}"


@pytest.mark.parametrize("tool", ["setsid_grandchild", "double_fork"])
def test_a_descendant_that_left_the_servers_group_is_gone_after_the_session(tool: str, tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    pid_file.touch()
    observation = hostile_adapter(tmp_path).probe(request(tool, {"pidfile": str(pid_file)}))
    assert observation.is_error is False
    escaped = _pids(pid_file)
    assert len(escaped) == 1
    (pid,) = escaped
    assert os.getpgid(os.getpid()) != pid  # it really is a group of its own, not the test's
    # Gone by the time probe() returned: the session's teardown kills the whole tree and reaps.
    assert not _alive(pid)
    assert live_process_groups() == frozenset()


def test_a_server_dying_while_a_grandchild_holds_its_stdout_is_observed_with_its_exit_code(tmp_path: Path) -> None:
    """Without the watchdog the session would wait for end-of-file on stdout until the elapsed cap."""
    pid_file = tmp_path / "pids"
    adapter = hostile_adapter(tmp_path, maxElapsedMs=60000)
    started = time.monotonic()
    observation = adapter.probe(request("die_leaving_grandchild", {"pidfile": str(pid_file), "code": 7}))
    assert (observation.is_error, observation.exit_code) == (True, 7)
    assert time.monotonic() - started < 30
    assert not any(_alive(pid) for pid in _pids(pid_file))


_HOST = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
    from evalquality_core.probe.mcp_policy import parse_mcp_target_policy
    from tests.adapters.mcp_subject import authorization, request
    entry = authorization(server=Path({server!r}), tools=["fork_forever"], maxElapsedMs=600000)
    McpStdioAdapter(parse_mcp_target_policy({{"authorizations": [entry]}}), workdir={work!r}).probe(
        request("fork_forever", {{"pidfile": {pids!r}}}))
    """
)


def test_a_host_killed_by_sigkill_mid_session_takes_the_server_tree_with_it_within_seconds(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    script = _HOST.format(root=str(PROJECT_ROOT), server=str(HOSTILE), work=str(tmp_path), pids=str(pid_file))
    host = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while len(_pids(pid_file)) < 4:  # the server plus a few generations of setsid forks
            assert host.poll() is None, "the host ended before the session was under way"
            assert time.monotonic() < deadline, "the server never started forking"
            time.sleep(0.05)
    finally:
        host.kill()  # SIGKILL: no atexit, no finally, nothing of the host runs
        host.wait()
    _all_dead_within(_pids(pid_file), 5)
