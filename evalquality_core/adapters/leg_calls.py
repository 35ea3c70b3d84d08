"""Multi-call legs at the port (docs/reference/multi-call-legs.md): a leg's request may carry further
calls under ``calls``; all of them are answered in order by one staged workspace and one server or
tool-server session, and the leg's observation carries theirs under ``calls``, in the same order.

The adapters do the sessions (``ServiceAdapter.probe_calls``: one HTTP service started once;
``McpStdioAdapter.probe_calls``: one MCP session). A command-line adapter has no session to keep: its
calls run one after another in the same workspace, which is what a leg shares for a command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from evalquality_core.artifacts.port_messages import observation_to_wire
from evalquality_core.probe.port import AbortSignal

#: The request (and observation) key that carries a multi-call leg's further calls.
CALLS_KEY = "calls"


def split_calls(request: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A leg's request as its own call's request and the further calls' requests (maybe none)."""
    own = {key: value for key, value in request.items() if key != CALLS_KEY}
    return own, [dict(call) for call in request.get(CALLS_KEY) or []]


def probe_leg(
    adapter: Any, request: Mapping[str, Any], *, abort: AbortSignal | None = None, workdir: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Answer one leg through ``adapter`` (in ``workdir`` when given, else the adapter's): its wire
    observation, with ``calls`` when it made further calls.

    A fault of any call is the leg's fault (nothing of a half-answered leg is kept)."""
    where = {} if workdir is None else {"workdir": workdir}
    own, calls = split_calls(request)
    if not calls:
        return observation_to_wire(adapter.probe(own, abort=abort, **where))
    probe_calls = getattr(adapter, "probe_calls", None)
    if probe_calls is not None:
        observations = probe_calls([own, *calls], abort=abort, **where)
    else:
        observations = [adapter.probe(one, abort=abort, **where) for one in (own, *calls)]
    wire = observation_to_wire(observations[0])
    wire[CALLS_KEY] = [observation_to_wire(observation) for observation in observations[1:]]
    return wire
