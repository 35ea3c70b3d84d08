"""The per-leg watchdog: a tiny process between the host and one target (run as a script, stdlib only).

Started by ``process_group.LegProcess.launch`` as ``python -I lifeline.py <fd>``, where ``<fd>`` is its
end of a socketpair to the host (the lifeline). It

1. makes itself a **child subreaper** (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), so every descendant of
   the target that is orphaned, whether or not it called ``setsid()``, is re-parented to this watchdog
   instead of to init and can still be found;
2. reads the launch spec (argv, cwd, env) as one JSON line from the lifeline (never from argv, so
   nothing secret shows in ``ps``), starts the target as the leader of a new session and process group
   on the watchdog's own stdin/stdout/stderr (the host's pipes), answers ``{"pid": n}`` or
   ``{"spawnError": {...}}``, and then replaces its own stdio with ``/dev/null``;
3. waits for either the target's exit or the lifeline: a ``kill`` line, or end-of-file (the host died,
   even by SIGKILL). Either way it **kills the whole tree**: SIGKILL to the target's group, then,
   repeatedly, to every child it has (the orphans re-parented to it, each with its group) until it has
   none left, reaping as it goes; then it answers ``{"exit": code}`` (the target's own exit status, or
   ``-9`` when it was killed) and exits.

Without a subreaper (not Linux) only the target's group is killed; README "Trust boundary" says so.
"""

from __future__ import annotations

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


def _become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children(me: int) -> list[int]:
    """Pids whose parent is ``me`` (from ``/proc``; empty where there is none)."""
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


def kill_tree(leader: int) -> None:
    """SIGKILL the target's group, then every child of this watchdog with its group, until none is left."""
    me = os.getpid()
    for _ in range(_MAX_ROUNDS):
        for target in [leader, *_children(me)]:
            for kill in (os.killpg, os.kill):
                try:
                    kill(target, signal.SIGKILL)
                except OSError:
                    pass
        if _reap_all():
            return
        time.sleep(_ROUND_S)


def _send(sock: socket.socket, message: dict) -> None:
    try:
        sock.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # the host is gone: nothing to tell


def main() -> int:
    """Run one leg's watchdog (module docstring)."""
    sock = socket.socket(fileno=int(sys.argv[1]))
    subreaper = _become_subreaper()
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
            stdin=0,
            stdout=1,
            stderr=2,
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
    # Ignored only now: an ignored disposition would be inherited by the target across exec.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)  # only SIGKILL or the lifeline end the watchdog
    _send(sock, {"pid": target.pid, "subreaper": subreaper})
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    exit_code = _watch(sock, reader, target.pid, use_pidfd=spec.get("pidfd", True))
    _send(sock, {"exit": exit_code})
    return 0


def _watch(sock: socket.socket, reader, pid: int, use_pidfd: bool = True) -> int:
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
            data = sock.recv(4096, socket.MSG_PEEK)
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
