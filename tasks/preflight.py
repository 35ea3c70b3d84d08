"""The pre-flight tasks: ``plan-preflight``, ``spawn-leg`` (one per leg), ``reduce-preflight``.

Plan and reduce are pure core stages, digest-cached by ``StageDigest``. ``spawn-leg`` is not cached by
Prefect: the leg cache (tasks/leg_cache/) answers it, keyed on the request, so identical requests
collapse across legs, probes and runs, single-flight across threads and processes. Each spawned leg
runs in a fresh workspace the suite's staging fills, through the real adapter of its kind (the
command-line adapter for a cli leg, the stdio MCP adapter for an mcp leg: one tool-server session),
with an abort signal the flow sets when it is interrupted. Run names are ``<suite>/<probe>/<leg-id>`` (style.md §3);
a tool-server leg's name also says which tool it calls, ``<suite>/<probe>/<leg-id> (<toolName>)``
(``leg_call``): a leg id such as ``preflight-control-observe`` does not say which call a session makes.

A leg's task run ends in a state that says how it was answered: ``Completed`` with the exit code and the
seconds (a live spawn), ``Cached`` (a Completed-type state so named, as Prefect names its own cache hits)
saying which earlier run answered it or which leg of this run it collapsed onto, or ``Failed`` with the
fault's one line. Every leg also reports ``start`` and its outcome to the invocation's listener (the
flow's progress display), and a spawned leg logs its outcome through Prefect's run logger.
"""

from __future__ import annotations

import functools
import json
import logging
import platform
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

from evalquality_core.adapters.abort import AbortFlag
from evalquality_core.adapters.command_line import CommandLineAdapter
from evalquality_core.adapters.http_service import ServiceAdapter
from evalquality_core.adapters.leg_calls import probe_leg
from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.faults import EvalQualityFault, RuntimeFault
from evalquality_core.preflight.plan import PreflightPlan, plan_preflight
from evalquality_core.preflight.reduce import reduce_preflight
from evalquality_core.printable import printable
from evalquality_core.probe.mcp_policy import McpTargetPolicy
from evalquality_core.probe.policy import CommandTargetPolicy
from evalquality_core.probe.targets import TargetRegistry
from evalquality_core.suite.staging import check_layers
from tasks.agent_legs import attempts_of, spawn_agent_leg
from tasks.caching import CODE_VERSION, StageDigest, stage_cache, unpersisted_results, verified_stage
from tasks.leg_cache import (
    LEG_CACHE_FAULT_PATH,
    LegAnswer,
    LegCacheMode,
    LegCacheUnusable,
    leg_cache_key,
    open_leg_cache,
)
from tasks.workspace import leg_workspace

#: Stages a suite's system and fixtures for one leg into the given empty directory.
Stager = Callable[[Path], Any]


@functools.cache
def tool_version() -> str:
    """The version that enters every leg key: the package version plus the stage code version.

    Read once per process: the metadata lookup costs milliseconds, and it was paid per leg in the flow
    thread (benchmarks/bench_scale.py found it: a third of a cached re-run's per-leg overhead).
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        package = version("eval-quality")
    except PackageNotFoundError:
        package = "0.0.0+unknown"
    return f"eval-quality-{package}/{CODE_VERSION}"


#: The registry placeholder (targets.toml) that stands for the interpreter running the flow.
PYTHON_PLACEHOLDER = "{python}"


def interpreter_substitutions() -> dict[str, str]:
    """The values a suite's registry placeholders are filled with on this machine: ``{python}`` is the
    interpreter running the flow (its path, which differs between machines and venvs)."""
    return {"python": sys.executable}


@functools.cache
def interpreter_identity() -> str:
    """What of this interpreter can decide a leg's answer: implementation and full version
    (``cpython-3.12.3``), never its path. Two machines with the same identity share leg keys."""
    return f"{sys.implementation.name}-{platform.python_version()}"


def _as_authored(value: Any, executable: str) -> Any:
    """``value`` with this interpreter's path put back as the ``{python}`` placeholder it was filled
    from (a whole path only: ``/usr/bin/python3`` never matches inside ``/usr/bin/python3.12``)."""
    if isinstance(value, str):
        if not executable or executable not in value:
            return value
        return re.sub(re.escape(executable) + r"(?![\w.+-])", lambda _: PYTHON_PLACEHOLDER, value)
    if isinstance(value, Mapping):
        return {name: _as_authored(item, executable) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_authored(item, executable) for item in value]
    return value


def portable_entry(entry: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A registry entry as it enters a leg key, and the runtime it depends on.

    The entry keeps ``{python}`` as authored instead of this machine's interpreter path; the runtime
    names the interpreter's identity when (and only when) the entry uses ``{python}``. An api entry's
    ``[service]`` command is kept unfilled already, so the same rule covers it.
    """
    authored = _as_authored(dict(entry), sys.executable)
    uses_python = PYTHON_PLACEHOLDER in json.dumps(authored, sort_keys=True)
    return authored, ({"python": interpreter_identity()} if uses_python else {})


def target_entry(
    policy: CommandTargetPolicy, request: Mapping[str, Any], mcp_policy: McpTargetPolicy | None = None
) -> dict[str, Any]:
    """The registry entry (authorization) that would run ``request``, as wire JSON; ``{}`` when none does.

    It names environment *keys* only, never values, so it is safe inside a persisted key. A request no
    entry authorizes still gets a key: the adapter denies it with ``forbidden-target``, which is never cached.
    An mcp request's entry is its tool server's (keyed by interface); its ``serverEnvironment`` values
    are registry text, not secrets a request carries, and they decide what the server does.
    """
    if request.get("kind") == "mcp":
        for server in mcp_policy.authorizations if mcp_policy is not None else []:
            if server.interface_id == request.get("interfaceId"):
                return server.model_dump(mode="json", by_alias=True)
        return {}
    for authorization in policy.authorizations:
        if (authorization.interface_id, authorization.executable) == (
            request.get("interfaceId"),
            request.get("executable"),
        ):
            return authorization.model_dump(mode="json", by_alias=True)
    return {}


def api_target_entry(targets: TargetRegistry | None, request: Mapping[str, Any]) -> dict[str, Any]:
    """For an api request: the registry's api authorizations of its interface (templates unfilled, so
    the per-call port never enters the key) and the ``[service]`` that answers it; ``{}`` when none."""
    if targets is None:
        return {}
    entries = [dict(entry) for entry in targets.api_entries if entry["interfaceId"] == request.get("interfaceId")]
    if not entries:
        return {}
    return {"authorizations": entries, "service": None if targets.service is None else dict(targets.service)}


def leg_key(
    request: Mapping[str, Any],
    policy: CommandTargetPolicy,
    staged_digest: str,
    *,
    mcp_policy: McpTargetPolicy | None = None,
    targets: TargetRegistry | None = None,
) -> str:
    """The leg cache key of a request run under ``policy`` (an mcp request: under ``mcp_policy``; an api
    request: under ``targets``' api entries and service) in a workspace staged to ``staged_digest``.

    Machine-independent (``portable_entry``): the same request planned from another checkout, venv or
    machine gets the same key, and a different interpreter version a different one."""
    authored, runtime = key_entry(request, policy, mcp_policy=mcp_policy, targets=targets)
    return leg_cache_key(request, authored, staged_digest, tool_version(), runtime)


def key_entry(
    request: Mapping[str, Any],
    policy: CommandTargetPolicy,
    *,
    mcp_policy: McpTargetPolicy | None = None,
    targets: TargetRegistry | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The registry entry that answers ``request``, as it enters the key, and its runtime (``portable_entry``).
    The same for every request of one kind, interface and executable under one registry."""
    if request.get("kind") == "api":
        return portable_entry(api_target_entry(targets, request))
    entry = target_entry(policy, request, mcp_policy)
    agent = targets.agent_of(request.get("interfaceId"), request.get("executable")) if targets is not None else None
    if agent is not None and agent.exit_classes:
        # The class table decides whether an exit is an answer (cached) or a fault: a table declared
        # later must not be answered by an exit cached before it (issue 34). Other agent keys (vendor,
        # cost, retries) change how a leg is run, not what its answer is, so they stay out of the key.
        entry = {**entry, "exitClasses": {str(code): name for code, name in sorted(agent.exit_classes.items())}}
    return portable_entry(entry)


def key_from_entry(
    request: Mapping[str, Any], entry: tuple[dict[str, Any], dict[str, str]], staged_digest: str
) -> str:
    """``leg_key`` given the request's ``key_entry`` (which a suite computes once per registry entry)."""
    return leg_cache_key(request, entry[0], staged_digest, tool_version(), entry[1])


@dataclass(frozen=True, eq=False)
class LegJob:
    """Everything ``spawn-leg`` needs for one leg. ``stage`` fills the leg's fresh workspace."""

    request: Mapping[str, Any]
    key: str
    policy: CommandTargetPolicy
    stage: Stager
    cache_dir: str
    cache_mode: LegCacheMode
    invocation: str
    workspaces_dir: str
    #: The suite's tool servers, for mcp legs (``None``: every mcp leg is denied).
    mcp_policy: McpTargetPolicy | None = None
    #: The suite's whole registry; an api leg is answered by its ``[service]`` (None: cli only).
    targets: TargetRegistry | None = None


_ABORTS: dict[str, AbortFlag] = {}
_ABORTS_GUARD = threading.Lock()


def abort_event(invocation: str) -> AbortFlag:
    """The abort signal every leg of an invocation waits on; the flow sets it when it is interrupted."""
    with _ABORTS_GUARD:
        flag = _ABORTS.get(invocation)
        if flag is None:
            flag = _ABORTS[invocation] = AbortFlag()
        return flag


def release_invocation(invocation: str) -> None:
    """Forget an invocation's abort signal and listener (after its flow ended)."""
    with _ABORTS_GUARD:
        _ABORTS.pop(invocation, None)
        _LISTENERS.pop(invocation, None)


#: Called as ``listener(event, leg)``: ``start``, then ``spawned``, ``collapsed``, ``cache`` or ``fault``.
LegListener = Callable[[str, str], None]
_LISTENERS: dict[str, LegListener] = {}


def listen_to_legs(invocation: str, listener: LegListener) -> None:
    """Have every leg of ``invocation`` report its start and outcome to ``listener`` (e.g. a progress bar)."""
    with _ABORTS_GUARD:
        _LISTENERS[invocation] = listener


def _tell(invocation: str, event: str, leg: str) -> None:
    with _ABORTS_GUARD:
        listener = _LISTENERS.get(invocation)
    if listener is not None:
        listener(event, leg)


def _answer_of(observation: Mapping[str, Any]) -> str:
    """What a spawned leg's system answered, for its state message: the exit code or HTTP status."""
    if "exitCode" in observation:
        return f"exit {observation['exitCode']}"
    if "status" in observation:
        return f"status {observation['status']}"
    if "isError" in observation:
        return "tool error" if observation["isError"] else "tool result"
    return "answered"


def _log(level: int, text: str) -> None:
    """A line to the task run's logger (none when the body runs outside a run, as ``.fn`` in tests)."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    # ``get_run_logger`` builds an adapter from the run context (~0.3 ms of CPU a leg, under the GIL
    # every leg shares); a line below the run loggers' level (WARNING by default) is dropped anyway.
    if not logging.getLogger("prefect.task_runs").isEnabledFor(level):
        return
    try:
        # The line names the leg and may quote the target (a fault's detail): shown printable.
        get_run_logger().log(level, printable(text))
    except MissingContextError:
        pass


def leg_state(answer: LegAnswer) -> State:
    """The final state of a leg's task run (module docstring); its data is the ``LegAnswer``."""
    by = answer.answered_by or {}
    if answer.source == "spawned":
        return Completed(message=f"{_answer_of(answer.observation)} in {answer.elapsed_s:.2f} s", data=answer)
    if answer.source == "collapsed":
        return Completed(name="Cached", message=printable(f"collapsed onto {by.get('leg') or 'an identical leg'}"), data=answer)
    run = f"run {by['run']}" if by.get("run") else "an earlier run"
    leg = f" as {by['leg']}" if by.get("leg") else ""
    at = f" at {by['at']}" if by.get("at") else ""
    return Completed(name="Cached", message=printable(f"from cache: answered by {run}{leg}{at}"), data=answer)


#: The plan and reduce stages' own code version: bumped when what they compute changes (v2: every
#: manifestation witness gets a clean twin leg; then multi-call legs), so a stored plan or verdict of the old rule stops
#: answering without touching the leg cache (``CODE_VERSION`` enters every leg key; legs did not change).
PREFLIGHT_STAGE_VERSION = f"{CODE_VERSION}-witness-clean-twin-multi-call"
_PLAN_INPUTS = ("contract", "probes", "run_id")
_REDUCE_INPUTS = ("plan", "observations")


# The run name comes from a ``label`` parameter (``<suite>/<probe>``) that is not part of the stage's
# key, rather than from ``with_options`` per probe: each such copy rebuilt the task and its verified
# storage, milliseconds per probe in the flow thread (benchmarks/bench_scale.py).
@verified_stage
@task(
    name="plan-preflight",
    task_run_name="plan/{label}",
    **{**stage_cache(*_PLAN_INPUTS), "cache_policy": StageDigest(inputs=_PLAN_INPUTS, version=PREFLIGHT_STAGE_VERSION)},
)
def plan_preflight_task(contract: Any, probes: Sequence[Any], run_id: str, label: str = "-") -> PreflightPlan:
    """``plan_preflight`` as a task: the legs (port-call order) and the checks (verdict order).
    ``label`` names the task run only (``plan/<label>``); it never enters the cache key.

    The harness stages a seeded-fault leg on its probe's mutation, so every witness gets a clean twin
    (``clean_witness_legs``, evalquality_core/preflight/plan.py)."""
    return plan_preflight(contract, probes, run_id, clean_witness_legs=True)


def _spawn(job: LegJob) -> dict[str, Any]:
    """Run one leg live: fresh staged workspace, the real adapter of the leg's kind, then clean up."""
    if abort_event(job.invocation).is_set():  # the run was interrupted: start nothing more
        raise RuntimeFault("aborted", "ProbeRequest", "the pre-flight run was interrupted before this leg started")
    with leg_workspace(Path(job.workspaces_dir)) as workspace:
        staged = job.stage(workspace)
        adapter: CommandLineAdapter | McpStdioAdapter | ServiceAdapter
        if job.request.get("kind") == "mcp":
            adapter = McpStdioAdapter(job.mcp_policy or McpTargetPolicy(authorizations=[]), workdir=workspace)
        elif job.request.get("kind") == "api" and job.targets is not None:
            # A fresh server from this leg's staged workspace, a leg process (watchdog, lifeline) killed when the call ends.
            adapter = ServiceAdapter(job.targets, interpreter_substitutions(), workdir=workspace)
        else:
            adapter = CommandLineAdapter(job.policy, workdir=workspace)
        # A multi-call leg's calls go to this one workspace and server/session, in order (leg_calls.py).
        observation = probe_leg(adapter, job.request, abort=abort_event(job.invocation))
        # A shared dependency layer the target could write through: verified after every leg that used
        # it (evalquality_core/suite/layers.py); a changed one makes this leg a fault, never cached.
        changed = check_layers(staged)
        if changed:
            raise RuntimeFault("digest-mismatch", "StagedWorkspace.layers", "; ".join(changed))
    if abort_event(job.invocation).is_set():
        # The run was interrupted while this leg ran: its group may have been killed from outside
        # (an exit of -9 is then our doing, not the system's answer), so it is a fault, never cached.
        raise RuntimeFault("aborted", "ProbeObservation", "the pre-flight run was interrupted during this leg")
    return observation


def leg_call(request: Mapping[str, Any]) -> str:
    """What a leg's run name adds after its id: `` (<toolName>)`` for a tool call, else nothing."""
    return f" ({request['toolName']})" if request.get("kind") == "mcp" else ""


@unpersisted_results
@task(
    name="spawn-leg",
    task_run_name="{suite}/{probe_id}/{leg_id}{call}",
    cache_policy=NO_CACHE,
    persist_result=False,
)
def spawn_leg(suite: str, probe_id: str, leg_id: str, job: LegJob, call: str = "", expected_faults: bool = False) -> State:
    """Answer one leg from the leg cache or by one live spawn; end in the state saying which (module docstring).

    ``call`` is ``leg_call(job.request)``: it names a tool-server leg's tool in the run name, the log
    lines and what a collapsed or cached twin says it was answered by.

    A fault (timeout, denial, a cache miss under ``--from-cache``) is never cached; the task run ends
    ``Failed`` with the fault's one-line message (no traceback: a fault is a finding about the
    environment, not a bug), and ``result()`` re-raises the fault itself. With ``expected_faults``
    (a mutant's leg, flows/mutants.py: a mutant that hangs is a finding, not an error) the run ends
    ``Completed`` named ``Faulted`` instead, logged at INFO, and ``result()`` returns the fault.
    """
    from prefect.runtime import flow_run

    leg = f"{suite}/{probe_id}/{leg_id}{call}"
    _tell(job.invocation, "start", leg)
    try:
        try:
            cache = open_leg_cache(job.cache_dir, job.cache_mode, job.invocation)
            # The night's budget, the vendor's limit and the target's retries wrap the live spawn only
            # (tasks/agent_legs.py): a leg the cache answers pays nothing.
            answer = cache.answer(
                job.key, job.request, lambda: spawn_agent_leg(job, _spawn, leg, abort_event(job.invocation)),
                leg=leg, run=f"{flow_run.name} ({flow_run.id})" if flow_run.id else "",
            )
        except LegCacheUnusable as lost:
            # The flow checked the cache before any leg (flows/lifecycle.check_leg_cache); one lost since
            # (a PostgreSQL server stopped, a database broken mid-run) fails this leg on one line, as a
            # database error during a read does, never with a traceback; nothing is cached.
            raise RuntimeFault("port-failure", LEG_CACHE_FAULT_PATH, str(lost)) from None
    except EvalQualityFault as fault:
        # The state's message is shown (the UI, the engine's log line); its data keeps the raw fault.
        raw = f"{fault.code}: {fault.artifact_path}: {fault.detail}"
        message = printable(raw)
        _log(logging.INFO if expected_faults else logging.WARNING, f"{leg}: fault: {raw}")
        _tell(job.invocation, "fault", leg)
        if expected_faults:
            return Completed(name="Faulted", message=message, data=fault)
        return Failed(message=message, data=fault)
    state = leg_state(answer)
    if answer.source == "spawned":
        attempts = attempts_of(answer.key)
        if attempts > 1:  # a retried leg says so in its state (its ledger rows say why: tasks/night_budget.py)
            state = Completed(message=f"{state.message} after {attempts} attempts", data=answer)
        _log(logging.INFO, f"{leg}: spawned, {state.message}")
    _tell(job.invocation, answer.source, leg)
    return state


@verified_stage
@task(
    name="reduce-preflight",
    task_run_name="reduce/{label}",
    **{**stage_cache(*_REDUCE_INPUTS), "cache_policy": StageDigest(inputs=_REDUCE_INPUTS, version=PREFLIGHT_STAGE_VERSION)},
)
def reduce_preflight_task(plan: PreflightPlan, observations: Sequence[Mapping[str, Any]], label: str = "-") -> Any:
    """``reduce_preflight`` as a task: the ``PreflightVerdict`` of one probe's observations.
    ``label`` names the task run only (``reduce/<label>``); it never enters the cache key."""
    return reduce_preflight(plan, [as_wire(observation) for observation in observations])
