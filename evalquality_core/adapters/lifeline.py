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

It starts once per leg, so its start-up is part of every leg's cost: it imports only modules written
in C (``_json``, ``_signal``, ``select``, ``time``) and ``ctypes``, starts the target with
``os.posix_spawn`` (``subprocess`` and ``socket`` alone doubled its start-up), and finds its children
in ``/proc/<pid>/task/<pid>/children`` rather than by reading every process's ``stat``
(benchmarks/bench_scale.py fan-out).
"""

import ctypes
import errno
import os
import select
import sys
import time

try:  # the C halves of json and signal: no pure-Python modules (re, enum) to load at every leg
    import _json
    import _signal as signal
except ImportError:  # another interpreter: the full modules
    import json as _json_module
    import signal  # type: ignore[no-redef]

    _json = None  # type: ignore[assignment]

PR_SET_CHILD_SUBREAPER = 36
_ROUND_S = 0.005
_MAX_ROUNDS = 4000  # 20 s of rounds against a target that keeps forking


class _Strict:
    """The decoder settings ``_json.make_scanner`` reads (those of ``json.loads``)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = None


def _loads(text: str) -> object:
    if _json is None:
        return _json_module.loads(text)
    value, end = _json.make_scanner(_Strict())(text, 0)
    if text[end:].strip():
        raise ValueError("extra data after the launch spec")
    return value


def _dumps(value: object) -> str:
    """JSON of the few shapes the watchdog sends (objects of ints, booleans, strings and null)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value) if _json is not None else _json_module.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_dumps(str(k))}: {_dumps(v)}" for k, v in value.items()) + "}"
    return _dumps(str(value))


def _become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children(me: int) -> list[int]:
    """Pids whose parent is ``me``: this (single-threaded) process's ``children`` list in /proc, else a
    scan of every process's ``stat``. Either may miss a child born meanwhile; ``kill_tree`` rounds again."""
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as handle:
            return [int(pid) for pid in handle.read().split()]
    except (OSError, ValueError):
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


def _send(fd: int, message: dict) -> None:
    data = (_dumps(message) + "\n").encode()
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass  # the host is gone: nothing to tell


def _read_line(fd: int) -> tuple[bytes, bytes]:
    """The first line the host sends, and whatever came after it (a ``kill`` may follow at once)."""
    data = b""
    while b"\n" not in data:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return b"", b""
        if not chunk:
            return b"", b""
        data += chunk
    line, rest = data.split(b"\n", 1)
    return line, rest


def _spawn(spec: dict) -> int:
    """Start the target as the leader of a new session on fds 0-2, default SIGPIPE/SIGXFSZ dispositions
    (as ``subprocess``' ``restore_signals``), looking ``argv[0]`` up on the *target's* PATH when it names
    no directory (as ``subprocess`` with ``env=``). ``OSError`` (with ``filename``) when it cannot start."""
    argv, env, cwd = list(spec["argv"]), dict(spec["env"]), spec["cwd"]
    if not argv or not all(isinstance(part, str) for part in argv):
        raise ValueError("argv must be a non-empty list of strings")
    try:
        os.chdir(cwd)  # the target inherits it (this watchdog needs no working directory of its own)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, cwd) from None
    program = argv[0]
    candidates = [program] if os.sep in program else [os.path.join(d, program) for d in os.get_exec_path(env)]
    defaults = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name))
    first_error: OSError | None = None
    last_error = OSError(errno.ENOENT, os.strerror(errno.ENOENT))
    for path in candidates:
        try:
            return os.posix_spawn(path, argv, env, setsid=True, setsigdef=defaults)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR) and first_error is None:
                first_error = exc
            last_error = exc
    error = first_error or last_error
    raise OSError(error.errno, error.strerror, program)


def main() -> int:
    """Run one leg's watchdog (module docstring)."""
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)  # the lifeline never reaches the target
    subreaper = _become_subreaper()
    line, pending = _read_line(fd)
    if not line:
        return 0
    try:
        spec = _loads(line.decode("utf-8"))
        pid = _spawn(spec)  # type: ignore[arg-type]
    except OSError as exc:
        _send(fd, {"spawnError": {"errno": exc.errno, "strerror": exc.strerror, "filename": exc.filename}})
        return 0
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
        _send(fd, {"spawnError": {"errno": None, "strerror": str(exc), "filename": None}})
        return 0
    # Ignored only now: an ignored disposition would be inherited by the target across exec.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)  # only SIGKILL or the lifeline end the watchdog
    _send(fd, {"pid": pid, "subreaper": subreaper})
    null = os.open(os.devnull, os.O_RDWR)
    for target_fd in (0, 1, 2):
        os.dup2(null, target_fd)
    os.close(null)
    if b"kill" in pending:  # asked to kill before the target even started
        kill_tree(pid)
        exit_code = -signal.SIGKILL
    else:
        exit_code = _watch(fd, pid, use_pidfd=spec.get("pidfd", True))  # type: ignore[union-attr]
    _send(fd, {"exit": exit_code})
    return 0


def _watch(fd: int, pid: int, use_pidfd: bool = True) -> int:
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
    poller.register(fd, select.POLLIN | select.POLLHUP)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    while True:
        events = dict(poller.poll(None if pidfd is not None else 10))
        if fd in events:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data or b"kill" in data:  # host gone (EOF) or asked: kill now
                kill_tree(pid)
                return -signal.SIGKILL
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
