"""The watchdogs: one long-lived shared watchdog per host process, and one forked leg watchdog per leg
(a script run with ``python -I -S``, stdlib only).

Started once, lazily, by ``process_group`` as ``python -I -S lifeline.py <fd>``, where ``<fd>`` is its
end of a ``SOCK_SEQPACKET`` socketpair to the host (the **control** socket), in a process group of its
own inside the host's session. Why this shape, and not one fresh interpreter per leg, is in
``process_group``'s docstring (in short: an interpreter start costs ~25 ms, a ``fork()`` of this small
process well under one, and that fork is done ahead of need).

The **shared watchdog** (``main``):

1. is a Linux **child subreaper** and ignores SIGINT/SIGTERM/SIGHUP (only SIGKILL or the host end it);
2. keeps one **spare** leg watchdog forked ahead: it forks one at start and one per ``more`` request
   from the host, each on a fresh stream socketpair, and sends the host its end (the bytes ``spare``
   plus the descriptor, by ``SCM_RIGHTS``), closing its own: this process never holds a leg's
   lifeline or pipes, and is on no leg's path;
3. reaps its children on SIGCHLD. Its only legitimate children are leg watchdogs (the spare among
   them); any other child is an orphan of a leg watchdog that was killed (re-parented here because
   this process is a subreaper), and is SIGKILLed with its group, in rounds, until none is left;
4. on end-of-file of the control socket (the host died, even by SIGKILL, or shut it down) forks no
   more spares (a waiting spare reads end-of-file too, and exits), waits until every leg watchdog
   has finished (each sees its own lifeline close and kills its tree), still killing strays, then
   exits. A leg watchdog that is stopped then (a target can SIGSTOP it, again each time it runs) would
   never see its lifeline close: it is SIGKILLed, once a second, and its tree killed as strays.

A **leg watchdog** (``_spare`` then ``_leg``), a forked child of the shared watchdog, one per leg at a
time:

1. is a child subreaper of its own (the flag is not inherited across ``fork()``), so every orphaned
   descendant of *this leg's* target, ``setsid()`` or not, is re-parented to it, and is attributed to
   the right leg without guessing;
2. waits on its socket (the leg's lifeline; the host holds the other end) for one byte carrying, by
   ``SCM_RIGHTS``, the write ends of the target's stdout/stderr pipes and, when asked, the read end of
   its stdin pipe; then reads the launch spec (argv, cwd, env) as one JSON line (never from argv, so
   nothing secret shows in ``ps``), starts the target as the leader of a new session and process
   group on those pipes, with default dispositions for the signals the watchdogs ignore, answers
   ``{"pid": n}`` or ``{"spawnError": {...}}``;
3. waits for the target's exit or the leg socket: a ``kill`` line, or end-of-file (the host died, even
   by SIGKILL, or closed the leg). Either way it **kills the whole tree**: SIGKILL to the target's group,
   then, repeatedly, to every child it has (orphans re-parented to it, each with its group) until none
   is left, reaping as it goes; then it answers ``{"exit": code}`` (the target's own exit status, or
   ``-9`` when it was killed);
4. after a kill (asked, or the host's end-of-file) it exits. After the target's own exit it waits on the
   same socket for another leg (step 2, with the default dispositions restored first): the host keeps
   it idle for the next leg, or closes the socket and it exits (``process_group``'s docstring says why).

Without a subreaper (not Linux) only the target's group is killed; README "Trust boundary" says so.
"""

from __future__ import annotations

import array
import ctypes
import gc
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
_MAX_FDS = 3  # stdout, stderr, stdin
_IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


#: Looked up once in the shared watchdog, so a forked leg watchdog only calls it.
_PRCTL = _load_prctl()


def _become_subreaper() -> bool:
    return _PRCTL is not None and _PRCTL(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


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
    # Nothing here makes reference cycles worth collecting; frozen, the objects stay unwritten in
    # forked children (fewer copy-on-write faults per leg).
    gc.disable()
    gc.freeze()
    shared = [control.fileno(), wake_read, wake_write]
    legs: set[int] = set()  # every legitimate child: the leg watchdogs, spares included
    accepting = _offer_spare(control, shared, legs)  # the first leg's, before anyone asks
    poller = select.poll()
    poller.register(control.fileno(), select.POLLIN)
    poller.register(wake_read, select.POLLIN)
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
                try:
                    request = control.recv(64)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    request = b""
                if request == b"more":
                    accepting = _offer_spare(control, shared, legs)
                elif not request:  # the host is gone (or shut us down): no more legs
                    accepting = False
                if not accepting:
                    poller.unregister(control.fileno())
                    control.close()
        if not accepting:
            _kill_stopped(legs)
        _reap_and_clear_strays(legs)
    return 0


def _kill_stopped(legs: set[int]) -> None:
    """With the host gone, SIGKILL every leg watchdog that is stopped (a target of our user can stop it,
    and again each time it runs): stopped, it never reads its lifeline's end-of-file. Its tree is then
    orphaned to this process, a subreaper, which kills it as strays."""
    for pid in list(legs):
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stopped = handle.read().rsplit(b")", 1)[1].split()[0] == b"T"
        except (OSError, IndexError):
            continue
        if stopped:
            _kill([pid])


def _offer_spare(control: socket.socket, shared: list[int], legs: set[int]) -> bool:
    """Fork a spare leg watchdog on a fresh socketpair and send the host its end (``SCM_RIGHTS``);
    keep no copy here. False when the host is gone."""
    ours, theirs = socket.socketpair()
    try:
        pid = os.fork()
    except OSError:
        pid = -1  # the host gets a socket whose other end is already closed: its launch retries
    if pid == 0:  # the spare leg watchdog
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            ours.close()
            for fd in shared:
                os.close(fd)
            code = _spare(theirs)
        finally:
            os._exit(code)
    theirs.close()
    if pid > 0:
        legs.add(pid)
    try:
        control.sendmsg([b"spare"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [ours.fileno()]))])
        return True
    except OSError:
        return False
    finally:
        ours.close()


def _receive_fds(sock: socket.socket, expected: tuple[int, ...]) -> list[int] | None:
    """The descriptors sent with the next message on ``sock`` (one byte of data), when there are as
    many as ``expected`` allows; None at end-of-file or for anything else."""
    try:
        data, ancillary, _flags, _ = sock.recvmsg(
            1, socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize), socket.MSG_CMSG_CLOEXEC
        )
    except OSError:
        return None
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(payload[: len(payload) - (len(payload) % received.itemsize)])
            fds.extend(received)
    if not data or len(fds) not in expected:
        for fd in fds:
            os.close(fd)
        return None
    return fds


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


def _spare(sock: socket.socket) -> int:
    """A forked leg watchdog: get ready, then wait on ``sock`` (whose other end the host holds) for a
    leg's pipes, and run that leg; then wait for the next one. End-of-file while waiting: no leg will
    come (the host closed this watchdog, or died)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    subreaper = _become_subreaper()
    while True:
        for signum in _IGNORED:
            signal.signal(signum, signal.SIG_DFL)  # an ignored disposition would be inherited across exec
        fds = _receive_fds(sock, (2, 3))
        if fds is None or not _leg(sock, fds, subreaper):
            return 0


def _leg(sock: socket.socket, fds: list[int], subreaper: bool) -> bool:
    """Run one leg's watchdog (module docstring): ``fds`` are the target's stdout, stderr and, when
    asked for, stdin. True when this watchdog may serve another leg: the target exited on its own and
    its whole tree is gone (or it could not be started), so nothing of this leg is left here; False
    after a kill or the host's end-of-file (the lifeline's work is done: exit)."""
    stdout, stderr = fds[0], fds[1]
    stdin = fds[2] if len(fds) == 3 else subprocess.DEVNULL
    line = _read_line(sock)
    if not line:
        for fd in fds:
            os.close(fd)
        return False
    spec = json.loads(line)
    try:
        # subprocess, not os.posix_spawn (which saves ~30% of this process's page faults): glibc's
        # posix_spawn leaves its internal signals 32 and 33 ignored in the target, a difference from
        # a plain subprocess.run that a target could notice.
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
        for fd in fds:
            os.close(fd)
        _send(sock, {"spawnError": {"errno": exc.errno, "strerror": exc.strerror, "filename": exc.filename}})
        return True
    except (ValueError, TypeError) as exc:
        for fd in fds:
            os.close(fd)
        _send(sock, {"spawnError": {"errno": None, "strerror": str(exc), "filename": None}})
        return True
    for fd in fds:
        os.close(fd)  # the pipes are the target's alone: its exit closes them for the host
    for signum in _IGNORED:
        signal.signal(signum, signal.SIG_IGN)  # only SIGKILL or the lifeline end the leg watchdog
    # Our own pid too: the host resumes this watchdog if a target stops it (SIGCONT, process_group.py).
    _send(sock, {"pid": target.pid, "subreaper": subreaper, "watchdog": os.getpid()})
    exit_code, on_its_own = _watch(sock, target.pid, use_pidfd=spec.get("pidfd", True))
    # Reaped by ``kill_tree``: tell the Popen object, or its finalizer would queue the pid for a later
    # ``waitpid`` that could reap another leg's target once the pid is reused.
    target.returncode = exit_code
    _send(sock, {"exit": exit_code})
    return on_its_own


def _read_line(sock: socket.socket) -> bytes:
    """One newline-terminated line (without the newline), or b"" at end-of-file before one."""
    chunks = [b""]
    while not chunks[-1].endswith(b"\n"):  # the host sends the line and then waits for the answer
        chunk = sock.recv(1 << 20)
        if not chunk:
            return b""
        chunks.append(chunk)
    return b"".join(chunks)[:-1]


def _watch(sock: socket.socket, pid: int, use_pidfd: bool = True) -> tuple[int, bool]:
    """Wait for the target's exit or the lifeline; kill the tree either way. The target's exit code,
    and whether it exited on its own (False: killed on the host's word or its end-of-file).
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
    try:
        while True:
            events = dict(poller.poll(None if pidfd is not None else 10))
            if sock.fileno() in events:
                try:
                    data = sock.recv(4096, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data or b"kill" in data:  # host gone (EOF) or asked: kill now
                    kill_tree(pid)
                    return -signal.SIGKILL, False
                sock.recv(len(data))
            status = _exited(pid)
            if status is not None:
                kill_tree(pid)  # leftovers: nothing outlives a leg
                return status, True
    finally:
        if pidfd is not None:
            os.close(pidfd)


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
