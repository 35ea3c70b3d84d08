"""The shared watchdog's own failure modes (``process_group`` docstring), each with real child processes:
a killed leg watchdog, a killed shared watchdog (legs unaffected, the next leg starts a new one, the host's
SIGKILL still ends every leg), legs spawned from many threads at once, and a host that forks."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from evalquality_core.adapters import process_group
from evalquality_core.adapters.process_group import LegProcess, live_process_groups, watchdog_pid
from tests.adapters.command_subject import FIXTURES
from tests.adapters.test_command_line import is_dead, process_state
from tests.adapters.test_trust_boundary import _all_dead_within, _pids

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HOSTILE = str(FIXTURES / "hostile.py")


def _wait_until(condition, seconds: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} never held"
        time.sleep(0.02)


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def _run(argv: list[str], *, stdin: bytes | None = None, cwd: str = "/") -> tuple[int, bytes]:
    """One leg to its end, as an adapter drives it: its exit code and stdout."""
    leg = LegProcess.launch(argv, cwd, {"PATH": "/usr/bin:/bin"}, stdin=stdin is not None)
    try:
        if leg.stdin is not None:
            leg.stdin.write(stdin or b"")
            leg.stdin.close()
        out = leg.stdout.read()
        while leg.read_exit() is None:
            select.select([leg.lifeline], [], [], 5)
        return leg.read_exit(), out  # type: ignore[return-value]
    finally:
        leg.close()


def _fork_forever(tmp_path: Path) -> tuple[LegProcess, Path]:
    """A leg whose target keeps starting setsid grandchildren; waits until a few generations exist."""
    pid_file = tmp_path / "pids"
    leg = LegProcess.launch([sys.executable, HOSTILE, "fork-forever", str(pid_file)], str(tmp_path), {}, stdin=False)
    _wait_until(lambda: len(_pids(pid_file)) >= 3, what="three generations of the fork-forever tree")
    return leg, pid_file


def test_every_leg_of_a_process_shares_one_watchdog(tmp_path: Path) -> None:
    assert _run(["/bin/echo", "one"]) == (0, b"one\n")
    first = watchdog_pid()
    assert first is not None and not is_dead(first)
    assert _run(["/bin/sh", "-c", "exit 7"]) == (7, b"")
    assert _run(["/bin/cat"], stdin=b"fed") == (0, b"fed")
    assert watchdog_pid() == first


def test_a_killed_leg_watchdog_leaves_no_orphan_running(tmp_path: Path) -> None:
    leg, pid_file = _fork_forever(tmp_path)
    try:
        target = leg.pid
        leg_watchdog = _parent_of(target)
        assert leg_watchdog not in (os.getpid(), watchdog_pid())
        os.kill(leg_watchdog, signal.SIGKILL)
        # Its orphans (the target, setsid generations) fall to the shared watchdog, which kills them.
        _all_dead_within(pid_file, 5)
        _wait_until(lambda: select.select([leg.lifeline], [], [], 0)[0] != [], 5, "the lifeline's end-of-file")
        assert leg.read_exit() == -signal.SIGKILL
    finally:
        leg.close()
    assert _run(["/bin/echo", "after"]) == (0, b"after\n")  # the shared watchdog serves on


def _children_of(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_a_killed_spare_leg_watchdog_is_replaced_when_the_next_leg_comes(tmp_path: Path) -> None:
    assert _run(["/bin/true"]) == (0, b"")
    shared = watchdog_pid()
    assert shared is not None
    _wait_until(lambda: len(_children_of(shared)) == 1, 10, "only the spare left")  # the last leg's reaped
    (spare,) = _children_of(shared)
    os.kill(spare, signal.SIGKILL)
    _wait_until(lambda: spare not in _children_of(shared), 10, "the spare reaped")
    assert _run(["/bin/echo", "served"]) == (0, b"served\n")
    assert watchdog_pid() == shared


def test_a_killed_shared_watchdog_leaves_running_legs_intact_and_the_next_leg_starts_a_new_one(tmp_path: Path) -> None:
    leg, pid_file = _fork_forever(tmp_path)
    try:
        killed = watchdog_pid()
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        _wait_until(lambda: is_dead(killed), 10, "the shared watchdog's death")
        assert leg.read_exit() is None and not is_dead(leg.pid)  # the leg runs on, still watched
        assert _run(["/bin/echo", "restarted"]) == (0, b"restarted\n")
        assert watchdog_pid() not in (None, killed)
        leg.kill()
        _wait_until(lambda: leg.read_exit() is not None, 10, "the exit report")
        assert leg.read_exit() == -signal.SIGKILL
        _all_dead_within(pid_file, 5)
    finally:
        leg.close()


def test_legs_spawned_from_many_threads_at_once_each_get_their_own_streams(tmp_path: Path) -> None:
    _run(["/bin/true"])
    shared = watchdog_pid()
    results: dict[tuple[int, int], tuple[int, bytes]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker(thread: int) -> None:
        try:
            start.wait()
            for round_ in range(5):
                token = f"t{thread}-r{round_}"
                results[thread, round_] = _run(["/bin/sh", "-c", f'read x; echo "$x {token}"; exit {thread}'], stdin=b"in\n")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert results == {(t, r): (t, f"in t{t}-r{r}\n".encode()) for t in range(8) for r in range(5)}
    assert watchdog_pid() == shared
    assert live_process_groups() == frozenset()


def test_a_forked_child_forgets_the_parents_legs_and_starts_its_own_watchdog(tmp_path: Path) -> None:
    leg, pid_file = _fork_forever(tmp_path)
    try:
        parents = watchdog_pid()
        report_read, report_write = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the forked child, reports through the pipe
            code = 1
            try:
                fine = live_process_groups() == frozenset() and watchdog_pid() is None
                fine = fine and _run(["/bin/echo", "child"]) == (0, b"child\n")
                fine = fine and watchdog_pid() not in (None, parents)
                process_group.shutdown_watchdog()
                os.write(report_write, b"ok" if fine else b"wrong")
                code = 0
            finally:
                os._exit(code)
        os.close(report_write)
        _, status = os.waitpid(child, 0)
        with os.fdopen(report_read, "rb") as report:
            assert report.read() == b"ok"
        assert os.waitstatus_to_exitcode(status) == 0
        # The child's exit killed nothing of ours: the parent's leg and watchdog run on.
        assert leg.read_exit() is None and not is_dead(leg.pid)
        assert watchdog_pid() == parents and leg.pid in live_process_groups()
    finally:
        leg.close()
    _all_dead_within(pid_file, 5)


_FORKING_HOST = textwrap.dedent(
    """
    import os, sys, threading, time
    sys.path.insert(0, {root!r})
    from evalquality_core.adapters.command_line import CommandLineAdapter
    from evalquality_core.adapters.process_group import watchdog_pid
    from evalquality_core.probe.policy import parse_command_target_policy
    from tests.adapters.command_subject import authorization, request
    policy = parse_command_target_policy({{"authorizations": [authorization("hostile", "hostile.py", maxElapsedMs=600000)]}})
    adapter = CommandLineAdapter(policy, workdir={work!r})
    threading.Thread(target=lambda: adapter.probe(request("hostile", argument={{"words": ["fork-forever", {pids!r}]}})),
                     daemon=True).start()
    while not os.path.exists({pids!r}) or len(open({pids!r}).read().split()) < 3:
        time.sleep(0.02)
    if {fork!r} and os.fork() == 0:
        time.sleep(600)  # a child that outlives the host, holding whatever it inherited
        os._exit(0)
    open({ready!r}, "w").write(str(watchdog_pid()))
    time.sleep(600)
    """
)


@pytest.mark.parametrize("how", ["shared-watchdog-killed-first", "host-forked-a-lingering-child"])
def test_a_host_killed_by_sigkill_still_takes_every_leg_with_it(tmp_path: Path, how: str) -> None:
    pid_file, ready = tmp_path / "pids", tmp_path / "ready"
    script = _FORKING_HOST.format(root=str(PROJECT_ROOT), work=str(tmp_path), pids=str(pid_file), ready=str(ready),
                                  fork=how == "host-forked-a-lingering-child")
    host = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    lingering: list[int] = []
    try:
        _wait_until(lambda: ready.exists() and ready.read_text() != "" or host.poll() is not None, 60, "the host's leg")
        assert host.poll() is None
        if how == "shared-watchdog-killed-first":
            shared = int(ready.read_text())
            os.kill(shared, signal.SIGKILL)
            _wait_until(lambda: is_dead(shared), 10, "the shared watchdog's death")
        else:
            lingering = [pid for pid in _group_members(host.pid) if pid != host.pid and _parent_of(pid) == host.pid]
            assert lingering, "the host's forked child is running"
    finally:
        host.kill()  # SIGKILL: no atexit, no finally, nothing of the host runs
        host.wait()
    try:
        assert len(_pids(pid_file)) >= 3
        _all_dead_within(pid_file, 5)
    finally:
        for pid in lingering:
            os.kill(pid, signal.SIGKILL)


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def test_a_leaders_exit_is_seen_before_its_stopped_watchdog_reports_it(tmp_path: Path) -> None:
    """``leader_exited`` asks the kernel: with the leg watchdog stopped (it can neither reap the leader nor
    report), the leader's exit still shows, as a zombie, while ``read_exit`` has no news. This is what lets
    a service adapter refuse a daemonizing service on a host too busy to schedule the watchdog."""
    leg = LegProcess.launch([sys.executable, "-c", "import sys; sys.stdin.read()"], str(tmp_path), {}, stdin=True)
    watchdog = _parent_of(leg.pid)
    try:
        assert not leg.leader_exited()
        os.kill(watchdog, signal.SIGSTOP)
        assert leg.stdin is not None
        leg.stdin.close()  # end of input: the leader exits
        _wait_until(lambda: process_state(leg.pid) == "Z", 10, "the leader's exit")
        assert leg.read_exit() is None  # the stopped watchdog said nothing
        assert leg.leader_exited()
    finally:
        os.kill(watchdog, signal.SIGCONT)
        leg.close()
    assert process_state(leg.pid) is None  # reaped once the watchdog ran again
