"""The adapter as a trust boundary (README "Trust boundary"), each attack run by a real hostile child process
(``tests/fixtures/commands/hostile.py``): artifact read-back is confined to the leg's working directory and
reads regular files only; nothing the target starts outlives its leg or the host; a request reaches only
what the registry permits."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.command_line import (
    CommandLineAdapter,
    LaunchSpec,
    ProcessResult,
    absolute_path_entries,
    run_process,
)
from evalquality_core.probe.argv import build_argv
from evalquality_core.probe.policy import parse_command_target_policy
from tests.adapters.command_subject import authorization, request
from tests.adapters.test_command_line import adapter_for, fault_of, is_dead

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SECRET = "top-secret-outside-the-workspace"


def hostile(executable: str = "hostile", **overrides: Any) -> dict[str, Any]:
    return authorization(executable, "hostile.py", **overrides)


def attack(*words: str) -> dict[str, Any]:
    return request("hostile", argument={"words": list(words)})


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A secret file (and its folder) outside the leg's working directory."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


# --- confined, bounded read-back ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (("symlink", "{secret}", "out.txt"), "it is a symlink"),
        (("symlink", "/etc/passwd", "out.txt"), "it is a symlink"),
        (("dirlink", "{outside}", "out"), '"out" is a symlink or not a directory'),
        (("fifo", "out.txt"), "it is a FIFO, not a regular file"),
        (("socket", "out.txt"), "it is a socket, not a regular file"),
        (("directory", "out.txt"), "it is a directory, not a regular file"),
    ],
    ids=["symlink-to-secret", "symlink-to-etc", "symlinked-directory", "fifo", "socket", "directory"],
)
def test_an_artifact_that_is_not_a_regular_file_inside_the_cwd_is_never_read(work, outside, words, says):
    path = "out/report.txt" if words[0] == "dirlink" else "out.txt"
    entry = hostile(artifacts={"report": path}, maxElapsedMs=20000)
    adapter, _ = adapter_for(work, entry)
    filled = [w.format(secret=outside / "secret.txt", outside=outside) for w in words]
    if words[0] == "dirlink":
        (outside / "report.txt").write_text(SECRET)
    started = time.monotonic()
    fault = fault_of(lambda: adapter.probe(attack(*filled)))
    assert time.monotonic() - started < 10  # a FIFO never blocks the read-back
    assert (fault.code, fault.artifact_path) == ("port-failure", "ProbeObservation")
    assert fault.detail.startswith(f'artifact "report" at "{path}" is not read: ') and says in fault.detail
    assert SECRET not in fault.detail and "root:" not in fault.detail


@pytest.mark.parametrize("declared", ["../outside/secret.txt", "{outside}/secret.txt"], ids=["dotdot", "absolute"])
def test_an_artifact_path_leaving_the_cwd_is_refused(work, outside, declared):
    adapter, _ = adapter_for(work, hostile(artifacts={"report": declared.format(outside=outside)}))
    fault = fault_of(lambda: adapter.probe(attack("directory", "harmless")))
    assert fault.code == "port-failure" and "is not read" in fault.detail and SECRET not in fault.detail


def test_an_absolute_artifact_path_inside_the_cwd_is_read(work):
    entry = authorization("writer", "write_artifact.py", artifacts={"report": str(work / "out" / "report.txt")})
    adapter, _ = adapter_for(work, entry)
    observation = adapter.probe(request("writer", argument={"text": "hello", "path": "out/report.txt"}))
    assert observation.artifacts["report"].model_dump(mode="json")["value"] == "hello"


def test_read_back_starts_from_the_cwd_as_it_was_even_if_the_target_swaps_it(work, outside):
    (outside / "out.txt").write_text(SECRET)
    adapter, _ = adapter_for(work.parent, hostile(cwd="work", artifacts={"report": "out.txt"}))
    observation = adapter.probe(attack("swap-cwd", str(outside), "out.txt"))
    assert observation.artifacts["report"].model_dump(mode="json")["value"] == "honest"
    assert (work.parent / "work").is_symlink()  # the swap happened; we read the original directory


# --- nothing outlives a leg, or the host ------------------------------------------------------------


def test_a_setsid_grandchild_is_killed_when_the_leg_ends(work):
    adapter, _ = adapter_for(work, hostile())
    pid_file = work / "grandchild.pid"
    observation = adapter.probe(attack("setsid", str(pid_file)))
    assert observation.exit_code == 0
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not is_dead(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert is_dead(grandchild)


def test_a_setsid_grandchild_is_killed_when_the_leg_times_out(work):
    adapter, _ = adapter_for(work, hostile(maxElapsedMs=1500))
    pid_file = work / "pids"
    fault = fault_of(lambda: adapter.probe(attack("fork-forever", str(pid_file))))
    assert fault.code == "budget-exhausted"
    _all_dead_within(pid_file, 5)


_HOST = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from evalquality_core.adapters.command_line import CommandLineAdapter
    from evalquality_core.probe.policy import parse_command_target_policy
    from tests.adapters.command_subject import authorization, request
    policy = parse_command_target_policy({{"authorizations": [authorization("hostile", "hostile.py", maxElapsedMs=600000)]}})
    CommandLineAdapter(policy, workdir={work!r}).probe(
        request("hostile", argument={{"words": ["fork-forever", {pids!r}]}}))
    """
)


def _pids(pid_file: Path) -> set[int]:
    return {int(line) for line in pid_file.read_text().split()} if pid_file.exists() else set()


def _all_dead_within(pid_file: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = {pid for pid in _pids(pid_file) if not is_dead(pid)}
        if not alive:
            break
        time.sleep(0.05)
    alive = {pid for pid in _pids(pid_file) if not is_dead(pid)}
    for pid in alive:  # never leave them running, whatever the assertion says
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"still running: {sorted(alive)}"


def test_a_host_killed_by_sigkill_takes_every_leg_with_it_within_seconds(work):
    pid_file = work / "pids"
    host = subprocess.Popen([sys.executable, "-c", _HOST.format(root=str(PROJECT_ROOT), work=str(work), pids=str(pid_file))])
    try:
        deadline = time.monotonic() + 60
        while len(_pids(pid_file)) < 4:  # the target plus a few generations of setsid forks
            assert host.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        host.kill()  # SIGKILL: no atexit, no finally, nothing of the host runs
        host.wait()
    assert len(_pids(pid_file)) >= 4
    _all_dead_within(pid_file, 5)


# --- a request reaches only what the registry permits ------------------------------------------------


@pytest.mark.parametrize("key", ["a=b --c", "--exec", "Upper", "x y", "a_b", "-n"])
def test_an_option_key_outside_the_flag_grammar_is_forbidden_before_anything_starts(work, key):
    adapter, counting = adapter_for(work, authorization("argv-echo", "print_argv.py"))
    fault = fault_of(lambda: adapter.probe(request("argv-echo", option={key: True})))
    assert (fault.code, fault.reason, counting.calls) == ("forbidden-target", "argument-not-authorized", 0)


def test_flag_names_including_the_no_form_pass(work):
    adapter, _ = adapter_for(work, authorization("argv-echo", "print_argv.py"))
    observation = adapter.probe(request("argv-echo", option={"no-color": True, "max-count": 3, "v2": "x"}))
    assert observation.exit_code == 0


def test_a_dash_leading_positional_is_refused_without_a_marker_or_opt_in(work):
    adapter, counting = adapter_for(work, authorization("argv-echo", "print_argv.py"))
    fault = fault_of(lambda: adapter.probe(request("argv-echo", argument={"file": "--delete-everything"})))
    assert (fault.code, fault.reason, counting.calls) == ("forbidden-target", "argument-not-authorized", 0)
    assert adapter.probe(request("argv-echo", argument={"file": "-"})).exit_code == 0  # a lone "-" is stdin


def _argv_seen(work: Path, entry: dict[str, Any], **channels: Any) -> list[str]:
    adapter, _ = adapter_for(work, entry)
    return adapter.probe(request("argv-echo", **channels)).model_dump(mode="json")["stdout"]["value"]["argv"]


def test_an_end_of_options_marker_puts_positionals_after_it(work):
    entry = authorization("argv-echo", "print_argv.py", endOfOptions="--")
    seen = _argv_seen(work, entry, option={"colour": "blue"}, argument={"file": "--delete-everything"})
    assert seen[-4:] == ["--colour", "blue", "--", "--delete-everything"]
    assert build_argv([], {"a": True}, {}, end_of_options="--") == ["--a"]  # no positional: no marker
    # Without the marker and with no dash positional, argv is exactly the reference's.
    assert build_argv(["run"], {"a": 1}, {"x": "y"}) == ["run", "--a", "1", "y"]


def test_dash_positionals_opt_in(work):
    entry = authorization("argv-echo", "print_argv.py", dashPositionals=True)
    assert _argv_seen(work, entry, argument={"file": "-x"})[-1] == "-x"


def test_the_child_path_keeps_absolute_entries_only(work):
    adapter, _ = adapter_for(work, authorization("argv-echo", "print_argv.py"), search_path=f".::bin:/usr/bin:relative/x:{work}")
    observation = adapter.probe(request("argv-echo")).model_dump(mode="json")
    assert observation["stdout"]["value"]["env"]["PATH"] == f"/usr/bin:{work}"
    # And a script named like a command, planted in the cwd, is not what a bare name finds.
    planted = work / "innocent"
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    env = {"PATH": absolute_path_entries(".:/usr/bin:/bin")}
    result = run_process(LaunchSpec(("/bin/sh", "-c", 'echo "$PATH"; innocent'), str(work), env, None, 10000, 4096))
    assert result.stdout.decode().splitlines()[0] == "/usr/bin:/bin" and b"planted" not in result.stdout


def test_e2big_from_any_mechanism_is_launch_too_large(work):
    def refusing(spec: LaunchSpec, abort: Any) -> ProcessResult:
        raise OSError(errno.E2BIG, "Argument list too long", spec.argv[0])

    policy = parse_command_target_policy({"authorizations": [authorization("argv-echo", "print_argv.py")]})
    fault = fault_of(lambda: CommandLineAdapter(policy, workdir=work, mechanism=refusing).probe(request("argv-echo")))
    assert (fault.code, fault.port_failure_reason) == ("port-failure", "launch-too-large")


def test_e2big_from_the_default_mechanism_is_launch_too_large(work):
    adapter, _ = adapter_for(work, authorization("argv-echo", "print_argv.py"))
    fault = fault_of(lambda: adapter.probe(request("argv-echo", argument={"huge": "z" * (4 << 20)})))
    assert (fault.code, fault.port_failure_reason) == ("port-failure", "launch-too-large")
