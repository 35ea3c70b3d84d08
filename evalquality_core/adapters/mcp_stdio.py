"""The stdio MCP adapter: one mcp ``ProbeRequest`` → one tool-server session → one ``McpProbeObservation``.

preflight-adapter.md §4.9; the sibling of the command-line adapter behind the same probe port. Every
denial (``interface-not-authorized``, ``tool-not-authorized``) is decided by the pure
``probe.mcp_policy`` before any process starts. Then one session per probe:

1. spawn ``target *targetArgs`` without a shell, as the leader of a new session and process group,
   in ``cwd``, with the adapter's ``PATH`` plus ``serverEnvironment`` and nothing else of ours;
2. ``initialize`` (protocol ``2025-06-18``), then ``notifications/initialized``, then ``tools/call``
   with the request's arguments (they travel inside the JSON-RPC frame only, never in argv or env);
3. teardown: close the server's stdin, then SIGKILL its whole group (grandchildren too) and reap.

Framing is newline-delimited JSON-RPC on stdout; stderr is drained (the transport reserves it for
logs). ``maxOutputBytes`` caps stdout and, separately, stderr; ``maxElapsedMs`` covers the whole
session, launch to teardown. What becomes what:

* a line on stdout that is not JSON, a refused ``initialize`` (a JSON-RPC error), a server gone
  before answering ``initialize``, a spawn failure → ``port-failure``;
* a tool result → observation: ``structuredContent`` is the result (absent when the tool published
  none), ``isError`` is the tool's flag (true only when it says ``true``);
* a JSON-RPC error answering ``tools/call`` → observation with ``isError: true`` and the error object
  as the result;
* the server gone after the handshake, before answering ``tools/call`` → observation with
  ``isError: true``, an absent result and the server's signed exit code (−signal when a signal ended
  it);
* a cap → ``budget-exhausted`` at ``McpProbeRequest``; the caller's abort → ``aborted``.

Messages the server sends that are not answers to us are not observations: notifications are
ignored, a ``ping`` request is answered with an empty result and any other request with JSON-RPC
"method not found" (we declare no client capabilities), so a server never waits on us.

The trust boundary is the command adapter's: the same live-group registry (``kill_all_live_groups``
kills sessions too) and the same repeated group kill, so nothing the server started outlives its
session.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from evalquality_core.adapters.command_line import (
    _LIVE_GROUPS,
    _LIVE_LOCK,
    kill_process_group,
)
from evalquality_core.artifacts.port_messages import (
    ApiProbeRequest,
    CliProbeRequest,
    McpProbeObservation,
    McpProbeRequest,
    read_probe_observation,
    read_probe_request,
)
from evalquality_core.canonical.json import check_value_domain
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.mcp_policy import (
    MCP_PROTOCOL_VERSION,
    McpTargetAuthorization,
    McpTargetPolicy,
    evaluate_mcp_request,
    mcp_forbidden_target_fault,
)
from evalquality_core.probe.port import AbortSignal

__all__ = [
    "McpCallResult",
    "McpMechanism",
    "McpSessionSpec",
    "McpStdioAdapter",
    "McpTimedObservation",
    "assemble_mcp_observation",
    "run_mcp_session",
]

_CHUNK = 65536
_ABORT_POLL_S = 0.02
_INITIALIZE_ID = 1
_CALL_ID = 2
#: How much of the server's stderr a port-failure detail quotes (the rest is counted, not kept).
_STDERR_QUOTE = 400
_CLIENT_INFO = {"name": "eval-quality", "version": "0"}
_TYPED_REQUESTS = (CliProbeRequest, ApiProbeRequest, McpProbeRequest)
_CAP_PATH = "McpProbeRequest"


@dataclass(frozen=True)
class McpSessionSpec:
    """Everything one session needs; built by the adapter from the authorization and the request."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    tool_name: str
    arguments: Mapping[str, Any]
    max_elapsed_ms: int
    max_output_bytes: int


@dataclass(frozen=True)
class McpCallResult:
    """One tool call reduced to what an observation needs. ``has_result`` false means the call
    published no structured content (an absent result); ``exit_code`` is set only when the server
    ended the session after the handshake and before answering."""

    is_error: bool
    has_result: bool
    result: Any
    exit_code: int | None = None
    elapsed_ms: int = 0


@dataclass(frozen=True)
class McpTimedObservation:
    """An observation with the elapsed milliseconds of its session (kept outside the observation)."""

    observation: McpProbeObservation
    elapsed_ms: int


class McpMechanism(Protocol):
    """The one underlying call of the adapter: one whole session (injectable for counting/breaking)."""

    def __call__(self, spec: McpSessionSpec, abort: AbortSignal | None) -> McpCallResult:
        """Run the session once."""
        ...


class _NotJson(Exception):
    pass


def _refuse_constant(literal: str) -> Any:
    raise _NotJson(literal)


class _ServerGone(Exception):
    """stdout reached end of file before the answer we were waiting for."""


def _port_failure(detail: str) -> RuntimeFault:
    return RuntimeFault("port-failure", "ProbeObservation", detail)


def _spawn_failure(exc: OSError, spec: McpSessionSpec) -> RuntimeFault:
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    where = exc.filename if exc.filename is not None else spec.argv[0]
    detail = f'could not start tool server "{spec.argv[0]}" in "{spec.cwd}": {name} ({where}): {exc.strerror or exc}'
    if exc.errno == errno.E2BIG:
        return RuntimeFault("port-failure", "ProbeObservation", detail, port_failure_reason="launch-too-large")
    return _port_failure(detail)


def _frame(message: Mapping[str, Any]) -> bytes:
    # ensure_ascii keeps every frame one line whatever the arguments hold (a raw U+2028 is fine in
    # JSON, but an escaped one is fine everywhere); the server decodes the escapes back byte for byte.
    return (json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")


class _Session:
    """One live server: a selector loop that writes frames, reads lines and enforces the caps."""

    def __init__(self, proc: subprocess.Popen[bytes], spec: McpSessionSpec, abort: AbortSignal | None) -> None:
        self.proc = proc
        self.spec = spec
        self.abort = abort
        self.deadline = time.monotonic() + spec.max_elapsed_ms / 1000.0
        self.phase = "launch"
        self.selector = selectors.PollSelector() if hasattr(selectors, "PollSelector") else selectors.DefaultSelector()
        self.outgoing = bytearray()
        self.stdout_buffer = bytearray()
        self.counted = {"stdout": 0, "stderr": 0}
        self.stderr_head = bytearray()
        self.answers: dict[str, dict[str, Any]] = {}
        self.stdout_open = True
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream.fileno(), selectors.EVENT_READ, name)
        os.set_blocking(proc.stdin.fileno(), False)
        self.stdin_registered = False

    # -- writing ---------------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any]) -> None:
        """Queue one frame; it is written from the loop, so a server that floods stdout before
        reading its stdin can never deadlock us."""
        self.outgoing += _frame(message)
        if not self.stdin_registered and self.proc.stdin is not None and not self.proc.stdin.closed:
            self.selector.register(self.proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
            self.stdin_registered = True

    def _write(self) -> None:
        assert self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        try:
            written = os.write(fd, self.outgoing[:_CHUNK])
            del self.outgoing[:written]
        except BlockingIOError:
            return
        except (BrokenPipeError, ConnectionResetError):
            self.outgoing.clear()  # the server stopped reading; its stdout tells the rest
        if not self.outgoing:
            self.selector.unregister(fd)
            self.stdin_registered = False

    # -- reading ---------------------------------------------------------------------------------

    def _capped(self, stream: str) -> RuntimeFault:
        where = "stdout" if stream == "stdout" else "its own stderr"
        return RuntimeFault(
            "budget-exhausted",
            _CAP_PATH,
            f"the server wrote past maxOutputBytes ({self.spec.max_output_bytes}) on {where} "
            f"during {self.phase} and the session was torn down",
        )

    def _read(self, fd: int, name: str) -> None:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self.selector.unregister(fd)
            if name == "stdout":
                self.stdout_open = False
                residual = bytes(self.stdout_buffer)
                self.stdout_buffer.clear()
                if residual.strip():
                    self._line(residual)  # a last frame without its newline is still an answer
            return
        self.counted[name] += len(chunk)
        if self.counted[name] > self.spec.max_output_bytes:  # exactly maxOutputBytes is allowed
            raise self._capped(name)
        if name == "stderr":
            room = _STDERR_QUOTE - len(self.stderr_head)
            if room > 0:
                self.stderr_head += chunk[:room]
            return
        self.stdout_buffer += chunk
        while True:
            newline = self.stdout_buffer.find(b"\n")
            if newline < 0:
                break
            line = bytes(self.stdout_buffer[:newline])
            del self.stdout_buffer[: newline + 1]
            if line.strip():
                self._line(line)

    def _line(self, line: bytes) -> None:
        try:
            message = json.loads(line.decode("utf-8"), parse_constant=_refuse_constant)
        except (UnicodeDecodeError, ValueError, _NotJson, RecursionError):
            shown = line[:200].decode("utf-8", errors="replace")
            raise _port_failure(
                f"the server wrote bytes on stdout during {self.phase} that are not a JSON-RPC message: {shown}"
            ) from None
        if not isinstance(message, dict):
            return
        identifier = message.get("id")
        if isinstance(identifier, bool) or not isinstance(identifier, int | str):
            return  # a notification (or a frame no request of ours can match)
        if "method" in message:
            self._answer_server_request(identifier, message.get("method"))
            return
        self.answers[str(identifier)] = message

    def _answer_server_request(self, identifier: int | str, method: Any) -> None:
        if method == "ping":
            self.send({"jsonrpc": "2.0", "id": identifier, "result": {}})
        else:
            self.send({
                "jsonrpc": "2.0",
                "id": identifier,
                "error": {"code": -32601, "message": "the eval-quality client offers no methods"},
            })

    # -- the loop --------------------------------------------------------------------------------

    def _check_abort_and_deadline(self) -> float:
        if self.abort is not None and self.abort.is_set():
            raise RuntimeFault(
                "aborted", "ProbeObservation", "the caller aborted the probe; the server's process group was killed"
            )
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise RuntimeFault(
                "budget-exhausted",
                _CAP_PATH,
                f"the session exceeded maxElapsedMs ({self.spec.max_elapsed_ms}ms) during {self.phase} and was torn down",
            )
        return min(remaining, _ABORT_POLL_S) if self.abort is not None else remaining

    def _turn(self) -> None:
        timeout = self._check_abort_and_deadline()
        for key, _mask in self.selector.select(timeout):
            if key.data == "stdin":
                self._write()
            else:
                self._read(key.fd, key.data)

    def request(self, identifier: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request and run the loop until its answer arrives (or stdout closes)."""
        self.phase = method
        self.send({"jsonrpc": "2.0", "id": identifier, "method": method, "params": params})
        while str(identifier) not in self.answers:
            if not self.stdout_open:
                raise _ServerGone(method)
            self._turn()
        return self.answers.pop(str(identifier))

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Queue a notification (written by the next turn of the loop)."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for_exit(self, grace_s: float | None = None) -> int | None:
        """After stdout closed: drain stderr and wait for the leader's exit, under the same budget
        (and at most ``grace_s`` when given: then ``None`` if it is still running)."""
        self.phase = "the server's exit"
        give_up = None if grace_s is None else time.monotonic() + grace_s
        while True:
            code = _exit_status_unreaped(self.proc)
            if code is not None:
                return code
            if give_up is not None and time.monotonic() >= give_up:
                return None
            timeout = self._check_abort_and_deadline()
            events = self.selector.select(min(timeout, 0.01))
            for key, _mask in events:
                if key.data == "stdin":
                    self._write()
                else:
                    self._read(key.fd, key.data)

    def stderr_quote(self) -> str:
        """The head of what the server logged, for a failure's detail."""
        text = bytes(self.stderr_head).decode("utf-8", errors="replace").strip()
        return f"; its stderr began: {text}" if text else ""

    def close(self) -> None:
        """Stop watching; the streams themselves are closed by the teardown."""
        self.selector.close()


def _exit_status_unreaped(proc: subprocess.Popen[bytes]) -> int | None:
    """The leader's signed exit code (−signal when a signal ended it) once it has exited, asked
    without reaping it where ``waitid`` exists, so its pid (the pgid) stays ours until teardown."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return proc.poll()
    try:
        info = waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return proc.returncode if proc.returncode is not None else -1
    if info is None:
        return None
    if info.si_code == os.CLD_EXITED:
        return info.si_status
    return -info.si_status  # CLD_KILLED / CLD_DUMPED: the signal number


def _error_of(answer: Mapping[str, Any]) -> Any:
    error = answer.get("error")
    return None if error is None else error


def _result_of(answer: Mapping[str, Any]) -> McpCallResult:
    error = _error_of(answer)
    if error is not None:
        return McpCallResult(is_error=True, has_result=True, result=error)
    result = answer.get("result")
    if not isinstance(result, dict):
        return McpCallResult(is_error=False, has_result=False, result=None)
    is_error = result.get("isError") is True
    if "structuredContent" not in result:
        return McpCallResult(is_error=is_error, has_result=False, result=None)
    return McpCallResult(is_error=is_error, has_result=True, result=result["structuredContent"])


def _teardown(proc: subprocess.Popen[bytes], pgid: int) -> None:
    # The stdio transport's own order: close the server's input first, then kill the whole group
    # while the leader is unreaped (its pid, hence the pgid, cannot be reused), reap, kill again.
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    with _LIVE_LOCK:
        _LIVE_GROUPS.discard(pgid)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    proc.wait()
    kill_process_group(pgid)


def run_mcp_session(spec: McpSessionSpec, abort: AbortSignal | None = None) -> McpCallResult:
    """The real mechanism: spawn the server, handshake, call the tool once, tear down.

    Raises ``port-failure`` (spawn failure, malformed frame, refused or unanswered ``initialize``),
    ``budget-exhausted`` at ``McpProbeRequest`` (elapsed, or a stream's byte cap) or ``aborted``.
    """
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(spec.argv),
            cwd=spec.cwd,
            env=dict(spec.env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            shell=False,
            start_new_session=True,  # leader of a new session and process group: pgid == pid
            close_fds=True,
        )
    except OSError as exc:
        raise _spawn_failure(exc, spec) from None
    pgid = proc.pid
    with _LIVE_LOCK:
        _LIVE_GROUPS.add(pgid)
    session = _Session(proc, spec, abort)
    try:
        result = _converse(session, spec)
    finally:
        session.close()
        _teardown(proc, pgid)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    return McpCallResult(result.is_error, result.has_result, result.result, result.exit_code, elapsed_ms)


def _converse(session: _Session, spec: McpSessionSpec) -> McpCallResult:
    try:
        handshake = session.request(
            _INITIALIZE_ID,
            "initialize",
            {"protocolVersion": MCP_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": _CLIENT_INFO},
        )
    except _ServerGone:
        code = session.wait_for_exit(grace_s=1.0)
        status = "" if code is None else f" (exit code {code})"
        raise _port_failure(f"the server exited during initialize{status}{session.stderr_quote()}") from None
    refusal = _error_of(handshake)
    if refusal is not None:
        shown = json.dumps(refusal, ensure_ascii=False)[:300]
        raise _port_failure(f"the server refused the initialize handshake: {shown}")
    session.notify("notifications/initialized", {})
    try:
        answer = session.request(_CALL_ID, "tools/call", {"name": spec.tool_name, "arguments": dict(spec.arguments)})
    except _ServerGone:
        # The session was open and the server ended it before answering: that is what the system
        # under test did, an observation (isError, no result, its signed exit code), not a fault.
        exit_code = session.wait_for_exit()
        assert exit_code is not None  # without a grace, the wait ends in an exit or a fault
        return McpCallResult(is_error=True, has_result=False, result=None, exit_code=exit_code)
    return _result_of(answer)


def assemble_mcp_observation(request: McpProbeRequest, result: McpCallResult) -> McpProbeObservation:
    """Echo the request's correlation triple; check the answer against the observation schema and
    the canonical value domain (a failure is ``port-contract-violation`` at ``ProbeObservation``)."""
    wire: dict[str, Any] = {
        "kind": "mcp",
        "probeId": request.probe_id,
        "interfaceId": request.interface_id,
        "operationId": request.operation_id,
        "isError": result.is_error,
        "result": {"kind": "json", "value": result.result} if result.has_result else {"kind": "absent"},
    }
    if result.exit_code is not None:
        wire["exitCode"] = result.exit_code
    try:
        check_value_domain(wire, "ProbeObservation")
    except RuntimeFault as fault:  # e.g. an integer past 2^53 - 1: the answer cannot be an artifact
        raise RuntimeFault("port-contract-violation", fault.artifact_path, fault.detail) from None
    observation = read_probe_observation(wire, "ProbeObservation", code="port-contract-violation", check_domain=False)
    if not isinstance(observation, McpProbeObservation):
        raise RuntimeFault("port-contract-violation", "ProbeObservation", "assembled a non-mcp observation")
    return observation


def _resolve(base: str | None, path: str) -> str:
    if os.path.isabs(path) or base is None:
        return path
    return os.path.join(base, path)


class McpStdioAdapter:
    """The real ``ProbePort`` for mcp requests under an ``McpTargetPolicy`` (§4.9).

    ``McpStdioAdapter(policy, workdir=None, mechanism=run_mcp_session, search_path=None)``;
    ``probe(request, *, abort=None, workdir=None) -> McpProbeObservation``. A relative ``cwd`` in the
    policy resolves against this call's ``workdir``, else the adapter's, else the process's own.
    ``search_path`` is the PATH the server starts with (default: this process's PATH at call time);
    a ``PATH`` in ``serverEnvironment`` wins over it (the registry writes it, never a request).
    """

    def __init__(
        self,
        policy: McpTargetPolicy,
        *,
        workdir: str | os.PathLike[str] | None = None,
        mechanism: McpMechanism = run_mcp_session,
        search_path: str | None = None,
    ) -> None:
        self.policy = policy
        self.workdir = None if workdir is None else os.fspath(workdir)
        self.mechanism = mechanism
        self.search_path = search_path

    def probe(
        self,
        request: McpProbeRequest | dict[str, Any] | Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> McpProbeObservation:
        """Run one request: abort check, parse, policy, one session, observation."""
        return self.probe_timed(request, abort=abort, workdir=workdir).observation

    def probe_timed(
        self,
        request: McpProbeRequest | dict[str, Any] | Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> McpTimedObservation:
        """``probe``, also returning the session's elapsed milliseconds."""
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeRequest", "the caller aborted before the probe started")
        parsed = request if isinstance(request, _TYPED_REQUESTS) else read_probe_request(request)
        decision = evaluate_mcp_request(self.policy, parsed)
        if not decision.allowed or decision.authorization is None:
            raise mcp_forbidden_target_fault(decision)
        assert isinstance(parsed, McpProbeRequest)
        base = os.fspath(workdir) if workdir is not None else self.workdir
        spec = self.session_spec(parsed, decision.authorization, _resolve(base, decision.authorization.cwd))
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
        return McpTimedObservation(assemble_mcp_observation(parsed, result), result.elapsed_ms)

    def session_spec(self, request: McpProbeRequest, authorization: McpTargetAuthorization, cwd: str) -> McpSessionSpec:
        """The session of an authorized request: argv, cwd, environment, the call, the budgets."""
        path = self.search_path if self.search_path is not None else os.environ.get("PATH")
        env = {} if path is None else {"PATH": path}
        env.update(authorization.server_environment)
        return McpSessionSpec(
            argv=(authorization.target, *authorization.target_args),
            cwd=cwd,
            env=env,
            tool_name=request.tool_name,
            arguments=request.channels.arguments,
            max_elapsed_ms=authorization.max_elapsed_ms,
            max_output_bytes=authorization.max_output_bytes,
        )
