"""Supervised child processes for adapters: nothing a target starts outlives its leg, or the host.

``LegProcess.launch(argv, cwd, env, stdin=...)`` starts a target under a watchdog (``lifeline.py``, a
stdlib-only script run with ``python -I -S``). One **shared watchdog** per host process is started
lazily by the first leg (thread-safe; a forked host child starts its own). It keeps one **spare leg
watchdog** forked ahead of need and sends the host its end of the spare's socketpair; a leg takes an
**idle** leg watchdog (one whose last leg ended cleanly, below) or else the spare, asking for the next
one, and hands the target's pipes and launch line straight to its leg watchdog, which

* starts the target as the leader of a new session and process group, on pipes the host reads;
* is a Linux **child subreaper**, so a grandchild that called ``setsid()`` (or double-forked) is still
  its descendant when orphaned, and is killed when the leg ends: on the target's own exit, on
  ``kill()``, and on ``close()``;
* holds the leg's socketpair **lifeline** to the host: when the host dies, even by SIGKILL, the leg
  watchdog reads end-of-file and kills the whole tree within milliseconds. (No ``preexec_fn``: the
  host has threads.)

Why a shared watchdog that forks, measured (``benchmarks/bench_adapter.py``, wall clock per phase,
``strace -T``, CPU times from ``/proc``): a fresh ``python -I -S`` watchdog per leg cost ~7 ms of
interpreter start, ~17 ms of imports (``subprocess``, ``ctypes``, ``json``, ``socket``, ``select``)
and ~7 ms more to reap it at the end: ~32 ms per leg, 40x a bare ``subprocess.run("/bin/true")``.
The per-leg guarantees need a per-leg process (without cgroups, a subreaper is the only way to
attribute a ``setsid()`` orphan to its leg, and the lifeline must be held outside the host), but not a
per-leg *interpreter*: a ``fork()`` of the already-started, single-threaded shared watchdog costs
well under a millisecond, and forking it ahead of need takes even that off the leg's path (measured
against forking on demand, alternating: min 2.7 vs 3.8 ms, median 18 vs 31 ms under load). Handing
the spare's socket to the host keeps the shared watchdog off each leg's path too: host and leg
watchdog talk directly, as with a watchdog per leg. The shared watchdog lives in the host's session,
in a process group of its own (Ctrl-C at a terminal still reaches only the host): a session of its
own would put every leg's watchdog in another scheduler autogroup (median 15.5 vs 10.0 ms under
load). It never holds a leg's lifeline or pipes (it closes its copy of each spare's socket once
sent), so each lifeline closes exactly when the host's end does.

A leg watchdog whose target **exited on its own** (its whole tree killed and reaped, the exit reported,
never asked to kill) is kept idle, up to 64 of them, and serves the next leg: the host keeps a
duplicate of the leg's socket and closes the leg's own, so a late ``kill()`` of the ended leg cannot
reach the next one. Before each leg it restores the default dispositions of the signals it ignores
while a leg runs; a target it starts inherits nothing else of an earlier leg (it has no children left
and holds no descriptor of it: tests/adapters/test_watchdog.py). A leg that was killed (a budget, an
abort, ``close()`` before the exit) ends its watchdog as before. Why: in a fan-out of 32 legs that end
together, 32 forks of the shared watchdog queue for the two cores just as the next legs start; with
reuse the next leg's launch takes no fork, and no leg watchdog exits and is reaped per leg
(``benchmarks/bench_fanout_phases.py --compare-reuse --rounds 6``, alternating in one process: median
fan-out efficiency 0.72 against 0.65; ``bench_scale.py``'s plain-pool fan-out spends 0.03-0.06 s of
watchdog CPU against 0.16-0.18 s). A serial run of legs gains nothing (the spare was already forked
ahead): ``benchmarks/bench_adapter.py`` is unchanged.

Rejected: making the host a subreaper and spawning targets directly (orphans of every library's
children would re-parent into the host, and nothing would be left to kill them after a SIGKILL of
the host); one subreaper for all legs (it cannot tell whose orphan it was given); making each target
its own subreaper (it changes what the target's ``wait()`` sees, and needs a non-vfork
``preexec_fn`` per spawn anyway); ``os.posix_spawn`` in the leg watchdog (glibc leaves its internal
signals 32 and 33 ignored in the target); a non-Python watchdog (nothing to build it with on a
clean clone).

The API, shared by every adapter that runs a local process (command line, MCP stdio servers):

* ``LegProcess.launch(argv, cwd, env, *, stdin: bool) -> LegProcess``; an ``OSError`` (with ``errno``,
  ``filename``) when the target could not be started (E2BIG included);
* ``.pid`` (= the target's pgid), ``.stdin`` / ``.stdout`` / ``.stderr`` (binary pipe files, ``stdin``
  None unless asked for), ``.lifeline`` (a readable fd for a selector: readable when the watchdog
  reports the exit), ``.read_exit() -> int | None`` (call when ``lifeline`` is readable; the exit code,
  −9 when killed, or None for no news yet), ``.kill()`` (ask the watchdog to kill the tree now;
  prompt), ``.close() -> int`` (kill the tree unless it already ended, close the pipes; returns the
  exit code);
* ``live_process_groups()``, ``kill_all_live_groups()`` (every live leg of this process; also at exit);
* ``watchdog_pid()`` (the shared watchdog's pid, None before the first leg), ``shutdown_watchdog()``.

Failure modes of the watchdogs themselves (only the host's own user can signal them):

* a **leg watchdog killed**: its orphans (the target, setsid grandchildren) are re-parented to the
  shared watchdog, a subreaper too, whose only legitimate children are leg watchdogs: it SIGKILLs
  them with their groups. The host reads end-of-file on the lifeline, SIGKILLs the target's group
  from its side and reports exit −9, as the reference does. A killed *spare* costs the next leg
  one retry with the one after it;
* the **shared watchdog killed**: running legs are unaffected (each leg watchdog holds its own
  lifeline); the next ``launch`` notices (``poll()``, or EPIPE or end-of-file on the control socket)
  and starts a new one. Only if a leg watchdog is killed *as well* do its orphans escape to init;
* the **host forks** (``os.fork``): in the child the parent's legs are forgotten (the child's exit
  never kills them) and its copies of their lifelines, of the spares and of the control socket are
  closed, so the parent's death still ends them while the child lives on; the child's first leg
  starts its own shared watchdog;
* a watchdog **stopped** (SIGSTOP, which a target of our user can send and nothing can ignore) would
  answer no launch and no kill, keep its leg's tree (a zombie target) until the host ends, and cost
  the leg waiting on it the whole start timeout. The host resumes it with SIGCONT: each leg watchdog
  reports its own pid with the target's, and ``kill()`` resumes that one first when it is stopped;
  a launch answer or a spare that has not come within ``_NUDGE_S`` (1 s) resumes the shared watchdog
  and every stopped leg watchdog of it, idle or spare, then waits on. Only a process in the stopped
  state whose parent is the expected one is resumed, so a reused pid never is; the usual path reads
  nothing of ``/proc`` (tests/adapters/test_watchdog.py). A leg watchdog asked to kill that stays
  stopped (its tree stopping it again each time it runs) has that tree SIGKILLed by the host, then is
  resumed to reap and report; with the host gone, the shared watchdog SIGKILLs a stopped leg watchdog
  and kills its orphaned tree (lifeline.py). A process of another leg that keeps stopping the shared or
  an idle watchdog, faster than it can run, still holds it until that leg ends: like a kill, a signal
  from our own user is beyond what a watchdog of that user can refuse (README "Trust boundary").
"""

from __future__ import annotations

import array
import atexit
import contextlib
import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

__all__ = [
    "LIFELINE_SCRIPT",
    "LegProcess",
    "kill_all_live_groups",
    "kill_process_group",
    "live_process_groups",
    "shutdown_watchdog",
    "track_process_group",
    "untrack_process_group",
    "watchdog_pid",
]

LIFELINE_SCRIPT = str(Path(__file__).with_name("lifeline.py"))
#: How long the watchdog may take to start and answer with the target's pid (or read the launch spec).
_START_TIMEOUT_S = 30.0
_KILL_INTERVAL_S = 0.005
_KILL_TRIES = 100
#: A watchdog silent this long is checked for a stop by a target (``_resume_stopped``), then waited on.
_NUDGE_S = 1.0
#: At most this many leg watchdogs wait idle for another leg (more than the flows' widest fan-out).
_IDLE_CAP = 64

#: Whether the watchdog waits on a pidfd for the target's exit (tests turn it off to cover the polling path).
USE_PIDFD = True

_LIVE: dict[int, LegProcess] = {}
_LIVE_LOCK = threading.Lock()
#: Groups an adapter started itself (not through ``LegProcess``) and registered here under ``_LIVE_LOCK``,
#: so ``kill_all_live_groups`` reaches them too (the MCP stdio adapter's servers).
_RAW_GROUPS: set[int] = set()


def live_process_groups() -> frozenset[int]:
    """The process-group ids of every target this process is running right now."""
    with _LIVE_LOCK:
        return frozenset(_LIVE) | frozenset(_RAW_GROUPS)


def track_process_group(pgid: int) -> None:
    """Count a group another adapter started itself (an HTTP service, an MCP server) among the live
    groups, so ``kill_all_live_groups`` and process exit kill it too."""
    with _LIVE_LOCK:
        _RAW_GROUPS.add(pgid)


def untrack_process_group(pgid: int) -> None:
    """Forget a group ``track_process_group`` counted (after it was killed and reaped)."""
    with _LIVE_LOCK:
        _RAW_GROUPS.discard(pgid)


def kill_all_live_groups() -> list[int]:
    """Kill every live leg (its watchdog kills the tree; the group is also SIGKILLed from here) and
    every registered raw group; return the pgids. Call it from a ``BaseException`` handler; it also
    runs at exit."""
    with _LIVE_LOCK:
        legs = list(_LIVE.items())
        raw = list(_RAW_GROUPS)
    for _pgid, leg in legs:
        leg.kill()
    for pgid in [pgid for pgid, _ in legs] + raw:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    return [pgid for pgid, _ in legs] + raw


atexit.register(kill_all_live_groups)


def _group_has_live_member(pgid: int) -> bool:
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def kill_process_group(pgid: int) -> None:
    """SIGKILL a group repeatedly until no live member remains, at most 100 tries 5 ms apart."""
    for _ in range(_KILL_TRIES):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if not _group_has_live_member(pgid):
            return
        time.sleep(_KILL_INTERVAL_S)



class _SharedWatchdog:
    """The host's side of the shared watchdog: the process, the control socket, and the spare leg
    watchdogs it sent (the host's ends of their sockets; each becomes one leg's lifeline)."""

    def __init__(self) -> None:
        host_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", LIFELINE_SCRIPT, str(child_end.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(child_end.fileno(),),
                env={},
                cwd="/",
                close_fds=True,
                process_group=0,  # Ctrl-C at a terminal reaches the host, which decides
            )
        except OSError:
            host_end.close()
            raise
        finally:
            child_end.close()
        self.control = host_end
        self.owner = os.getpid()
        self.spares: list[socket.socket] = []
        self.coming = 1  # spares asked for (the first one unasked) and not yet received
        #: Leg watchdogs whose last leg's target exited on its own, tree gone, waiting for another leg.
        self.idle: list[socket.socket] = []

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def take_spare(self) -> socket.socket:
        """A leg watchdog's socket: an idle one that served an earlier leg, else a spare (asking for
        the next one so it is forked ahead of need); ``OSError`` when the watchdog is gone or does not
        answer."""
        while self.idle:
            sock = self.idle.pop()  # the most recently used: the likeliest to be paged in
            if _quiet(sock):
                return sock
            sock.close()  # killed while idle (end-of-file), or anything else on it: not trusted again
        self._collect(wait=False)
        if not self.spares:
            if not self.coming:
                self._ask()
            self._collect(wait=True)
        spare = self.spares.pop(0)
        if not self.spares and not self.coming:
            with contextlib.suppress(OSError):  # gone: the next launch notices and starts a new one
                self._ask()
        return spare

    def _ask(self) -> None:
        self.control.send(b"more")
        self.coming += 1

    def _collect(self, *, wait: bool) -> None:
        """Receive the spares sent so far (with ``wait``: at least one, within the start timeout)."""
        if wait and not select.select([self.control], [], [], _NUDGE_S)[0]:
            _resume_stopped(self.process.pid)  # a target may have stopped it: it would never fork the spare
        self.control.settimeout(_START_TIMEOUT_S if wait else 0.0)
        try:
            while self.coming:
                try:
                    data, ancillary, _flags, _ = self.control.recvmsg(
                        16, socket.CMSG_SPACE(array.array("i").itemsize), socket.MSG_CMSG_CLOEXEC)
                except BlockingIOError:
                    return
                except TimeoutError:
                    raise OSError(0, "the watchdog did not answer in time") from None
                fds = [fd for level, kind, payload in ancillary if (level, kind) == (socket.SOL_SOCKET, socket.SCM_RIGHTS)
                       for fd in array.array("i", payload[: len(payload) - len(payload) % 4])]
                if not data:
                    _close_fds(fds)
                    raise OSError(errno.EPIPE, "the watchdog is gone")
                self.coming -= 1
                self.spares.extend(socket.socket(fileno=fd) for fd in fds)
                self.control.settimeout(0.0)  # one arrived: take the rest only if already there
        finally:
            self.control.settimeout(None)

    def release(self, sock: socket.socket) -> None:
        """Keep a leg watchdog whose leg ended cleanly for the next leg (closed instead beyond the cap)."""
        if len(self.idle) < _IDLE_CAP:
            self.idle.append(sock)
        else:
            sock.close()

    def close(self) -> None:
        """Close the control socket, the spares and the idle leg watchdogs: each of those exits, and the
        shared watchdog ends once its running legs have ended."""
        for spare in self.spares + self.idle:
            spare.close()
        self.spares.clear()
        self.idle.clear()
        self.control.close()


def _stat(pid: int) -> tuple[str, int] | tuple[()]:
    """A process's state letter and parent pid from ``/proc``, or ``()`` when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state, ppid = handle.read().rsplit(b")", 1)[1].split()[:2]
        return state.decode(), int(ppid)
    except (OSError, IndexError, ValueError):
        return ()


def _descendants(pid: int) -> list[int]:
    """Every descendant of a process (children of each of its threads, recursively), from ``/proc``."""
    found: list[int] = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.append(child)
                    pending.append(child)
    return found


def _resume(pid: int | None, parent: int) -> None:
    """Send SIGCONT to a watchdog that a target stopped (it runs as our user, so it can): a stopped
    watchdog would answer no launch and no kill, hold its leg's tree until the host ends, and cost the
    leg that waits on it the whole start timeout. Only a process stopped by a signal whose parent is
    ``parent`` is sent it, so a reused process id never is; without ``/proc`` nothing is sent."""
    if pid is not None and _stat(pid) == ("T", parent):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGCONT)


def _resume_stopped(shared: int) -> None:
    """Resume the shared watchdog and every leg watchdog of it (idle, spare or serving) that a target
    stopped: called only when one is slow to answer, so a leg's usual path reads nothing of ``/proc``."""
    _resume(shared, os.getpid())
    try:
        children = Path(f"/proc/{shared}/task/{shared}/children").read_text().split()
    except OSError:
        return
    for child in children:
        _resume(int(child), shared)


def _quiet(sock: socket.socket) -> bool:
    """Whether nothing is waiting on an idle leg watchdog's socket (no end-of-file, no stray bytes)."""
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
    return not poller.poll(0)


_WATCHDOG: _SharedWatchdog | None = None
_WATCHDOG_LOCK = threading.Lock()
#: Watchdogs of a parent process, seen in a forked child: never waited on here, only kept referenced.
_INHERITED: list[_SharedWatchdog] = []


def _take_spare() -> tuple[socket.socket, _SharedWatchdog]:
    """A leg watchdog ready for one leg (its socket) and the shared watchdog it came from, starting
    that (again) when there is none alive."""
    global _WATCHDOG
    with _WATCHDOG_LOCK:
        for attempt in range(2):
            if _WATCHDOG is None or not _WATCHDOG.alive():
                if _WATCHDOG is not None:
                    _WATCHDOG.close()
                _WATCHDOG = None
                _WATCHDOG = _SharedWatchdog()
            try:
                return _WATCHDOG.take_spare(), _WATCHDOG
            except OSError:  # killed since the last leg (EPIPE, end-of-file): start a new one
                if attempt:
                    raise
                _WATCHDOG.close()
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    _WATCHDOG.process.wait(timeout=_START_TIMEOUT_S)
                _WATCHDOG = None
    raise AssertionError("unreachable")


def _release(sock: socket.socket, origin: _SharedWatchdog) -> None:
    """Give a leg watchdog back for another leg, if the shared watchdog it came from is still this
    process's current one; else close it (it exits)."""
    with _WATCHDOG_LOCK:
        if origin is _WATCHDOG and origin.alive():
            origin.release(sock)
            return
    sock.close()


def watchdog_pid() -> int | None:
    """The pid of this process's shared watchdog, None when none was started (or it was shut down)."""
    with _WATCHDOG_LOCK:
        return _WATCHDOG.process.pid if _WATCHDOG is not None and _WATCHDOG.owner == os.getpid() else None


def shutdown_watchdog(timeout: float = _START_TIMEOUT_S) -> None:
    """Close the shared watchdog's control socket and reap it; it exits once its running legs ended
    (the next ``launch`` starts a new one)."""
    global _WATCHDOG
    with _WATCHDOG_LOCK:
        watchdog, _WATCHDOG = _WATCHDOG, None
    if watchdog is None or watchdog.owner != os.getpid():
        return
    watchdog.close()
    try:
        watchdog.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        watchdog.process.kill()
        watchdog.process.wait()


def _before_fork() -> None:
    _WATCHDOG_LOCK.acquire()
    _LIVE_LOCK.acquire()


def _after_fork_in_parent() -> None:
    _LIVE_LOCK.release()
    _WATCHDOG_LOCK.release()


def _after_fork_in_child() -> None:
    """The parent's legs and watchdog are not the child's: forget them and close the child's copies of
    their lifelines, so the parent's death still closes every lifeline while this child lives on."""
    global _WATCHDOG
    for leg in _LIVE.values():
        leg._forget()
    _LIVE.clear()
    _RAW_GROUPS.clear()
    if _WATCHDOG is not None:
        with contextlib.suppress(OSError):
            _WATCHDOG.close()
        _INHERITED.append(_WATCHDOG)
        _WATCHDOG = None
    _LIVE_LOCK.release()
    _WATCHDOG_LOCK.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class LegProcess:
    """One target under its leg watchdog (module docstring)."""

    def __init__(self, sock: socket.socket, pid: int, stdin: IO[bytes] | None, stdout: IO[bytes], stderr: IO[bytes],
                 origin: _SharedWatchdog | None = None, watchdog: int | None = None) -> None:
        self._sock = sock
        self._origin = origin
        #: The leg watchdog's process id (as it reported it), to resume it if a target stops it.
        self._watchdog = watchdog
        self._buffer = b""
        self._exit: int | None = None
        #: The watchdog reported the target's own exit (its tree gone) and was never asked to kill.
        self._reusable = False
        self._killed = False
        self._closed = False
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr

    @classmethod
    def launch(cls, argv: Sequence[str], cwd: str, env: Mapping[str, str], *, stdin: bool) -> LegProcess:
        """Start ``argv`` in ``cwd`` with exactly ``env`` under a leg watchdog; ``OSError`` if it cannot."""
        # The watchdog runs in "/": a relative cwd means relative to this process's directory.
        request = {"argv": list(argv), "cwd": os.path.abspath(cwd), "env": dict(env), "pidfd": USE_PIDFD}
        line = json.dumps(request).encode() + b"\n"
        leg = cls._try_launch(line, stdin)
        if leg is None:  # the shared watchdog died before it forked this leg: once more, with a new one
            leg = cls._try_launch(line, stdin)
        if leg is None:
            raise OSError(0, "the watchdog did not start the target")
        return leg

    @classmethod
    def _try_launch(cls, line: bytes, stdin: bool) -> LegProcess | None:
        """One attempt; None when the leg watchdog went away without a word (nothing was started)."""
        host_end, origin = _take_spare()  # the leg's lifeline: a forked leg watchdog holds the other end
        ours: list[int] = []  # the host's ends of the pipes: stdout, stderr[, stdin]
        theirs: list[int] = []  # the target's
        try:
            for _ in range(3 if stdin else 2):
                read_end, write_end = os.pipe()
                ours.append(read_end)
                theirs.append(write_end)
            if stdin:  # the third pipe runs the other way: the target reads, the host writes
                ours[2], theirs[2] = theirs[2], ours[2]
            host_end.settimeout(_START_TIMEOUT_S)
            try:
                host_end.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", theirs))])
                _close_fds(theirs)
                theirs.clear()  # closed: never again (a number reused by another thread would suffer)
                host_end.sendall(line)
            except TimeoutError:
                raise OSError(0, "the watchdog did not read the launch request") from None
            except OSError:
                answer: dict | None = None  # that leg watchdog is gone (killed while it waited)
            else:
                answer = cls._first_answer(host_end, lambda: _resume_stopped(origin.process.pid))
        except BaseException:
            host_end.close()
            _close_fds(ours + theirs)
            raise
        if answer is None or "pid" not in answer:
            host_end.close()
            _close_fds(ours + theirs)
            if answer is None:
                return None
            error = answer.get("spawnError") or {}
            code = error.get("errno")
            raise OSError(code if isinstance(code, int) else 0, error.get("strerror") or "the watchdog did not start the target",
                          error.get("filename"))
        host_end.settimeout(None)
        watchdog = answer.get("watchdog")
        leg = cls(host_end, int(answer["pid"]), open(ours[2], "wb") if stdin else None, open(ours[0], "rb"), open(ours[1], "rb"),
                  origin, watchdog if isinstance(watchdog, int) else None)
        with _LIVE_LOCK:
            _LIVE[leg.pid] = leg
        return leg

    @staticmethod
    def _first_answer(sock: socket.socket, slow: Callable[[], None] | None = None) -> dict | None:
        """The watchdog's first message. Nothing after it is taken off the socket: a quick target's exit
        report stays there, so the lifeline is readable for it (the leg watchdog, which may serve
        another leg afterwards, does not close the socket to say so). ``slow`` is called once if
        nothing came within ``_NUDGE_S`` (a target may have stopped the watchdog)."""
        data = b""
        try:
            if slow is not None and not select.select([sock], [], [], _NUDGE_S)[0]:
                slow()
            while True:
                peeked = sock.recv(65536, socket.MSG_PEEK)
                if not peeked:
                    return None
                end = peeked.find(b"\n")
                if end >= 0:
                    data += sock.recv(end + 1)
                    break
                data += sock.recv(len(peeked))  # part of the first line: take it and wait for the rest
        except TimeoutError:
            raise OSError(0, "the watchdog did not answer in time") from None
        except OSError:
            return None
        return json.loads(data)

    def _parse_buffer(self) -> None:
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            message = json.loads(line)
            if "exit" in message:
                self._exit = int(message["exit"])
                self._reusable = not self._killed and not self._buffer
            else:
                self._reusable = False  # anything unexpected: this watchdog is not used again

    def _forget(self) -> None:
        """In a forked child: close this copy of the lifeline (the leg is the parent's)."""
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.close()

    @property
    def lifeline(self) -> int:
        """The fd a selector waits on: readable when the watchdog reports (or dies)."""
        return self._sock.fileno()

    def read_exit(self) -> int | None:
        """Read what the watchdog reported: the exit code once the tree is gone (−9 when killed, or
        when the watchdog itself died, after which the group is killed from here), else None."""
        if self._exit is not None:
            return self._exit
        try:
            chunk = self._sock.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        except OSError:
            chunk = b""
        if not chunk:  # the watchdog is gone without a word: kill what it watched
            kill_process_group(self.pid)
            self._exit = -signal.SIGKILL
            return self._exit
        self._buffer += chunk
        self._parse_buffer()
        return self._exit

    def leader_exited(self) -> bool:
        """Whether the target itself has exited, even before its watchdog (another process, which a busy
        host may not have scheduled yet) reports it: its exit read, or its ``/proc`` entry a zombie or gone."""
        if self.read_exit() is not None:
            return True
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except FileNotFoundError:
            # Reaped already, when /proc is there to say so; without /proc only the watchdog can tell.
            return os.path.exists("/proc/self/stat")
        except (OSError, IndexError):
            return False
        return state in (b"Z", b"X")

    def kill(self) -> None:
        """Ask the watchdog to kill the whole tree now (it answers with exit −9)."""
        self._killed = True
        self._reusable = False
        with contextlib.suppress(OSError):
            self._sock.send(b"kill\n", socket.MSG_DONTWAIT)
        if self._origin is not None:
            _resume(self._watchdog, self._origin.process.pid)  # a stopped watchdog would read it only at the host's end

    def _unstop_watchdog(self) -> None:
        """The leg watchdog asked to kill is silent and stopped: its tree may be stopping it again each
        time it is resumed. SIGKILL that whole tree from here (what the watchdog was asked to do), then
        resume the watchdog to reap it and report."""
        if self._origin is None or self._watchdog is None:
            return
        if _stat(self._watchdog) != ("T", self._origin.process.pid):
            return
        for pid in _descendants(self._watchdog):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _resume(self._watchdog, self._origin.process.pid)

    def close(self) -> int:
        """End the leg: kill the tree unless it already ended (waiting for the watchdog's word), close
        every pipe and the lifeline."""
        if self._closed:
            return self._exit if self._exit is not None else -signal.SIGKILL
        self._closed = True
        if self._exit is None:
            self.kill()
            deadline = time.monotonic() + _START_TIMEOUT_S
            try:
                while self._exit is None and (left := deadline - time.monotonic()) > 0:
                    self._sock.settimeout(min(_NUDGE_S, left))
                    try:
                        chunk = self._sock.recv(65536)
                    except TimeoutError:
                        self._unstop_watchdog()
                        continue
                    if not chunk:
                        break
                    self._buffer += chunk
                    self._parse_buffer()
            except OSError:
                pass
            if self._exit is None:  # the watchdog died or hung: kill what it watched from here
                kill_process_group(self.pid)
                self._exit = -signal.SIGKILL
        with _LIVE_LOCK:
            _LIVE.pop(self.pid, None)
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self._reusable and not self._killed and not self._buffer and self._origin is not None:
            # The target exited on its own and its tree is gone: the leg watchdog may serve another
            # leg. It is kept as a duplicate and this leg's own socket is closed, so a late ``kill()``
            # on this leg (another thread's abort) can never reach the leg it serves next.
            _release(self._sock.dup(), self._origin)
        self._sock.close()  # unless kept above, the leg watchdog exits on end-of-file
        return self._exit
