"""The command-line adapter: one cli ``ProbeRequest`` → one child process → one ``CliProbeObservation``.

preflight-adapter.md §4 (policy, order of operations, argv, stdin, spawn, caps, read-back, faults).
Every denial is decided by the pure ``probe.policy`` before any process starts. The child is spawned
without a shell, as the leader of a new session and process group, with an environment of the
adapter's own ``PATH`` plus the declared, permitted keys only. Output is read incrementally and never
kept past ``maxOutputBytes``; a budget breach SIGKILLs the whole group (grandchildren too).

Decisions that differ from the reference, on purpose:

* **Nothing outlives a leg.** When the target exits on its own, whatever it left running in its
  group is SIGKILLed too (the reference leaves it alone), so a staged workspace can be removed safely.
  A grandchild that left the group with ``setsid`` keeps the pipes open and the leg ends at its
  elapsed budget, as in the reference.
* **Per-call working directory.** ``probe(request, workdir=...)``: a relative ``cwd`` in the policy
  (``"."`` typically) is resolved against the workdir of this call, falling back to the adapter's
  ``workdir`` and then the process's own; artifacts are relative to the resolved ``cwd``. The
  pre-flight flow stages a fresh workspace per leg and passes it here (harness.md A.7).
* **Live groups are tracked** in a module registry: ``kill_all_live_groups()`` SIGKILLs every group
  still running; a caller (the Prefect flow) calls it on ``BaseException``, and it runs at exit.
"""

from __future__ import annotations

import atexit
import errno
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from evalquality_core.artifacts.port_messages import (
    ApiProbeRequest,
    CliProbeObservation,
    CliProbeRequest,
    JsonPayload,
    McpProbeRequest,
    TextPayload,
    read_probe_request,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.argv import build_argv, json_stringify
from evalquality_core.probe.observation import assemble_cli_observation
from evalquality_core.probe.policy import (
    CommandTargetAuthorization,
    CommandTargetPolicy,
    evaluate_request,
    forbidden_target_fault,
)
from evalquality_core.probe.port import AbortSignal

__all__ = [
    "CommandLineAdapter",
    "LaunchSpec",
    "Mechanism",
    "ProcessResult",
    "TimedObservation",
    "kill_all_live_groups",
    "kill_process_group",
    "live_process_groups",
    "run_process",
    "track_process_group",
    "untrack_process_group",
]

_CHUNK = 65536
#: How often a run polls its abort signal while nothing else happens (the prompt-abort rule).
_ABORT_POLL_S = 0.02
#: Group kill: SIGKILL repeated every 5 ms, at most 100 times, to catch children caught mid-fork.
_KILL_INTERVAL_S = 0.005
_KILL_TRIES = 100

_TYPED_REQUESTS = (CliProbeRequest, ApiProbeRequest, McpProbeRequest)

_LIVE_GROUPS: set[int] = set()
_LIVE_LOCK = threading.Lock()


def live_process_groups() -> frozenset[int]:
    """The process-group ids of every child this process is running right now."""
    with _LIVE_LOCK:
        return frozenset(_LIVE_GROUPS)


def kill_all_live_groups() -> list[int]:
    """SIGKILL every live child's process group; return the pgids signalled.

    Call it from a ``BaseException`` handler (KeyboardInterrupt, a cancelled flow) so no target
    survives its caller; it is also registered with ``atexit``. The runs themselves still reap.
    """
    signalled = []
    for pgid in live_process_groups():
        try:
            os.killpg(pgid, signal.SIGKILL)
            signalled.append(pgid)
        except OSError:
            pass
    return signalled


atexit.register(kill_all_live_groups)


def track_process_group(pgid: int) -> None:
    """Count a group another adapter started (an HTTP service) among the live groups, so
    ``kill_all_live_groups`` and process exit kill it too."""
    with _LIVE_LOCK:
        _LIVE_GROUPS.add(pgid)


def untrack_process_group(pgid: int) -> None:
    """Forget a group ``track_process_group`` counted (after it was killed and reaped)."""
    with _LIVE_LOCK:
        _LIVE_GROUPS.discard(pgid)


def _group_has_live_member(pgid: int) -> bool:
    """True while some process of the group is not a zombie (Linux ``/proc``; elsewhere, while the
    group exists at all). A zombie is dead: it only waits for its parent (or init) to reap it."""
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
        # Fields after the parenthesised command: state, ppid, pgrp, …
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def kill_process_group(pgid: int) -> None:
    """SIGKILL the group repeatedly until it is gone (or only zombies remain), at most 100 tries."""
    for _ in range(_KILL_TRIES):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except PermissionError:
            return
        if not _group_has_live_member(pgid):
            return
        time.sleep(_KILL_INTERVAL_S)


@dataclass(frozen=True)
class LaunchSpec:
    """Everything one spawn needs; built by the adapter from the policy and the request."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    stdin: bytes | None
    max_elapsed_ms: int
    max_output_bytes: int


@dataclass(frozen=True)
class ProcessResult:
    """A run that ended on its own: exit code (−signal when a signal ended it), both streams, and the
    wall-clock milliseconds from spawn to reap (for cost reports; never part of an observation)."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    elapsed_ms: int = 0


@dataclass(frozen=True)
class TimedObservation:
    """An observation with the elapsed time of its run. Timing stays outside the observation
    (preflight-adapter.md §3.2: content only), so identical answers stay byte-identical."""

    observation: CliProbeObservation
    elapsed_ms: int


class Mechanism(Protocol):
    """The one underlying call of the adapter (injectable so a test can count or break it)."""

    def __call__(self, spec: LaunchSpec, abort: AbortSignal | None) -> ProcessResult:
        """Run the spec once."""
        ...


def _spawn_failure(exc: OSError, spec: LaunchSpec) -> RuntimeFault:
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    where = exc.filename if exc.filename is not None else spec.argv[0]
    detail = f'could not start "{spec.argv[0]}" in "{spec.cwd}": {name} ({where}): {exc.strerror or exc}'
    if exc.errno == errno.E2BIG:
        return RuntimeFault("port-failure", "ProbeObservation", detail, port_failure_reason="launch-too-large")
    return RuntimeFault("port-failure", "ProbeObservation", detail)


def _leader_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Has the leader exited? Only used where pidfd is missing. Asked without reaping it where
    ``waitid`` exists, so its pid (the pgid) stays ours meanwhile; elsewhere (macOS) it is reaped."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return proc.poll() is not None
    try:
        return waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def run_process(spec: LaunchSpec, abort: AbortSignal | None = None) -> ProcessResult:
    """The real mechanism: spawn, feed stdin, read both streams under the caps, reap, kill leftovers.

    Raises ``port-failure`` (spawn failure; E2BIG → ``launch-too-large``), ``budget-exhausted`` at
    ``CommandProbeRequest`` (time, or a stream's byte cap, naming which) or ``aborted``.
    """
    try:
        proc = subprocess.Popen(
            list(spec.argv),
            cwd=spec.cwd,
            env=dict(spec.env),
            stdin=subprocess.PIPE if spec.stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            shell=False,
            start_new_session=True,  # leader of a new session and process group: pgid == pid
            close_fds=True,
        )
    except OSError as exc:
        raise _spawn_failure(exc, spec) from None
    started = time.monotonic()
    pgid = proc.pid
    with _LIVE_LOCK:
        _LIVE_GROUPS.add(pgid)
    try:
        stdout, stderr = _supervise(proc, spec, abort)
    finally:
        _finish(proc, pgid)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    return ProcessResult(exit_code=proc.returncode, stdout=stdout, stderr=stderr, elapsed_ms=elapsed_ms)


def _finish(proc: subprocess.Popen[bytes], pgid: int) -> None:
    # Kill while the leader is unreaped (its pid, hence the pgid, cannot be reused), then reap it,
    # then keep killing until no live member of the group remains.
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    with _LIVE_LOCK:
        _LIVE_GROUPS.discard(pgid)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    proc.wait()
    kill_process_group(pgid)


def _supervise(proc: subprocess.Popen[bytes], spec: LaunchSpec, abort: AbortSignal | None) -> tuple[bytes, bytes]:
    """Feed stdin and read both streams until they close and the leader has exited (not reaped)."""
    cap = spec.max_output_bytes
    deadline = time.monotonic() + spec.max_elapsed_ms / 1000.0
    # poll(2), as subprocess.communicate uses: no epoll instance to create and close per run.
    selector = selectors.PollSelector() if hasattr(selectors, "PollSelector") else selectors.DefaultSelector()
    kept = {"stdout": bytearray(), "stderr": bytearray()}
    counted = {"stdout": 0, "stderr": 0}
    assert proc.stdout is not None and proc.stderr is not None
    for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        os.set_blocking(stream.fileno(), False)
        selector.register(stream.fileno(), selectors.EVENT_READ, name)
    pending = memoryview(spec.stdin) if spec.stdin else None
    if proc.stdin is not None and pending is not None:
        # Written from the same selector loop as the reads, so a child that fills its stdout before
        # reading all of stdin can never deadlock us (and we never hold more than one chunk extra).
        os.set_blocking(proc.stdin.fileno(), False)
        selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
    pidfd = _open_pidfd(proc.pid)
    exited = False
    if pidfd is not None:
        selector.register(pidfd, selectors.EVENT_READ, "exit")
    try:
        while True:
            streams_open = any(key.data in ("stdout", "stderr") for key in selector.get_map().values())
            if exited and not streams_open:
                break
            if abort is not None and abort.is_set():
                _kill_now(proc.pid)
                raise RuntimeFault("aborted", "ProbeObservation", "the caller aborted the probe; its process group was killed")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                _kill_now(proc.pid)
                raise RuntimeFault(
                    "budget-exhausted",
                    "CommandProbeRequest",
                    f"exceeded maxElapsedMs ({spec.max_elapsed_ms}ms) and was killed",
                )
            timeout = remaining
            if abort is not None:
                timeout = min(timeout, _ABORT_POLL_S)
            if pidfd is None and not streams_open:
                timeout = min(timeout, 0.005)  # no pidfd: poll for the exit
            events = selector.select(timeout)
            if pidfd is None and not exited and _leader_exited(proc):
                exited = True
                _kill_now(proc.pid)  # leftovers of a target that exited on its own
            for key, _mask in events:
                if key.data == "exit":
                    selector.unregister(key.fd)
                    exited = True
                    _kill_now(proc.pid)  # leftovers; the unreaped leader keeps the pgid ours
                elif key.data == "stdin":
                    pending = _feed(selector, proc, pending)
                else:
                    _drain(selector, key.fd, key.data, kept, counted, cap, proc.pid)
    finally:
        selector.close()
        if pidfd is not None:
            os.close(pidfd)
    return bytes(kept["stdout"]), bytes(kept["stderr"])


def _open_pidfd(pid: int) -> int | None:
    opener: Callable[[int], int] | None = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _kill_now(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _feed(selector: selectors.BaseSelector, proc: subprocess.Popen[bytes], pending: memoryview | None) -> memoryview | None:
    assert proc.stdin is not None
    fd = proc.stdin.fileno()
    try:
        if pending is not None and len(pending):
            written = os.write(fd, pending[:_CHUNK])
            pending = pending[written:]
    except BlockingIOError:
        return pending
    except (BrokenPipeError, ConnectionResetError):
        pending = None  # the child exited before reading everything: swallowed, as EPIPE is (§4.4)
    if pending is None or not len(pending):
        selector.unregister(fd)
        proc.stdin.close()
        return None
    return pending


def _drain(
    selector: selectors.BaseSelector,
    fd: int,
    name: str,
    kept: dict[str, bytearray],
    counted: dict[str, int],
    cap: int,
    pgid: int,
) -> None:
    try:
        chunk = os.read(fd, _CHUNK)
    except BlockingIOError:
        return
    if not chunk:
        selector.unregister(fd)
        return
    counted[name] += len(chunk)
    room = cap - len(kept[name])
    if room > 0:
        kept[name] += chunk[:room]
    if counted[name] > cap:  # exactly maxOutputBytes is allowed
        _kill_now(pgid)
        raise RuntimeFault(
            "budget-exhausted",
            "CommandProbeRequest",
            f"{name} exceeded maxOutputBytes ({cap}) and the process was killed",
        )


def _stdin_bytes(request: CliProbeRequest) -> bytes | None:
    stdin = request.channels.stdin
    if isinstance(stdin, JsonPayload):
        return json_stringify(stdin.value).encode("utf-8")
    if isinstance(stdin, TextPayload):
        return stdin.value.encode("utf-8")
    return None


def _resolve(base: str | None, path: str) -> str:
    if os.path.isabs(path) or base is None:
        return path
    return os.path.join(base, path)


class CommandLineAdapter:
    """The real ``ProbePort`` for cli requests under a ``CommandTargetPolicy`` (§4).

    ``CommandLineAdapter(policy, workdir=None, mechanism=run_process, search_path=None)``;
    ``probe(request, *, abort=None, workdir=None) -> CliProbeObservation``. ``search_path`` is the
    PATH the child sees (default: this process's PATH at call time); a request can never set it.
    """

    def __init__(
        self,
        policy: CommandTargetPolicy,
        *,
        workdir: str | os.PathLike[str] | None = None,
        mechanism: Mechanism = run_process,
        search_path: str | None = None,
    ) -> None:
        self.policy = policy
        self.workdir = None if workdir is None else os.fspath(workdir)
        self.mechanism = mechanism
        self.search_path = search_path

    def probe(
        self,
        request: CliProbeRequest | dict[str, Any] | Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> CliProbeObservation:
        """Run one request (§4.2): abort check, parse, policy, environment, argv, spawn, read-back."""
        return self.probe_timed(request, abort=abort, workdir=workdir).observation

    def probe_timed(
        self,
        request: CliProbeRequest | dict[str, Any] | Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> TimedObservation:
        """``probe``, also returning the run's elapsed milliseconds (spawn to reap)."""
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeRequest", "the caller aborted before the probe started")
        # A typed request is taken as is; anything else (wire JSON, or junk) goes through the schema.
        parsed = request if isinstance(request, _TYPED_REQUESTS) else read_probe_request(request)
        decision = evaluate_request(self.policy, parsed)
        if not decision.allowed or decision.authorization is None:
            raise forbidden_target_fault(decision)
        assert isinstance(parsed, CliProbeRequest)
        authorization = decision.authorization
        base = os.fspath(workdir) if workdir is not None else self.workdir
        cwd = _resolve(base, authorization.cwd)
        spec = self.launch_spec(parsed, authorization, cwd)
        try:
            result = self.mechanism(spec, abort)
        except RuntimeFault:
            raise
        except Exception as exc:  # §3.4: any other mechanism error
            if abort is not None and abort.is_set():
                raise RuntimeFault("aborted", "ProbeObservation", "the caller aborted during the probe") from exc
            raise RuntimeFault(
                "port-failure", "ProbeObservation", f"the underlying mechanism threw {type(exc).__name__}: {exc}"
            ) from exc
        artifacts = self.read_artifacts(authorization, cwd)
        observation = assemble_cli_observation(parsed, result.exit_code, result.stdout, result.stderr, artifacts)
        return TimedObservation(observation, result.elapsed_ms)

    def launch_spec(self, request: CliProbeRequest, authorization: CommandTargetAuthorization, cwd: str) -> LaunchSpec:
        """The spawn of an authorized request: argv, cwd, the PATH-plus-permitted environment, stdin."""
        path = self.search_path if self.search_path is not None else os.environ.get("PATH")
        env = {} if path is None else {"PATH": path}
        env.update(request.channels.environment)
        argv = (
            authorization.target,
            *authorization.target_args,
            *build_argv(request.subcommand_path, request.channels.option, request.channels.argument),
        )
        return LaunchSpec(
            argv=argv,
            cwd=cwd,
            env=env,
            stdin=_stdin_bytes(request),
            max_elapsed_ms=authorization.max_elapsed_ms,
            max_output_bytes=authorization.max_output_bytes,
        )

    @staticmethod
    def read_artifacts(authorization: CommandTargetAuthorization, cwd: str) -> dict[str, bytes | None]:
        """§4.6: every mapped artifact, at most ``maxOutputBytes + 1`` bytes read; missing → ``None``."""
        cap = authorization.max_output_bytes
        found: dict[str, bytes | None] = {}
        for artifact_id, relative in authorization.artifacts.items():
            path = _resolve(cwd, relative)
            try:
                with open(path, "rb") as handle:
                    data = handle.read(cap + 1)
            except FileNotFoundError:
                found[artifact_id] = None
                continue
            except OSError as exc:
                name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
                raise RuntimeFault(
                    "port-failure", "ProbeObservation", f'artifact "{artifact_id}" could not be read from "{path}": {name}'
                ) from None
            if len(data) > cap:
                raise RuntimeFault(
                    "budget-exhausted", "CommandProbeRequest", f'artifact "{artifact_id}" exceeded maxOutputBytes ({cap})'
                )
            found[artifact_id] = data
        return found
