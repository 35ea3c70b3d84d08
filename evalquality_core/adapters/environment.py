"""Bounded environment probes: ``--version`` checks and read-only git questions (harness.md A.2).

A pre-flight that hangs is worse than one that fails (CI shows "running" instead of "broken"), so
every probe has a deadline (10 s by default), runs in its own process group and is SIGKILLed with
the whole group when the deadline passes, through the same mechanism as the command-line adapter.
Results are ``ok``, ``timeout``, ``not-found`` or ``failed`` (with the exit status), each with a
``reason`` sentence an operator can act on. Unlike a probe of the system under test, these inherit
the host environment: they ask about the host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from evalquality_core.adapters.command_line import LaunchSpec, run_process
from evalquality_core.faults import RuntimeFault

__all__ = [
    "DEFAULT_DEADLINE_S",
    "GIT_READ_SUBCOMMANDS",
    "EnvironmentProbeResult",
    "git_read",
    "run_bounded",
    "tool_version",
]

DEFAULT_DEADLINE_S = 10.0
_DEFAULT_MAX_OUTPUT = 1 << 20
#: git subcommands that only read; anything else is refused before a process starts.
GIT_READ_SUBCOMMANDS: tuple[str, ...] = (
    "rev-parse",
    "status",
    "log",
    "show",
    "ls-files",
    "describe",
    "diff",
    "cat-file",
    "config",
    "--version",
)

ProbeStatus = Literal["ok", "timeout", "not-found", "failed"]


@dataclass(frozen=True)
class EnvironmentProbeResult:
    """What one bounded probe found. ``exit_code`` is set for ``ok`` and for an exit-status failure."""

    status: ProbeStatus
    command: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    reason: str

    @property
    def ok(self) -> bool:
        """True when the command ran and exited 0."""
        return self.status == "ok"


def _shown(argv: Sequence[str]) -> str:
    return " ".join(argv)


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    env: Mapping[str, str] | None = None,
    max_output_bytes: int = _DEFAULT_MAX_OUTPUT,
) -> EnvironmentProbeResult:
    """Run ``argv`` (no shell) with a deadline; never raises for the command's own failure."""
    command = tuple(argv)
    spec = LaunchSpec(
        argv=command,
        cwd=os.fspath(cwd) if cwd is not None else os.getcwd(),
        env=dict(os.environ if env is None else env),
        stdin=None,
        max_elapsed_ms=max(1, int(deadline_s * 1000)),
        max_output_bytes=max_output_bytes,
    )
    try:
        result = run_process(spec)
    except RuntimeFault as fault:
        if fault.code == "budget-exhausted" and "maxElapsedMs" in fault.detail:
            return EnvironmentProbeResult(
                "timeout", command, None, "", "",
                f'"{_shown(command)}" did not finish within {deadline_s:g} s and was killed; '
                "check that it does not wait for input or a network, or raise the deadline",
            )
        if fault.code == "port-failure" and "ENOENT" in fault.detail and "(" + command[0] + ")" in fault.detail:
            return EnvironmentProbeResult(
                "not-found", command, None, "", "",
                f'"{command[0]}" was not found on PATH; install it or put it on PATH',
            )
        return EnvironmentProbeResult("failed", command, None, "", "", f'"{_shown(command)}" could not run: {fault.detail}')
    stdout = result.stdout.decode("utf-8", errors="replace")
    stderr = result.stderr.decode("utf-8", errors="replace")
    if result.exit_code == 0:
        return EnvironmentProbeResult("ok", command, 0, stdout, stderr, f'"{_shown(command)}" succeeded')
    first_line = next((line for line in stderr.splitlines() if line.strip()), "no message on stderr")
    return EnvironmentProbeResult(
        "failed", command, result.exit_code, stdout, stderr,
        f'"{_shown(command)}" exited {result.exit_code}: {first_line}',
    )


def tool_version(executable: str, *, flag: str = "--version", deadline_s: float = DEFAULT_DEADLINE_S) -> EnvironmentProbeResult:
    """``<executable> --version``: is the tool there, and which one is it."""
    return run_bounded((executable, flag), deadline_s=deadline_s)


def git_read(
    args: Sequence[str], *, repo: str | os.PathLike[str], deadline_s: float = DEFAULT_DEADLINE_S
) -> EnvironmentProbeResult:
    """A read-only git question in ``repo`` (``["rev-parse", "HEAD"]``). Hooks and prompts are
    disabled; a subcommand outside ``GIT_READ_SUBCOMMANDS`` raises ``ValueError`` before any spawn."""
    if not args or args[0] not in GIT_READ_SUBCOMMANDS:
        raise ValueError(f"git {' '.join(args)} is not a read-only question this probe asks")
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"  # never wait for a password: that is a hang, not an answer
    env["GIT_OPTIONAL_LOCKS"] = "0"  # a read must not take the index lock
    return run_bounded(("git", "-c", "core.hooksPath=/dev/null", *args), cwd=repo, deadline_s=deadline_s, env=env)
