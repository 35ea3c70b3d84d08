"""The three conformance arms as the tests run them: each arm's port, cases and runner, and how its subject
over the real adapter is built (with the mutation hooks a non-vacuity mutant plants).

``test_conformance_arms.py`` runs every arm unmutated; ``test_conformance_non_vacuity.py`` runs one mutant
per case. The api arm needs the real loopback server (``loopback_server``, started once per module and only
when an api case asks for it); the mcp arm's mutants run against the standard-library fixture server
(``mutant_options``), which starts in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.probe.api_conformance import API_PROBE_CASES, run_api_probe_conformance
from evalquality_core.probe.command_conformance import COMMAND_PROBE_CASES, run_command_line_probe_conformance
from evalquality_core.probe.conformance import ConformanceCase, ConformanceReport
from evalquality_core.probe.mcp_conformance import MCP_PROBE_CASES, run_mcp_probe_conformance
from tests.adapters import command_subject, http_subject, mcp_subject
from tests.adapters.http_server import LoopbackServer


@pytest.fixture(scope="module")
def loopback_server() -> Iterator[LoopbackServer]:
    """The api arm's real loopback server (import this fixture into a module that runs the api arm)."""
    with LoopbackServer() as running:
        yield running


#: ``subject(pytest request, a fresh folder, **options)`` → the arm's subject over the real adapter.
SubjectFactory = Callable[..., Any]


@dataclass(frozen=True)
class Arm:
    """One arm: the port it reports, its cases and runner, the real subject's name and how to build it."""

    port: str
    cases: tuple[ConformanceCase[Any], ...]
    run: Callable[..., ConformanceReport]
    subject_name: str
    subject: SubjectFactory
    mutant_options: dict[str, Any] = field(default_factory=dict)

    @property
    def case_ids(self) -> list[str]:
        """The arm's case ids, in its order."""
        return [case.id for case in self.cases]


ARMS: tuple[Arm, ...] = (
    Arm("command-probe", COMMAND_PROBE_CASES, run_command_line_probe_conformance, "command-line adapter",
        lambda _request, where, **options: command_subject.make_subject(where, **options)),
    Arm("environment-probe", API_PROBE_CASES, run_api_probe_conformance, "HTTP adapter",
        lambda request, _where, **options: http_subject.make_subject(request.getfixturevalue("loopback_server"), **options)),
    Arm("mcp-probe", MCP_PROBE_CASES, run_mcp_probe_conformance, "stdio mcp adapter",
        lambda _request, where, **options: mcp_subject.make_mcp_subject(where, **options),
        mutant_options={"server": mcp_subject.PLAIN_SERVER}),
)
ARM_BY_PORT: dict[str, Arm] = {arm.port: arm for arm in ARMS}


def arm_id(value: Any) -> str:
    """A readable parametrize id: the arm's port."""
    return value.port if isinstance(value, Arm) else str(value)


def subject_of(arm: Arm, request: pytest.FixtureRequest, where: Path, **options: Any) -> Any:
    """The arm's subject over the real adapter, built in ``where``."""
    return arm.subject(request, where, **options)
