"""The stdio MCP adapter: one mcp ``ProbeRequest`` → one tool-server session → one ``McpProbeObservation``.

preflight-adapter.md §4.9; the sibling of the command-line adapter behind the same probe port. Every
denial (``interface-not-authorized``, ``tool-not-authorized``) is decided by the pure
``probe.mcp_policy`` before any process starts. Then one session per probe:

1. spawn ``target *targetArgs`` without a shell, as the leader of a new session and process group,
   in ``cwd``, with the adapter's ``PATH`` (absolute entries only) plus ``serverEnvironment`` (its
   ``{workspace}`` filled with the call's workdir, the leg's staged workspace) and
   nothing else of ours, through the launch path every command leg takes (``local_target.launch_leg``:
   a ``process_group.LegProcess`` under its per-leg watchdog);
2. ``initialize`` (protocol ``2025-06-18``), then ``notifications/initialized``, then ``tools/call``
   with the request's arguments (they travel inside the JSON-RPC frame only, never in argv or env);
3. teardown: close the server's stdin, then kill its whole tree (``LegProcess.close``: the group,
   and every descendant that left it with ``setsid()``) and reap.

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

A response (a message without ``method``) must answer a request **in flight**: one whose frame has
been written to the server in full and that has not been answered yet, matched by its ``id`` in
value *and* type (our ids are integers: ``"2"`` does not answer ``2``). Anything else (an answer
sent before its request was written, a second answer, an id of no request of ours, a string, a
missing or ``null`` id) is ``port-failure`` naming the id the server sent (JSON-escaped, at most 80
characters): a server that answers what it was not asked is broken or forging, and its answer is
never taken for the one we wait for.

The trust boundary is the command adapter's, by construction: the session *is* a leg. The watchdog
is a child subreaper, so nothing the server started outlives the session (a grandchild that called
``setsid()`` or double-forked included); its lifeline kills the tree when the host dies, even by
SIGKILL; ``kill_all_live_groups`` (the flows' interrupt handler, and process exit) reaches sessions
as it reaches command legs. The server's exit code is the one the watchdog reports (the leader's
own status, −signal when a signal ended it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from evalquality_core.adapters.local_target import (
    LocalTargetAdapter,
    admit,
    call_mechanism,
    launch_leg,
    leg_cwd,
    leg_environment,
)
from evalquality_core.adapters.process_group import LegProcess
from evalquality_core.artifacts.port_messages import (
    McpProbeObservation,
    McpProbeRequest,
    read_probe_observation,
)
from evalquality_core.canonical.json import check_value_domain
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.mcp_policy import (
    MCP_PROTOCOL_VERSION,
    McpTargetAuthorization,
    McpTargetPolicy,
    evaluate_mcp_request,
    mcp_forbidden_target_fault,
    server_environment_for,
)
from evalquality_core.probe.observation import NotJson, refuse_json_constant
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
#: How much of a response's id a port-failure detail quotes (JSON-escaped, so it stays one line).
_ID_QUOTE = 80
#: How launch failures name the target ("could not start tool server "…"").
_WHAT = "tool server "
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
    #: A multi-call leg's further tool calls, ``(toolName, arguments)``, made in order after the first
    #: one in the same session (docs/reference/multi-call-legs.md); the budget covers the whole session.
    further_calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()


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
    #: The results of ``McpSessionSpec.further_calls``, in order.
    further: tuple[McpCallResult, ...] = ()


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


class _ServerGone(Exception):
    """stdout reached end of file before the answer we were waiting for."""


def _port_failure(detail: str) -> RuntimeFault:
    return RuntimeFault("port-failure", "ProbeObservation", detail)


def _quoted_id(message: Mapping[str, Any]) -> str:
    """The id a message carries, as JSON text cut to ``_ID_QUOTE`` characters (``absent`` when none)."""
    if "id" not in message:
        return "absent"
    try:
        text = json.dumps(message["id"], ensure_ascii=True, separators=(",", ":"))
    except (ValueError, RecursionError):
        text = type(message["id"]).__name__
    return text if len(text) <= _ID_QUOTE else text[: _ID_QUOTE - 1] + "\u2026"


def _frame(message: Mapping[str, Any]) -> bytes:
    # ensure_ascii keeps every frame one line whatever the arguments hold (a raw U+2028 is fine in
    # JSON, but an escaped one is fine everywhere); the server decodes the escapes back byte for byte.
    return (json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")


class _Session:
    """One live server: a selector loop that writes frames, reads lines and enforces the caps."""

    def __init__(self, leg: LegProcess, spec: McpSessionSpec, abort: AbortSignal | None) -> None:
        self.leg = leg
        self.spec = spec
        self.abort = abort
        self.deadline = time.monotonic() + spec.max_elapsed_ms / 1000.0
        self.phase = "launch"
        self.selector = selectors.PollSelector() if hasattr(selectors, "PollSelector") else selectors.DefaultSelector()
        self.outgoing = bytearray()
        self.stdout_buffer = bytearray()
        self.counted = {"stdout": 0, "stderr": 0}
        self.stderr_head = bytearray()
        self.answers: dict[int, dict[str, Any]] = {}
        # Request ids whose frame is queued but not yet written in full, with the count of bytes
        # written once its last byte is; and the ids written and not yet answered (module docstring).
        self.unsent: list[tuple[int, int]] = []
        self.in_flight: set[int] = set()
        self.queued_bytes = 0
        self.written_bytes = 0
        self.stdout_open = True
        self.exit_code: int | None = None
        assert leg.stdin is not None
        for name, stream in (("stdout", leg.stdout), ("stderr", leg.stderr)):
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream.fileno(), selectors.EVENT_READ, name)
        os.set_blocking(leg.stdin.fileno(), False)
        self.stdin_registered = False
        # Readable when the watchdog reports the server's exit (the tree is gone by then).
        self.selector.register(leg.lifeline, selectors.EVENT_READ, "exit")

    # -- writing ---------------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any], request_id: int | None = None) -> None:
        """Queue one frame; it is written from the loop, so a server that floods stdout before
        reading its stdin can never deadlock us. ``request_id`` marks a request of ours: it is in
        flight once its last byte is written."""
        frame = _frame(message)
        self.outgoing += frame
        self.queued_bytes += len(frame)
        if request_id is not None:
            self.unsent.append((self.queued_bytes, request_id))
        stdin = self.leg.stdin
        if not self.stdin_registered and stdin is not None and not stdin.closed and self.exit_code is None:
            self.selector.register(stdin.fileno(), selectors.EVENT_WRITE, "stdin")
            self.stdin_registered = True

    def _write(self) -> None:
        assert self.leg.stdin is not None
        fd = self.leg.stdin.fileno()
        try:
            written = os.write(fd, self.outgoing[:_CHUNK])
            del self.outgoing[:written]
            self.written_bytes += written
            while self.unsent and self.unsent[0][0] <= self.written_bytes:
                self.in_flight.add(self.unsent.pop(0)[1])
        except BlockingIOError:
            return
        except (BrokenPipeError, ConnectionResetError):
            self._drop_outgoing()  # the server stopped reading; its stdout tells the rest
        if not self.outgoing:
            self.selector.unregister(fd)
            self.stdin_registered = False

    def _drop_outgoing(self) -> None:
        """Give up what is still queued (nobody reads it): its requests are never in flight."""
        self.outgoing.clear()
        self.unsent.clear()
        self.queued_bytes = self.written_bytes

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
            message = json.loads(line.decode("utf-8"), parse_constant=refuse_json_constant)
        except (UnicodeDecodeError, ValueError, NotJson, RecursionError):
            shown = line[:200].decode("utf-8", errors="replace")
            raise _port_failure(
                f"the server wrote bytes on stdout during {self.phase} that are not a JSON-RPC message: {shown}"
            ) from None
        if not isinstance(message, dict):
            return
        identifier = message.get("id")
        if "method" in message:
            if isinstance(identifier, bool) or not isinstance(identifier, int | str):
                return  # a notification
            self._answer_server_request(identifier, message.get("method"))
            return
        # A response: it answers a request in flight, same value and type, or the session is broken.
        if type(identifier) is not int or identifier not in self.in_flight:
            waiting = ", ".join(str(i) for i in sorted(self.in_flight)) or "none"
            raise _port_failure(
                f"the server sent a response with id {_quoted_id(message)} during {self.phase}, which answers no "
                f"request in flight (ids in flight: {waiting})"
            )
        self.in_flight.discard(identifier)
        self.answers[identifier] = message

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

    def _turn(self, cap_s: float | None = None) -> None:
        timeout = self._check_abort_and_deadline()
        for key, _mask in self.selector.select(timeout if cap_s is None else min(timeout, cap_s)):
            if key.data == "stdin":
                self._write()
            elif key.data == "exit":
                self._exit_news(key.fd)
            else:
                self._read(key.fd, key.data)

    def _exit_news(self, fd: int) -> None:
        code = self.leg.read_exit()
        if code is not None:
            self.exit_code = code
            self.selector.unregister(fd)
            if self.stdin_registered:  # nobody reads it any more
                assert self.leg.stdin is not None
                self.selector.unregister(self.leg.stdin.fileno())
                self.stdin_registered = False
                self._drop_outgoing()

    def request(self, identifier: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request and run the loop until its answer arrives (or stdout closes)."""
        self.phase = method
        self.send({"jsonrpc": "2.0", "id": identifier, "method": method, "params": params}, identifier)
        while identifier not in self.answers:
            if not self.stdout_open:
                raise _ServerGone(method)
            self._turn()
        return self.answers.pop(identifier)

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Queue a notification (written by the next turn of the loop)."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for_exit(self, grace_s: float | None = None) -> int | None:
        """After stdout closed: drain stderr and wait for the watchdog's report of the server's exit,
        under the same budget (and at most ``grace_s`` when given: then ``None`` if still running)."""
        self.phase = "the server's exit"
        give_up = None if grace_s is None else time.monotonic() + grace_s
        while self.exit_code is None:
            left = None if give_up is None else give_up - time.monotonic()
            if left is not None and left <= 0:
                return None
            self._turn(left)
        return self.exit_code

    def stderr_quote(self) -> str:
        """The head of what the server logged, for a failure's detail."""
        text = bytes(self.stderr_head).decode("utf-8", errors="replace").strip()
        return f"; its stderr began: {text}" if text else ""

    def close(self) -> None:
        """Stop watching; the streams themselves are closed by the teardown."""
        self.selector.close()


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


def _teardown(leg: LegProcess) -> None:
    # The stdio transport's own order: close the server's input first, then end the leg (the
    # watchdog kills the whole tree unless it already ended, and reaps).
    if leg.stdin is not None:
        try:
            leg.stdin.close()
        except OSError:
            pass
    leg.close()


def run_mcp_session(spec: McpSessionSpec, abort: AbortSignal | None = None) -> McpCallResult:
    """The real mechanism: spawn the server, handshake, call the tool once, tear down.

    Raises ``port-failure`` (spawn failure, malformed frame, refused or unanswered ``initialize``),
    ``budget-exhausted`` at ``McpProbeRequest`` (elapsed, or a stream's byte cap) or ``aborted``.
    """
    started = time.monotonic()
    leg = launch_leg(spec.argv, spec.cwd, spec.env, stdin=True, what=_WHAT)
    try:
        session = _Session(leg, spec, abort)
        try:
            result = _converse(session, spec)
        finally:
            session.close()
    finally:
        _teardown(leg)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    return McpCallResult(result.is_error, result.has_result, result.result, result.exit_code, elapsed_ms, result.further)


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
    results: list[McpCallResult] = []
    calls = ((spec.tool_name, spec.arguments), *spec.further_calls)
    for offset, (tool_name, arguments) in enumerate(calls):
        if session.exit_code is not None or not session.stdout_open:
            # The server ended the session at an earlier call: every later call is answered by that exit.
            results.append(McpCallResult(is_error=True, has_result=False, result=None, exit_code=results[-1].exit_code))
            continue
        try:
            answer = session.request(_CALL_ID + offset, "tools/call", {"name": tool_name, "arguments": dict(arguments)})
        except _ServerGone:
            # The session was open and the server ended it before answering: that is what the system
            # under test did, an observation (isError, no result, its signed exit code), not a fault.
            exit_code = session.wait_for_exit()
            assert exit_code is not None  # without a grace, the wait ends in an exit or a fault
            results.append(McpCallResult(is_error=True, has_result=False, result=None, exit_code=exit_code))
            continue
        results.append(_result_of(answer))
    first = results[0]
    return McpCallResult(first.is_error, first.has_result, first.result, first.exit_code, further=tuple(results[1:]))


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


class McpStdioAdapter(LocalTargetAdapter[McpTargetPolicy, McpProbeObservation]):
    """The real ``ProbePort`` for mcp requests under an ``McpTargetPolicy`` (§4.9).

    ``McpStdioAdapter(policy, workdir=None, mechanism=run_mcp_session, search_path=None)``;
    ``probe(request, *, abort=None, workdir=None) -> McpProbeObservation``. A relative ``cwd`` in the
    policy resolves against this call's ``workdir``, else the adapter's, else the process's own.
    ``search_path`` is the PATH the server starts with (default: this process's PATH at call time;
    absolute entries only); a ``PATH`` in ``serverEnvironment`` wins over it (the registry writes it,
    never a request).
    """

    default_mechanism = staticmethod(run_mcp_session)
    mechanism: McpMechanism

    def probe_timed(
        self,
        request: McpProbeRequest | dict[str, Any] | Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> McpTimedObservation:
        """``probe``, also returning the session's elapsed milliseconds."""
        parsed, authorization = admit(request, abort, self.policy, evaluate_mcp_request, mcp_forbidden_target_fault)
        assert isinstance(parsed, McpProbeRequest) and isinstance(authorization, McpTargetAuthorization)
        base = os.fspath(workdir) if workdir is not None else (self.workdir or os.getcwd())
        spec = self.session_spec(parsed, authorization, leg_cwd(workdir, self.workdir, authorization.cwd),
                                 workspace=os.path.abspath(base))
        result = call_mechanism(self.mechanism, spec, abort, spec.argv, spec.cwd, _WHAT)
        return McpTimedObservation(assemble_mcp_observation(parsed, result), result.elapsed_ms)

    def probe_calls(
        self,
        requests: list[Any],
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> list[McpProbeObservation]:
        """A multi-call leg: every request admitted first, then one session (one server) answering them in
        order; one observation per request. All must go to the same tool server (the first's)."""
        admitted = [admit(r, abort, self.policy, evaluate_mcp_request, mcp_forbidden_target_fault) for r in requests]
        (first, authorization), rest = admitted[0], admitted[1:]
        assert isinstance(first, McpProbeRequest) and isinstance(authorization, McpTargetAuthorization)
        for parsed, other in rest:
            if (other.target, other.target_args, other.cwd) != (authorization.target, authorization.target_args, authorization.cwd):
                raise RuntimeFault(
                    "forbidden-target", "McpProbeRequest",
                    f'call "{parsed.probe_id}" goes to another tool server than its leg\'s; one session answers a leg',
                    reason="interface-not-authorized",
                )
        base = os.fspath(workdir) if workdir is not None else (self.workdir or os.getcwd())
        spec = self.session_spec(first, authorization, leg_cwd(workdir, self.workdir, authorization.cwd),
                                 workspace=os.path.abspath(base))
        spec = dataclasses.replace(
            spec, further_calls=tuple((parsed.tool_name, parsed.channels.arguments) for parsed, _ in rest)
        )
        result = call_mechanism(self.mechanism, spec, abort, spec.argv, spec.cwd, _WHAT)
        further = list(result.further)
        if len(further) != len(rest):
            raise RuntimeFault("port-failure", "ProbeObservation", f"the session answered {len(further)} of {len(rest)} further calls")
        parsed_all = [parsed for parsed, _ in admitted]
        return [assemble_mcp_observation(p, r) for p, r in zip(parsed_all, [result, *further], strict=True)]

    def session_spec(
        self, request: McpProbeRequest, authorization: McpTargetAuthorization, cwd: str, *, workspace: str | None = None
    ) -> McpSessionSpec:
        """The session of an authorized request: argv, cwd, environment (``{workspace}`` filled with
        ``workspace``, default the absolute ``cwd``), the call, the budgets."""
        return McpSessionSpec(
            argv=(authorization.target, *authorization.target_args),
            cwd=cwd,
            env=leg_environment(self.search_path, server_environment_for(
                authorization.server_environment, workspace if workspace is not None else os.path.abspath(cwd))),
            tool_name=request.tool_name,
            arguments=request.channels.arguments,
            max_elapsed_ms=authorization.max_elapsed_ms,
            max_output_bytes=authorization.max_output_bytes,
        )
