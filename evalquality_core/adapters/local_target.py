"""What every adapter that runs a local target as a leg shares: the command-line adapter and the stdio
MCP adapter run their targets through this one path.

* ``admit``: the caller's abort first, then the request read (typed, or wire JSON through the
  schema), then the pure policy decision; a denial is raised before any process starts.
* ``leg_environment``: the adapter's own ``PATH`` with absolute entries only (an empty, ``.`` or
  relative entry would let a file in the working directory, which the target controls, answer a bare
  command name), plus what the registry or the request may declare on top.
* ``launch_leg``: ``process_group.LegProcess.launch`` (new session and process group, under the
  per-leg watchdog: nothing the target starts outlives the leg, and its lifeline kills the tree when
  the host dies, even by SIGKILL); a launch failure is ``port-failure`` naming what, where and the
  errno (E2BIG: ``launch-too-large``).
* ``call_mechanism``: the adapter's one underlying call with §3.4's mapping of whatever else it
  raises (an abort in progress wins).
* ``LocalTargetAdapter``: the shell both adapters share (policy, workdir, mechanism, search path;
  ``probe`` is ``probe_timed`` without the timing).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from evalquality_core.adapters.process_group import LegProcess
from evalquality_core.artifacts.port_messages import (
    ApiProbeRequest,
    CliProbeRequest,
    McpProbeRequest,
    read_probe_request,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.port import AbortSignal

__all__ = [
    "LocalTargetAdapter",
    "absolute_path_entries",
    "admit",
    "call_mechanism",
    "launch_failure",
    "launch_leg",
    "leg_cwd",
    "leg_environment",
]

_TYPED_REQUESTS = (CliProbeRequest, ApiProbeRequest, McpProbeRequest)

Spec = TypeVar("Spec")
Result = TypeVar("Result")
Policy = TypeVar("Policy")
Observation = TypeVar("Observation")


class _Decision(Protocol):
    allowed: bool
    authorization: Any


def admit(
    request: Any,
    abort: AbortSignal | None,
    policy: Any,
    evaluate: Callable[[Any, Any], _Decision],
    forbidden: Callable[[Any], RuntimeFault],
) -> tuple[Any, Any]:
    """Abort check, parse, policy: ``(request, authorization)`` of an allowed request, else the fault."""
    if abort is not None and abort.is_set():
        raise RuntimeFault("aborted", "ProbeRequest", "the caller aborted before the probe started")
    # A typed request is taken as is; anything else (wire JSON, or junk) goes through the schema.
    parsed = request if isinstance(request, _TYPED_REQUESTS) else read_probe_request(request)
    decision = evaluate(policy, parsed)
    if not decision.allowed or decision.authorization is None:
        raise forbidden(decision)
    return parsed, decision.authorization


def leg_cwd(call_workdir: str | os.PathLike[str] | None, adapter_workdir: str | None, cwd: str) -> str:
    """The policy's ``cwd``; when relative, against this call's workdir, else the adapter's, else ours."""
    base = os.fspath(call_workdir) if call_workdir is not None else adapter_workdir
    if os.path.isabs(cwd) or base is None:
        return cwd
    return os.path.join(base, cwd)


def absolute_path_entries(path: str) -> str:
    """``PATH`` with only its absolute entries, in order (empty, ``.`` and relative entries dropped)."""
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if os.path.isabs(entry))


def leg_environment(search_path: str | None, declared: Mapping[str, str]) -> dict[str, str]:
    """The target's whole environment: the adapter's ``PATH`` (``search_path``, default this process's
    ``PATH`` now; absolute entries only), then ``declared`` on top (a declared ``PATH`` wins as given)."""
    path = search_path if search_path is not None else os.environ.get("PATH")
    env = {} if path is None else {"PATH": absolute_path_entries(path)}
    env.update(declared)
    return env


def launch_failure(exc: OSError, argv: Sequence[str], cwd: str, what: str = "") -> RuntimeFault:
    """The ``port-failure`` of a target that could not be started (E2BIG: ``launch-too-large``)."""
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    where = exc.filename if exc.filename is not None else argv[0]
    detail = f'could not start {what}"{argv[0]}" in "{cwd}": {name} ({where}): {exc.strerror or exc}'
    if exc.errno == errno.E2BIG:
        return RuntimeFault("port-failure", "ProbeObservation", detail, port_failure_reason="launch-too-large")
    return RuntimeFault("port-failure", "ProbeObservation", detail)


def launch_leg(argv: Sequence[str], cwd: str, env: Mapping[str, str], *, stdin: bool, what: str = "") -> LegProcess:
    """Start ``argv`` as a leg under its watchdog; a launch failure is ``launch_failure``'s fault."""
    try:
        return LegProcess.launch(argv, cwd, env, stdin=stdin)
    except OSError as exc:
        raise launch_failure(exc, argv, cwd, what) from None


def call_mechanism(
    mechanism: Callable[[Spec, AbortSignal | None], Result],
    spec: Spec,
    abort: AbortSignal | None,
    argv: Sequence[str],
    cwd: str,
    what: str = "",
) -> Result:
    """Run the one underlying call. A ``RuntimeFault`` passes; a mechanism's own ``OSError`` keeps its
    errno (E2BIG included); anything else is ``port-failure`` (§3.4); during an abort, ``aborted``."""
    try:
        return mechanism(spec, abort)
    except RuntimeFault:
        raise
    except Exception as exc:
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeObservation", "the caller aborted during the probe") from exc
        if isinstance(exc, OSError):
            raise launch_failure(exc, argv, cwd, what) from None
        raise RuntimeFault(
            "port-failure", "ProbeObservation", f"the underlying mechanism threw {type(exc).__name__}: {exc}"
        ) from exc


class _Timed(Protocol[Observation]):
    @property
    def observation(self) -> Observation: ...


class LocalTargetAdapter(Generic[Policy, Observation]):
    """The shell of an adapter that runs local targets: ``Adapter(policy, *, workdir=None,
    mechanism=None, search_path=None)``; ``probe(request, *, abort=None, workdir=None)``.

    ``mechanism`` defaults to the subclass's ``default_mechanism`` (the real one); ``search_path`` is
    the PATH its targets start with (default: this process's PATH at call time, absolute entries only).
    """

    default_mechanism: ClassVar[Callable[..., Any]]

    def __init__(
        self,
        policy: Policy,
        *,
        workdir: str | os.PathLike[str] | None = None,
        mechanism: Callable[..., Any] | None = None,
        search_path: str | None = None,
    ) -> None:
        self.policy = policy
        self.workdir = None if workdir is None else os.fspath(workdir)
        self.mechanism = mechanism if mechanism is not None else type(self).default_mechanism
        self.search_path = search_path

    def probe(
        self,
        request: Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> Observation:
        """Run one request and return its observation (``probe_timed`` without the timing)."""
        return self.probe_timed(request, abort=abort, workdir=workdir).observation

    def probe_timed(
        self,
        request: Any,
        *,
        abort: AbortSignal | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> _Timed[Observation]:
        """Run one request; the observation with its elapsed milliseconds (each adapter's own)."""
        raise NotImplementedError
