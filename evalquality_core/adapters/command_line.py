"""The command-line adapter: one cli ``ProbeRequest`` → one child process → one ``CliProbeObservation``.

preflight-adapter.md §4 (policy, order of operations, argv, stdin, spawn, caps, read-back, faults).
Every denial is decided by the pure ``probe.policy`` before any process starts. The child is spawned
without a shell, as the leader of a new session and process group, under a leg watchdog
(``process_group``), with an environment of the adapter's own ``PATH`` (absolute entries only) plus
the declared, permitted keys only. Output is read incrementally and never kept past
``maxOutputBytes``; a budget breach kills the whole tree.

Decisions that differ from the reference, on purpose (README "Trust boundary"):

* **Nothing outlives a leg, or the host.** When the target exits on its own, whatever it left running
  is killed too, grandchildren that called ``setsid()`` included (the watchdog is a child subreaper);
  when the host dies, even by SIGKILL, the watchdog's lifeline closes and it kills the tree.
* **Artifact read-back is confined and bounded.** The leg's working directory is opened before the
  run; each artifact is then reached from that descriptor one component at a time, never through a
  symlink, never ``..``, and read only if ``fstat`` on the opened descriptor says it is a regular
  file (a FIFO, socket, device or directory is never opened for reading); at most
  ``maxOutputBytes + 1`` bytes, within what is left of ``maxElapsedMs``. A refused artifact is a
  ``port-failure`` at ``ProbeObservation`` naming the artifact and why (never its content). An
  absolute artifact path is read only when it lies inside the working directory.
* **Per-call working directory.** ``probe(request, workdir=...)``: a relative ``cwd`` in the policy
  (``"."`` typically) is resolved against the workdir of this call, falling back to the adapter's
  ``workdir`` and then the process's own; artifacts are relative to the resolved ``cwd``. The
  pre-flight flow stages a fresh workspace per leg and passes it here (harness.md A.7).
* **Live legs are tracked**: ``kill_all_live_groups()`` kills every leg still running; a caller (the
  Prefect flow) calls it on ``BaseException``, and it runs at exit.
* **E2BIG from any mechanism** (the default one, or an injected one raising ``OSError``) is
  ``port-failure`` with ``portFailureReason: launch-too-large``.
"""

from __future__ import annotations

import errno
import os
import selectors
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, Protocol

from evalquality_core.adapters.local_target import (
    LocalTargetAdapter,
    absolute_path_entries,
    admit,
    call_mechanism,
    launch_leg,
    leg_cwd,
    leg_environment,
)
from evalquality_core.adapters.process_group import (
    LegProcess,
    kill_all_live_groups,
    kill_process_group,
    live_process_groups,
    track_process_group,
    untrack_process_group,
)
from evalquality_core.artifacts.port_messages import (
    CliProbeObservation,
    CliProbeRequest,
    JsonPayload,
    TextPayload,
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
    "absolute_path_entries",
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


def run_process(spec: LaunchSpec, abort: AbortSignal | None = None) -> ProcessResult:
    """The real mechanism: launch under a watchdog, feed stdin, read both streams under the caps.

    Raises ``port-failure`` (spawn failure; E2BIG → ``launch-too-large``), ``budget-exhausted`` at
    ``CommandProbeRequest`` (time, or a stream's byte cap, naming which) or ``aborted``. Whatever the
    target started is killed when it ends (``process_group``), setsid grandchildren included.
    """
    leg = launch_leg(spec.argv, spec.cwd, spec.env, stdin=bool(spec.stdin))
    started = time.monotonic()
    try:
        stdout, stderr, exit_code = _supervise(leg, spec, abort)
    finally:
        leg.close()
    elapsed_ms = int((time.monotonic() - started) * 1000)
    return ProcessResult(exit_code=exit_code, stdout=stdout, stderr=stderr, elapsed_ms=elapsed_ms)


def _supervise(leg: LegProcess, spec: LaunchSpec, abort: AbortSignal | None) -> tuple[bytes, bytes, int]:
    """Feed stdin and read both streams until they close and the watchdog reported the exit."""
    cap = spec.max_output_bytes
    deadline = time.monotonic() + spec.max_elapsed_ms / 1000.0
    # poll(2), as subprocess.communicate uses: no epoll instance to create and close per run.
    selector = selectors.PollSelector() if hasattr(selectors, "PollSelector") else selectors.DefaultSelector()
    kept = {"stdout": bytearray(), "stderr": bytearray()}
    counted = {"stdout": 0, "stderr": 0}
    for name, stream in (("stdout", leg.stdout), ("stderr", leg.stderr)):
        os.set_blocking(stream.fileno(), False)
        selector.register(stream.fileno(), selectors.EVENT_READ, name)
    pending = memoryview(spec.stdin) if spec.stdin else None
    if leg.stdin is not None and pending is not None:
        # Written from the same selector loop as the reads, so a child that fills its stdout before
        # reading all of stdin can never deadlock us (and we never hold more than one chunk extra).
        os.set_blocking(leg.stdin.fileno(), False)
        selector.register(leg.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
    selector.register(leg.lifeline, selectors.EVENT_READ, "exit")
    # An abort signal with a descriptor (adapters/abort.py) wakes the selector itself; a plain event is polled.
    waitable = abort is not None and callable(getattr(abort, "fileno", None))
    if waitable:
        selector.register(abort.fileno(), selectors.EVENT_READ, "abort")  # type: ignore[union-attr]
    exit_code: int | None = None
    try:
        while True:
            streams_open = any(key.data in ("stdout", "stderr") for key in selector.get_map().values())
            if exit_code is not None and not streams_open:
                break
            if abort is not None and abort.is_set():
                leg.kill()
                raise RuntimeFault("aborted", "ProbeObservation", "the caller aborted the probe; its process group was killed")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                leg.kill()
                raise RuntimeFault(
                    "budget-exhausted",
                    "CommandProbeRequest",
                    f"exceeded maxElapsedMs ({spec.max_elapsed_ms}ms) and was killed",
                )
            timeout = remaining if abort is None or waitable else min(remaining, _ABORT_POLL_S)
            for key, _mask in selector.select(timeout):
                if key.data == "abort":
                    continue  # seen at the top of the loop
                if key.data == "exit":
                    exit_code = leg.read_exit()
                    if exit_code is not None:
                        selector.unregister(key.fd)
                elif key.data == "stdin":
                    pending = _feed(selector, leg.stdin, pending)
                else:
                    _drain(selector, key.fd, key.data, kept, counted, cap, leg)
    finally:
        selector.close()
    return bytes(kept["stdout"]), bytes(kept["stderr"]), exit_code


def _feed(selector: selectors.BaseSelector, stdin: IO[bytes] | None, pending: memoryview | None) -> memoryview | None:
    assert stdin is not None
    fd = stdin.fileno()
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
        stdin.close()
        return None
    return pending


def _drain(
    selector: selectors.BaseSelector,
    fd: int,
    name: str,
    kept: dict[str, bytearray],
    counted: dict[str, int],
    cap: int,
    leg: LegProcess,
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
        leg.kill()
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


class CommandLineAdapter(LocalTargetAdapter[CommandTargetPolicy, CliProbeObservation]):
    """The real ``ProbePort`` for cli requests under a ``CommandTargetPolicy`` (§4).

    ``CommandLineAdapter(policy, workdir=None, mechanism=run_process, search_path=None)``;
    ``probe(request, *, abort=None, workdir=None) -> CliProbeObservation``. ``search_path`` is the
    PATH the child sees (default: this process's PATH at call time); a request can never set it.
    """

    default_mechanism = staticmethod(run_process)
    mechanism: Mechanism

    def probe_timed(
        self,
        request: CliProbeRequest | dict[str, Any] | Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> TimedObservation:
        """``probe``, also returning the run's elapsed milliseconds (spawn to reap)."""
        parsed, authorization = admit(request, abort, self.policy, evaluate_request, forbidden_target_fault)
        assert isinstance(parsed, CliProbeRequest) and isinstance(authorization, CommandTargetAuthorization)
        cwd = leg_cwd(workdir, self.workdir, authorization.cwd)
        spec = self.launch_spec(parsed, authorization, cwd)
        # Opened before the run: read-back starts from this directory even if the target renames or
        # replaces it (its path could then lead anywhere).
        cwd_fd = _open_directory(cwd)
        try:
            result = call_mechanism(self.mechanism, spec, abort, spec.argv, spec.cwd)
            remaining_s = max(0.0, (authorization.max_elapsed_ms - result.elapsed_ms) / 1000.0)
            artifacts = self.read_artifacts(authorization, cwd, cwd_fd=cwd_fd, deadline=time.monotonic() + remaining_s)
        finally:
            if cwd_fd is not None:
                os.close(cwd_fd)
        observation = assemble_cli_observation(parsed, result.exit_code, result.stdout, result.stderr, artifacts)
        return TimedObservation(observation, result.elapsed_ms)

    def launch_spec(self, request: CliProbeRequest, authorization: CommandTargetAuthorization, cwd: str) -> LaunchSpec:
        """The spawn of an authorized request: argv, cwd, the PATH-plus-permitted environment, stdin.

        The child's ``PATH`` keeps absolute entries only: an empty, ``.`` or relative entry would let
        a file in the working directory (which the target controls) answer a bare command name.
        """
        env = leg_environment(self.search_path, request.channels.environment)
        argv = (
            authorization.target,
            *authorization.target_args,
            *build_argv(
                request.subcommand_path,
                request.channels.option,
                request.channels.argument,
                end_of_options=authorization.end_of_options,
            ),
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
    def read_artifacts(
        authorization: CommandTargetAuthorization,
        cwd: str,
        *,
        cwd_fd: int | None = None,
        deadline: float | None = None,
    ) -> dict[str, bytes | None]:
        """§4.6, confined: every mapped artifact, at most ``maxOutputBytes + 1`` bytes; missing → ``None``.

        ``cwd_fd`` is the working directory opened before the run (opened now when not given);
        ``deadline`` (monotonic seconds) bounds the whole read-back (module docstring).
        """
        own_fd = cwd_fd is None
        if cwd_fd is None:
            cwd_fd = _open_directory(cwd)
        try:
            found: dict[str, bytes | None] = {}
            for artifact_id, declared in authorization.artifacts.items():
                found[artifact_id] = _read_confined(
                    cwd_fd, cwd, declared, artifact_id, authorization.max_output_bytes, authorization.max_elapsed_ms, deadline
                )
            return found
        finally:
            if own_fd and cwd_fd is not None:
                os.close(cwd_fd)


_O_PATH = getattr(os, "O_PATH", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _open_directory(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except OSError:
        return None  # the run will report the missing working directory itself


def _refused(artifact_id: str, shown: str, why: str) -> RuntimeFault:
    return RuntimeFault("port-failure", "ProbeObservation", f'artifact "{artifact_id}" at "{shown}" is not read: {why}')


def _read_confined(
    cwd_fd: int | None,
    cwd: str,
    declared: str,
    artifact_id: str,
    cap: int,
    max_elapsed_ms: int,
    deadline: float | None,
) -> bytes | None:
    """One artifact, reached from ``cwd_fd`` without following any symlink, read only if a regular file."""
    shown = declared
    relative = declared
    if os.path.isabs(declared):
        relative = os.path.relpath(os.path.normpath(declared), os.path.normpath(os.path.abspath(cwd)))
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            raise _refused(artifact_id, shown, "it lies outside the leg's working directory")
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if not parts or os.pardir in parts:
        raise _refused(artifact_id, shown, "its path leaves the leg's working directory (..)")
    if cwd_fd is None:
        raise _refused(artifact_id, shown, f'the working directory "{cwd}" could not be opened')

    def overdue() -> RuntimeFault:
        return RuntimeFault(
            "budget-exhausted",
            "CommandProbeRequest",
            f'exceeded maxElapsedMs ({max_elapsed_ms}ms) while reading artifact "{artifact_id}" back',
        )

    opened: list[int] = []
    try:
        current = cwd_fd
        for part in parts[:-1]:
            try:
                current = os.open(part, (_O_PATH or os.O_RDONLY) | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=current)
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refused(artifact_id, shown, f'"{part}" is a symlink or not a directory') from None
                raise _refused(artifact_id, shown, errno.errorcode.get(exc.errno or 0, "error")) from None
            opened.append(current)
        leaf = parts[-1]
        # O_PATH (Linux) opens nothing for reading: the kind is checked before any read is possible.
        flags = (_O_PATH | _O_NOFOLLOW | _O_CLOEXEC) if _O_PATH else (os.O_RDONLY | os.O_NONBLOCK | _O_NOFOLLOW | _O_CLOEXEC)
        try:
            handle = os.open(leaf, flags, dir_fd=current)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refused(artifact_id, shown, "it is a symlink") from None
            raise _refused(artifact_id, shown, errno.errorcode.get(exc.errno or 0, "error")) from None
        opened.append(handle)
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(artifact_id, shown, f"it is a {_kind(info.st_mode)}, not a regular file")
        if info.st_size > cap:
            raise RuntimeFault("budget-exhausted", "CommandProbeRequest", f'artifact "{artifact_id}" exceeded maxOutputBytes ({cap})')
        if _O_PATH:
            # Re-open the very inode the O_PATH descriptor names (no path lookup, so no race).
            reader = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC)
            opened.append(reader)
            again = os.fstat(reader)
            if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(again.st_mode):
                raise _refused(artifact_id, shown, "it changed while it was opened")
        else:
            reader = handle
        data = bytearray()
        while len(data) <= cap:
            if deadline is not None and time.monotonic() > deadline:
                raise overdue()
            chunk = os.read(reader, min(_CHUNK, cap + 1 - len(data)))
            if not chunk:
                break
            data += chunk
        if len(data) > cap:
            raise RuntimeFault("budget-exhausted", "CommandProbeRequest", f'artifact "{artifact_id}" exceeded maxOutputBytes ({cap})')
        if deadline is not None and time.monotonic() > deadline:
            raise overdue()
        return bytes(data)
    except OSError as exc:
        raise _refused(artifact_id, shown, errno.errorcode.get(exc.errno or 0, type(exc).__name__)) from None
    finally:
        for fd in reversed(opened):
            os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISLNK, "symlink"),
    ):
        if test(mode):
            return name
    return "special file"
