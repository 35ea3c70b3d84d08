"""The watchdog: one long-lived process per host process, and one forked leg watchdog per leg (stdlib only).

Started once, lazily, by ``process_group`` as ``python -I -S lifeline.py <fd>``, where ``<fd>`` is its end
of a ``SOCK_SEQPACKET`` socketpair to the host (the **control** socket). Why this shape, and not one
fresh interpreter per leg, is in ``process_group``'s docstring (in short: an interpreter start costs
~25 ms, a ``fork()`` of this small process well under one).

The **shared watchdog** (``main``):

1. is a Linux **child subreaper** and ignores SIGINT/SIGTERM/SIGHUP (only SIGKILL or the host end it);
2. per control message (one byte string plus, by ``SCM_RIGHTS``, the leg's socket, the write ends of
   its stdout/stderr pipes and, when asked, the read end of its stdin pipe) ``fork()``s a **leg
   watchdog** and closes its own copies of those descriptors, so it never holds a leg's lifeline;
3. reaps its children on SIGCHLD. Its only legitimate children are leg watchdogs; any other child is
   an orphan of a leg watchdog that was killed (re-parented here because this process is a
   subreaper), and is SIGKILLed with its group, in rounds, until none is left;
4. on end-of-file of the control socket (the host died, even by SIGKILL, or shut it down) accepts no
   more legs, waits until every leg watchdog has finished (each sees its own lifeline close and kills
   its tree), still killing strays, then exits.

A **leg watchdog** (``_leg``), one per leg, in a forked child of the shared watchdog:

1. is a child subreaper of its own (the flag is not inherited across ``fork()``), so every orphaned
   descendant of *this leg's* target, ``setsid()`` or not, is re-parented to it, and is attributed to
   the right leg without guessing;
2. reads the launch spec (argv, cwd, env) as one JSON line from the leg socket (never from argv, so
   nothing secret shows in ``ps``), starts the target as the leader of a new session and process group
   on the host's pipes, with default dispositions for the signals the watchdogs ignore, answers
   ``{"pid": n}`` or ``{"spawnError": {...}}``;
3. waits for the target's exit or the leg socket: a ``kill`` line, or end-of-file (the host died, even
   by SIGKILL, or closed the leg). Either way it **kills the whole tree**: SIGKILL to the target's group,
   then, repeatedly, to every child it has (orphans re-parented to it, each with its group) until none
   is left, reaping as it goes; then it answers ``{"exit": code}`` (the target's own exit status, or
   ``-9`` when it was killed) and exits.

Without a subreaper (not Linux) only the target's group is killed; README "Trust boundary" says so.
"""

from __future__ import annotations

import array
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
_ROUND_S = 0.005
_MAX_ROUNDS = 4000  # 20 s of rounds against a target that keeps forking
_MAX_FDS = 4  # leg socket, stdout, stderr, stdin
_IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children(me: int) -> list[int]:
    """Pids whose parent is ``me`` (single-threaded): ``/proc/<me>/task/<me>/children`` where the kernel
    has it (one read), else a scan of ``/proc``; empty where there is neither."""
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:
        pass
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 2 and int(fields[1]) == me:
            found.append(int(entry))
    return found


def _reap_all() -> bool:
    """Reap every exited child; True when no child at all is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def _kill(targets: list[int]) -> None:
    for target in targets:
        for kill in (os.killpg, os.kill):
            try:
                kill(target, signal.SIGKILL)
            except OSError:
                pass


def kill_tree(leader: int) -> None:
    """SIGKILL the target's group, then every child of this leg watchdog with its group, until none is left."""
    me = os.getpid()
    for _ in range(_MAX_ROUNDS):
        _kill([leader, *_children(me)])
        if _reap_all():
            return
        time.sleep(_ROUND_S)


def _send(sock: socket.socket, message: dict) -> None:
    try:
        sock.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # the host is gone: nothing to tell


# --- the shared watchdog ----------------------------------------------------------------------------


def main() -> int:
    """Run the shared watchdog (module docstring) until the host is gone and every leg has ended."""
    control = socket.socket(fileno=int(sys.argv[1]))
    _become_subreaper()
    for signum in _IGNORED:
        signal.signal(signum, signal.SIG_IGN)  # only SIGKILL or the control socket end the watchdog
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so SIGCHLD writes to the wakeup fd
    legs: set[int] = set()
    poller = select.poll()
    poller.register(control.fileno(), select.POLLIN)
    poller.register(wake_read, select.POLLIN)
    accepting = True
    while accepting or legs:
        try:
            events = poller.poll(None if accepting else 1000)
        except InterruptedError:  # pragma: no cover - PEP 475 retries poll
            events = []
        for fd, _mask in events:
            if fd == wake_read:
                try:
                    while os.read(wake_read, 512):
                        pass
                except BlockingIOError:
                    pass
            elif accepting:
                fds, more = _receive(control)
                if not more:
                    poller.unregister(control.fileno())
                    control.close()
                    accepting = False
                elif fds:
                    pid = _fork_leg(fds, (control.fileno(), wake_read, wake_write))
                    if pid:
                        legs.add(pid)
        _reap_and_clear_strays(legs)
    return 0


def _receive(control: socket.socket) -> tuple[list[int], bool]:
    """One leg's descriptors from the control socket; ``more`` is False at end-of-file."""
    try:
        data, ancillary, _flags, _ = control.recvmsg(
            64, socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize), socket.MSG_CMSG_CLOEXEC
        )
    except (BlockingIOError, InterruptedError):
        return [], True
    except OSError:
        return [], False
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(payload[: len(payload) - (len(payload) % received.itemsize)])
            fds.extend(received)
    if not data:
        for fd in fds:
            os.close(fd)
        return [], False
    if data != b"leg" or len(fds) not in (3, 4):  # not what the host sends: drop it
        for fd in fds:
            os.close(fd)
        return [], True
    return fds, True


def _fork_leg(fds: list[int], shared: tuple[int, ...]) -> int:
    """Fork the leg watchdog for ``fds``; close them here; the child's pid (0 when fork failed: the host
    then reads end-of-file on the leg socket and reports that the target did not start)."""
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid == 0:  # the leg watchdog
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for fd in shared:
                os.close(fd)
            code = _leg(fds)
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return max(pid, 0)


def _reap_and_clear_strays(legs: set[int]) -> None:
    """Reap exited children; if any child is not a leg watchdog (an orphan of a killed one), kill it."""
    me = os.getpid()
    for _ in range(_MAX_ROUNDS):
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                break
            legs.discard(pid)
        strays = [pid for pid in _children(me) if pid not in legs]
        if not strays:
            return
        _kill(strays)
        time.sleep(_ROUND_S)


# --- one leg ------------------------------------------------------------------------------------------


def _leg(fds: list[int]) -> int:
    """Run one leg's watchdog (module docstring), in a child of the shared watchdog."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for signum in _IGNORED:
        signal.signal(signum, signal.SIG_DFL)  # an ignored disposition would be inherited across exec
    subreaper = _become_subreaper()
    sock = socket.socket(fileno=fds[0])
    stdout, stderr = fds[1], fds[2]
    stdin = fds[3] if len(fds) == 4 else subprocess.DEVNULL
    reader = sock.makefile("rb")
    line = reader.readline()
    if not line:
        return 0
    spec = json.loads(line)
    try:
        target = subprocess.Popen(
            spec["argv"],
            cwd=spec["cwd"],
            env=spec["env"],
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            close_fds=True,
            start_new_session=True,
            restore_signals=True,
        )
    except OSError as exc:
        _send(sock, {"spawnError": {"errno": exc.errno, "strerror": exc.strerror, "filename": exc.filename}})
        return 0
    except (ValueError, TypeError) as exc:
        _send(sock, {"spawnError": {"errno": None, "strerror": str(exc), "filename": None}})
        return 0
    for fd in fds[1:]:
        os.close(fd)  # the pipes are the target's alone: its exit closes them for the host
    for signum in _IGNORED:
        signal.signal(signum, signal.SIG_IGN)  # only SIGKILL or the lifeline end the leg watchdog
    _send(sock, {"pid": target.pid, "subreaper": subreaper})
    exit_code = _watch(sock, target.pid, use_pidfd=spec.get("pidfd", True))
    _send(sock, {"exit": exit_code})
    return 0


def _watch(sock: socket.socket, pid: int, use_pidfd: bool = True) -> int:
    """Wait for the target's exit or the lifeline; kill the tree either way; the target's exit code.
    Without pidfd (kernels before 5.3, other POSIX) the exit is polled every 10 ms."""
    pidfd = None
    opener = getattr(os, "pidfd_open", None) if use_pidfd else None
    if opener is not None:
        try:
            pidfd = opener(pid)
        except OSError:
            pidfd = None
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN | select.POLLHUP)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    while True:
        events = dict(poller.poll(None if pidfd is not None else 10))
        if sock.fileno() in events:
            try:
                data = sock.recv(4096, socket.MSG_PEEK)
            except OSError:
                data = b""
            if not data or b"kill" in data:  # host gone (EOF) or asked: kill now
                kill_tree(pid)
                return -signal.SIGKILL
            sock.recv(len(data))
        status = _exited(pid)
        if status is not None:
            kill_tree(pid)  # leftovers: nothing outlives a leg
            return status


def _exited(pid: int) -> int | None:
    """The target's exit code (−signal) once it exited, read without reaping it (its pid stays ours)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return -1
    if info is None:
        return None
    if info.si_code == os.CLD_EXITED:
        return info.si_status
    return -info.si_status


if __name__ == "__main__":
    sys.exit(main())
