"""Supervised child processes for adapters: nothing a target starts outlives its leg, or the host.

``LegProcess.launch(argv, cwd, env, stdin=...)`` starts a target through a per-leg watchdog
(``lifeline.py``, a stdlib-only script run with ``python -I``) that

* starts the target as the leader of a new session and process group, on pipes the host reads;
* is a Linux **child subreaper**, so a grandchild that called ``setsid()`` (or double-forked) is still
  its descendant when orphaned, and is killed when the leg ends: on the target's own exit, on
  ``kill()``, and on ``close()``;
* holds a socketpair **lifeline** to the host: when the host dies, even by SIGKILL, the watchdog reads
  end-of-file and kills the whole tree within milliseconds. (No ``preexec_fn``: the host has threads.)

The API, shared by every adapter that runs a local process (command line, MCP stdio servers):

* ``LegProcess.launch(argv, cwd, env, *, stdin: bool) -> LegProcess``; an ``OSError`` (with ``errno``,
  ``filename``) when the target could not be started (E2BIG included);
* ``.pid`` (= the target's pgid), ``.stdin`` / ``.stdout`` / ``.stderr`` (binary pipe files, ``stdin``
  None unless asked for), ``.lifeline`` (a readable fd for a selector: readable when the watchdog
  reports the exit), ``.read_exit() -> int | None`` (call when ``lifeline`` is readable; the exit code,
  −9 when killed, or None for no news yet), ``.kill()`` (ask the watchdog to kill the tree now;
  prompt), ``.close() -> int`` (kill the tree unless it already ended, close the pipes, reap the
  watchdog; returns the exit code);
* ``live_process_groups()``, ``kill_all_live_groups()`` (every live leg of this process; also at exit).

If the watchdog itself is killed (only the host's own user can), the host SIGKILLs the target's group
and reports exit −9, as the reference does.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

__all__ = [
    "LIFELINE_SCRIPT",
    "LegProcess",
    "kill_all_live_groups",
    "kill_process_group",
    "live_process_groups",
    "track_process_group",
    "untrack_process_group",
]

LIFELINE_SCRIPT = str(Path(__file__).with_name("lifeline.py"))
#: How long the watchdog may take to start and answer with the target's pid.
_START_TIMEOUT_S = 30.0
_KILL_INTERVAL_S = 0.005
_KILL_TRIES = 100

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


class LegProcess:
    """One target under its watchdog (module docstring)."""

    def __init__(self, watchdog: subprocess.Popen[bytes], sock: socket.socket, pid: int) -> None:
        self._watchdog = watchdog
        self._sock = sock
        self._buffer = b""
        self._exit: int | None = None
        self._closed = False
        self.pid = pid
        self.stdin: IO[bytes] | None = watchdog.stdin
        self.stdout: IO[bytes] = watchdog.stdout  # type: ignore[assignment]
        self.stderr: IO[bytes] = watchdog.stderr  # type: ignore[assignment]

    @classmethod
    def launch(cls, argv: Sequence[str], cwd: str, env: Mapping[str, str], *, stdin: bool) -> LegProcess:
        """Start ``argv`` in ``cwd`` with exactly ``env`` under a fresh watchdog; ``OSError`` if it cannot."""
        host_end, child_end = socket.socketpair()
        try:
            watchdog = subprocess.Popen(
                [sys.executable, "-I", "-S", LIFELINE_SCRIPT, str(child_end.fileno())],
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(child_end.fileno(),),
                env={},
                cwd="/",
                close_fds=True,
                start_new_session=True,  # Ctrl-C at a terminal reaches the host, which decides
            )
        except OSError:
            host_end.close()
            raise
        finally:
            child_end.close()
        try:
            # The watchdog runs in "/": a relative cwd means relative to this process's directory.
            request = {"argv": list(argv), "cwd": os.path.abspath(cwd), "env": dict(env), "pidfd": USE_PIDFD}
            host_end.sendall(json.dumps(request).encode() + b"\n")
            answer, rest = cls._first_answer(host_end)
        except BaseException:
            host_end.close()
            _stop(watchdog)
            raise
        if answer is None or "pid" not in answer:
            host_end.close()
            _stop(watchdog)
            error = (answer or {}).get("spawnError") or {}
            code = error.get("errno")
            raise OSError(code if isinstance(code, int) else 0, error.get("strerror") or "the watchdog did not start the target",
                          error.get("filename"))
        leg = cls(watchdog, host_end, int(answer["pid"]))
        leg._buffer = rest  # a quick target's exit report may have arrived with the pid
        leg._parse_buffer()
        with _LIVE_LOCK:
            _LIVE[leg.pid] = leg
        return leg

    @staticmethod
    def _first_answer(sock: socket.socket) -> tuple[dict | None, bytes]:
        """The watchdog's first message, and whatever arrived after it (kept, never dropped)."""
        sock.settimeout(_START_TIMEOUT_S)
        data = b""
        try:
            while b"\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    return None, b""
                data += chunk
        except TimeoutError:
            return None, b""
        finally:
            sock.settimeout(None)
        line, rest = data.split(b"\n", 1)
        return json.loads(line), rest

    def _parse_buffer(self) -> None:
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            message = json.loads(line)
            if "exit" in message:
                self._exit = int(message["exit"])

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

    def kill(self) -> None:
        """Ask the watchdog to kill the whole tree now (it answers with exit −9)."""
        with contextlib.suppress(OSError):
            self._sock.send(b"kill\n", socket.MSG_DONTWAIT)

    def close(self) -> int:
        """End the leg: kill the tree unless it already ended, close every pipe, reap the watchdog."""
        if self._closed:
            return self._exit if self._exit is not None else -signal.SIGKILL
        self._closed = True
        if self._exit is None:
            self.kill()
            self._sock.settimeout(_START_TIMEOUT_S)
            try:
                while self._exit is None:
                    chunk = self._sock.recv(65536)
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
        self._sock.close()
        _stop(self._watchdog)
        return self._exit


def _stop(watchdog: subprocess.Popen[bytes]) -> None:
    """Reap the watchdog (it exits once the tree is dead); SIGKILL it if it lingers."""
    try:
        watchdog.wait(timeout=_START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()
    for stream in (watchdog.stdin, watchdog.stdout, watchdog.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
