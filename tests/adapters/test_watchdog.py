"""The shared watchdog's own failure modes (``process_group`` docstring), each with real child processes:
a killed leg watchdog, a killed shared watchdog (legs unaffected, the next leg starts a new one, the host's
SIGKILL still ends every leg), legs spawned from many threads at once, and a host that forks."""

from __future__ import annotations

import contextlib
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


def _one_leg(argv: list[str], cwd: str = "/") -> tuple[int, bytes, int]:
    """One leg to its end: its exit code, its stdout and the pid of the leg watchdog that ran it."""
    # The target waits for its stdin to close, so its parent can be read while it surely runs.
    leg = LegProcess.launch(["/bin/sh", "-c", 'read _ ; exec "$@"', "sh", *argv], cwd, {"PATH": "/usr/bin:/bin"}, stdin=True)
    try:
        leg_watchdog = _parent_of(leg.pid)
        assert leg.stdin is not None
        leg.stdin.close()
        out = leg.stdout.read()
        while leg.read_exit() is None:
            select.select([leg.lifeline], [], [], 5)
        return leg.read_exit(), out, leg_watchdog  # type: ignore[return-value]
    finally:
        leg.close()


def test_killed_idle_and_spare_leg_watchdogs_are_replaced_when_the_next_leg_comes(tmp_path: Path) -> None:
    process_group.shutdown_watchdog()  # a new shared watchdog: its only children are ours to count
    code, _, idle = _one_leg(["/bin/true"])
    assert code == 0
    shared = watchdog_pid()
    assert shared is not None
    # The leg's watchdog waits for another leg; the spare was forked ahead of need.
    _wait_until(lambda: len(_children_of(shared)) == 2, 10, "the idle leg watchdog and the spare")
    (spare,) = [pid for pid in _children_of(shared) if pid != idle]
    for pid in (idle, spare):
        os.kill(pid, signal.SIGKILL)
    _wait_until(lambda: not {idle, spare} & set(_children_of(shared)), 10, "both reaped")
    code, out, served_by = _one_leg(["/bin/echo", "served"])
    assert (code, out) == (0, b"served\n")
    assert served_by not in (idle, spare)
    assert watchdog_pid() == shared


def test_a_leg_watchdog_serves_the_next_leg_only_after_its_target_exited_on_its_own(tmp_path: Path) -> None:
    process_group.shutdown_watchdog()
    _, _, first = _one_leg(["/bin/true"])
    _, _, second = _one_leg(["/bin/sh", "-c", "exit 3"])
    assert second == first  # no fork for the second leg: the first one's watchdog ran it
    assert not is_dead(first)
    # A leg that was killed (here: closed while its target still ran) ends its watchdog with it.
    leg = LegProcess.launch(["/bin/sleep", "30"], "/", {"PATH": "/usr/bin:/bin"}, stdin=False)
    killed_with = _parent_of(leg.pid)
    assert killed_with == first
    assert leg.close() == -signal.SIGKILL
    _wait_until(lambda: is_dead(killed_with), 5, "the killed leg's watchdog's exit")
    _, _, third = _one_leg(["/bin/true"])
    assert third != killed_with


_STATE_PROBE = (
    "import os; status = dict(line.split(':', 1) for line in open('/proc/self/status'));"
    "print(sorted(os.listdir('/proc/self/fd')), os.getcwd(), sorted(os.environ),"
    " [status[key].strip() for key in ('SigIgn', 'SigBlk', 'NoNewPrivs')], os.getpgid(0) == os.getpid(),"
    " os.getsid(0) == os.getpid(), oct(os.umask(0o22)))"
)


def test_a_target_on_a_reused_leg_watchdog_starts_as_on_a_fresh_one(tmp_path: Path) -> None:
    """Nothing of an earlier leg carries over to the next target: the same open descriptors, signal
    dispositions and mask, session, group, directory, environment and umask as a freshly forked one."""
    process_group.shutdown_watchdog()
    fresh_code, fresh, fresh_watchdog = _one_leg([sys.executable, "-c", _STATE_PROBE], str(tmp_path))
    # The earlier leg leaves a setsid grandchild behind (killed when that leg ends).
    _one_leg([sys.executable, HOSTILE, "setsid", str(tmp_path / "pid")], str(tmp_path))
    reused_code, reused, reused_watchdog = _one_leg([sys.executable, "-c", _STATE_PROBE], str(tmp_path))
    assert reused_watchdog == fresh_watchdog
    assert (fresh_code, reused_code) == (0, 0)
    assert reused == fresh and b"True" in fresh


def test_a_late_kill_of_an_ended_leg_never_reaches_the_leg_its_watchdog_serves_next(tmp_path: Path) -> None:
    process_group.shutdown_watchdog()
    ended = LegProcess.launch(["/bin/cat"], "/", {"PATH": "/usr/bin:/bin"}, stdin=True)
    first = _parent_of(ended.pid)
    assert ended.stdin is not None
    ended.stdin.close()  # end of input: the target exits on its own
    while ended.read_exit() is None:
        select.select([ended.lifeline], [], [], 5)
    assert ended.close() == 0
    nxt = LegProcess.launch(["/bin/sh", "-c", "sleep 0.5; exit 5"], "/", {"PATH": "/usr/bin:/bin"}, stdin=False)
    try:
        assert _parent_of(nxt.pid) == first
        ended.kill()  # as another thread's abort would, holding the ended leg
        while nxt.read_exit() is None:
            select.select([nxt.lifeline], [], [], 5)
        assert nxt.read_exit() == 5
    finally:
        nxt.close()


_IDLE_HOST = textwrap.dedent(
    """
    import sys, select
    sys.path.insert(0, {root!r})
    from evalquality_core.adapters.process_group import LegProcess, watchdog_pid
    pids = []
    for _ in range(2):
        leg = LegProcess.launch(["/bin/sleep", "0.3"], "/", {{}}, stdin=False)
        pids.append(int(open(f"/proc/{{leg.pid}}/stat").read().rsplit(")", 1)[1].split()[1]))
        while leg.read_exit() is None:
            select.select([leg.lifeline], [], [], 5)
        leg.close()
    open({ready!r}, "w").write(" ".join(map(str, [watchdog_pid(), *pids])))
    import time; time.sleep(600)
    """
)


def test_idle_leg_watchdogs_end_with_a_host_killed_by_sigkill(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    host = subprocess.Popen([sys.executable, "-c", _IDLE_HOST.format(root=str(PROJECT_ROOT), ready=str(ready))],
                            start_new_session=True)
    try:
        _wait_until(lambda: ready.exists() and ready.read_text() != "" or host.poll() is not None, 60, "the host's legs")
        assert host.poll() is None
        watchdogs = [int(pid) for pid in ready.read_text().split()]
        assert all(not is_dead(pid) for pid in watchdogs)  # the shared one and the idle leg watchdog
    finally:
        host.kill()
        host.wait()
    _wait_until(lambda: all(is_dead(pid) for pid in watchdogs), 5, "every watchdog's exit")


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


def test_reading_the_launch_answer_leaves_a_quick_exit_report_on_the_lifeline() -> None:
    """A target that exits at once may have its exit report sent right behind its pid. The host takes
    only the pid's line, so the lifeline stays readable for the report: a leg watchdog that serves on
    after a leg never closes the socket, so nothing else would wake a selector for it."""
    import socket

    watchdog_end, host_end = socket.socketpair()
    with watchdog_end, host_end:
        watchdog_end.sendall(b'{"pid": 4321, "subreaper": true}\n{"exit": 0}\n')
        assert LegProcess._first_answer(host_end) == {"pid": 4321, "subreaper": True}
        assert select.select([host_end], [], [], 0)[0] == [host_end]
        assert host_end.recv(100) == b'{"exit": 0}\n'


# Targets run as our user, so they can stop our watchdogs (SIGSTOP cannot be ignored). A stopped watchdog
# would answer no launch and no kill: the host resumes it (``process_group._resume``), once when one is
# slow to answer and always before asking a leg watchdog to kill.
# Told when to by its stdin, so the host has surely read the launch answer (a stop before it would be
# resumed by the host's one-second check, and the test would wait for a stop that is over).
_STOP_OWN_WATCHDOG = "import os, signal, sys, time; sys.stdin.readline(); os.kill(os.getppid(), signal.SIGSTOP); time.sleep(60)"
_STOP_SIBLINGS = (
    "import os, signal\n"
    "me = os.getppid()\n"
    "shared = int(open(f'/proc/{me}/stat').read().rsplit(')', 1)[1].split()[1])\n"
    "for pid in open(f'/proc/{shared}/task/{shared}/children').read().split():\n"
    "    if int(pid) != me:\n"
    "        os.kill(int(pid), signal.SIGSTOP)\n"
    "        print(pid)\n"
)
_STOP_SHARED = (
    "import os, signal\n"
    "shared = int(open(f'/proc/{os.getppid()}/stat').read().rsplit(')', 1)[1].split()[1])\n"
    "os.kill(shared, signal.SIGSTOP)\n"
    "print(shared)\n"
)


def _held() -> LegProcess:
    """A leg whose target runs until its stdin closes."""
    return LegProcess.launch(["/bin/sh", "-c", "read _ ; echo held"], "/", {"PATH": "/usr/bin:/bin"}, stdin=True)


def _release_all(legs: list[LegProcess]) -> list[bytes]:
    """Close each held leg's stdin, let its target exit on its own, and end the leg: their outputs."""
    outs = []
    for leg in legs:
        assert leg.stdin is not None
        leg.stdin.close()
        outs.append(leg.stdout.read())
        while leg.read_exit() is None:
            select.select([leg.lifeline], [], [], 5)
        assert leg.close() == 0
    return outs


def _signal_leftovers(pids: list[int], signum: int) -> None:
    """After a stop test, pass or fail: send ``signum`` to whichever of ``pids`` still lives, so a failed
    test leaves no stopped watchdog and no looping stopper behind (the assertions come before this)."""
    for pid in pids:
        if not is_dead(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signum)


def _told_to_stop(code: str, tmp_path: Path) -> tuple[LegProcess, int, int]:
    """A leg whose target runs ``code``, told to go once the host has the launch answer: the leg, its
    target's pid and its leg watchdog's."""
    leg = LegProcess.launch([sys.executable, "-c", code], str(tmp_path), {}, stdin=True)
    assert leg.stdin is not None
    leg.stdin.write(b"now\n")
    leg.stdin.flush()
    return leg, leg.pid, _parent_of(leg.pid)


def test_a_target_that_stops_its_own_leg_watchdog_is_still_killed_with_its_tree(tmp_path: Path) -> None:
    leg, target, leg_watchdog = _told_to_stop(_STOP_OWN_WATCHDOG, tmp_path)
    try:
        try:
            _wait_until(lambda: process_state(leg_watchdog) == "T", 10, "the target's stop of its watchdog")
        finally:
            assert leg.close() == -signal.SIGKILL
        # Resumed before it was asked to kill: nothing of the leg stays behind, stopped or running, for as
        # long as the host lives (unresumed, the watchdog would stay stopped and its target a zombie).
        _wait_until(lambda: is_dead(leg_watchdog) and is_dead(target), 10, "the leg watchdog's and the target's end")
    finally:
        _signal_leftovers([target, leg_watchdog], signal.SIGKILL)
    assert _run(["/bin/echo", "next"]) == (0, b"next\n")


_STOP_OWN_WATCHDOG_AGAIN_AND_AGAIN = (
    "import os, signal, sys, time\n"
    "sys.stdin.readline()\n"
    "watchdog = os.getppid()\n"
    "if os.fork() == 0:\n"
    "    os.setsid()  # out of the target's group: only the watchdog's subtree reaches it\n"
    "    while True:\n"
    "        os.kill(watchdog, signal.SIGSTOP)\n"
    "time.sleep(60)\n"
)


def test_a_tree_that_stops_its_leg_watchdog_again_and_again_is_still_killed(tmp_path: Path) -> None:
    """Resuming is not enough when a setsid grandchild stops the watchdog again at once: the host kills
    the watchdog's tree itself, then resumes it to reap and report."""
    leg, target, leg_watchdog = _told_to_stop(_STOP_OWN_WATCHDOG_AGAIN_AND_AGAIN, tmp_path)
    tree = [target, leg_watchdog]
    try:
        try:
            _wait_until(lambda: _children_of(target) != [], 10, "the stopping grandchild")
            tree += _children_of(target)
            _wait_until(lambda: process_state(leg_watchdog) == "T", 10, "the grandchild's stop of the watchdog")
        finally:
            assert leg.close() == -signal.SIGKILL
        assert len(tree) == 3
        _wait_until(lambda: all(is_dead(pid) for pid in tree), 10, "the whole leg's end")
    finally:
        _signal_leftovers(tree[::-1], signal.SIGKILL)  # the looping stopper first
    assert _run(["/bin/echo", "next"]) == (0, b"next\n")


_STOPPED_LEG_HOST = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {root!r})
    from evalquality_core.adapters.process_group import LegProcess
    def stat(pid):
        return open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()
    leg = LegProcess.launch([sys.executable, "-c", {target!r}], {work!r}, {{}}, stdin=True)
    watchdog = int(stat(leg.pid)[1])
    leg.stdin.write(b"now\\n")
    leg.stdin.flush()
    while True:
        children = open(f"/proc/{{leg.pid}}/task/{{leg.pid}}/children").read().split()
        if children and stat(watchdog)[0] == "T":
            break
        time.sleep(0.02)
    open({ready!r}, "w").write(" ".join(map(str, [watchdog, leg.pid, *children])))
    time.sleep(600)
    """
)


def test_a_host_killed_while_its_leg_watchdog_is_held_stopped_still_takes_the_leg_with_it(tmp_path: Path) -> None:
    """The last line: with the host gone, the shared watchdog SIGKILLs a stopped leg watchdog (which would
    never read its lifeline's end-of-file) and kills its orphaned tree, the stopping grandchild included."""
    ready = tmp_path / "ready"
    script = _STOPPED_LEG_HOST.format(root=str(PROJECT_ROOT), target=_STOP_OWN_WATCHDOG_AGAIN_AND_AGAIN, work=str(tmp_path),
                                      ready=str(ready))
    host = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    pids: list[int] = []
    try:
        try:
            _wait_until(lambda: ready.exists() and ready.read_text() != "" or host.poll() is not None, 60, "the held leg")
            assert host.poll() is None
            pids = [int(pid) for pid in ready.read_text().split()]
            assert len(pids) == 3 and process_state(pids[0]) == "T"  # the leg watchdog, the target, the stopper
        finally:
            host.kill()  # SIGKILL: the host's close() never runs
            host.wait()
        _wait_until(lambda: all(is_dead(pid) for pid in pids), 10, "the stopped leg watchdog's and its tree's end")
    finally:
        _signal_leftovers(pids[::-1], signal.SIGKILL)


def test_idle_and_spare_leg_watchdogs_a_target_stopped_still_serve_the_next_legs(tmp_path: Path) -> None:
    process_group.shutdown_watchdog()  # a new shared watchdog: its only children are ours
    first, second = _held(), _held()
    idle = [_parent_of(first.pid), _parent_of(second.pid)]
    assert _release_all([first, second]) == [b"held\n", b"held\n"]  # both leg watchdogs wait idle now
    shared = watchdog_pid()
    assert shared is not None
    _wait_until(lambda: len(_children_of(shared)) >= 3, 10, "the two idle leg watchdogs and the spare")
    code, out = _run([sys.executable, "-c", _STOP_SIBLINGS])
    stopped = [int(pid) for pid in out.split()]
    try:
        assert code == 0 and idle[0] in stopped and len(stopped) >= 2  # an idle one and the spare, at least
        # On a loaded host the stopper's own launch may have been slow enough (over a second) for the host
        # to resume them already; stopped again here, as the target could have done at any later moment.
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        _wait_until(lambda: all(process_state(pid) == "T" for pid in stopped), 10, "the stops")
        # The stopper ran on the other idle watchdog, which serves first; then the stopped ones are taken.
        legs = [_held() for _ in range(len(stopped) + 1)]
        served_by = {_parent_of(leg.pid) for leg in legs}
        assert set(stopped) <= served_by
        assert _release_all(legs) == [b"held\n"] * len(legs)
        assert not any(process_state(pid) == "T" for pid in stopped)
    finally:
        _signal_leftovers(stopped, signal.SIGCONT)


def test_a_shared_watchdog_a_target_stopped_still_forks_the_spares_the_next_legs_need(tmp_path: Path) -> None:
    process_group.shutdown_watchdog()
    code, out = _run([sys.executable, "-c", _STOP_SHARED])
    shared = int(out)
    assert code == 0 and shared == watchdog_pid()
    try:
        _wait_until(lambda: process_state(shared) == "T", 10, "the target's stop of the shared watchdog")
        # More legs at once than there are idle and spare leg watchdogs: the shared one must fork more.
        legs = [_held() for _ in range(4)]
        assert _release_all(legs) == [b"held\n"] * 4
        assert watchdog_pid() == shared and process_state(shared) != "T"  # resumed, not replaced
    finally:
        _signal_leftovers([shared], signal.SIGCONT)
