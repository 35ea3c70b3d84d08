"""The command-line adapter against real child processes (preflight-adapter.md §4; harness.md A.1–A.2).

Each test names the rule it pins. Processes are this interpreter running the fixture scripts in
``tests/fixtures/commands/``; "no process started" is shown both by a zero mechanism count and by a
marker file the target would have created.
"""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evalquality_core.adapters.abort import AbortFlag
from evalquality_core.adapters.command_line import (
    CommandLineAdapter,
    kill_all_live_groups,
    live_process_groups,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.policy import parse_command_target_policy
from tests.adapters.command_subject import FIXTURES, INTERFACE, CountingMechanism, authorization, request


def adapter_for(tmp_path: Path, *entries: dict[str, Any], **kwargs: Any) -> tuple[CommandLineAdapter, CountingMechanism]:
    counting = CountingMechanism()
    policy = parse_command_target_policy({"authorizations": list(entries)})
    return CommandLineAdapter(policy, workdir=tmp_path, mechanism=counting, **kwargs), counting


def fault_of(call: Any) -> RuntimeFault:
    with pytest.raises(RuntimeFault) as caught:
        call()
    return caught.value


def process_state(pid: int) -> str | None:
    """The /proc state letter of ``pid``, or None when it no longer exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone, or reaped while being read (ESRCH)
        return None
    return stat[stat.rfind(")") + 2 :].split()[0]


def is_dead(pid: int) -> bool:
    # A zombie is dead: it only waits for its parent (here possibly a non-reaping PID 1) to reap it.
    return process_state(pid) in (None, "Z", "X")


def wait_for_file(path: Path, seconds: float = 10.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text()
        time.sleep(0.01)
    raise AssertionError(f"{path} was never written")


def own_zombies() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if fields[1] == me and fields[0] == "Z":
                found.append(int(entry.name))
    return found


# --- default deny, before any process starts --------------------------------------------------


def test_unlisted_executable_is_refused_before_spawn(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    adapter, counting = adapter_for(tmp_path, authorization("toucher", "touch_marker.py"))
    fault = fault_of(lambda: adapter.probe(request("toucher-two", argument={"m": str(marker)})))
    assert (fault.code, fault.reason, fault.artifact_path) == ("forbidden-target", "executable-not-authorized", "ProbeRequest")
    assert counting.calls == 0 and not marker.exists()
    # the control: the listed executable does start and leaves its marker
    adapter.probe(request("toucher", argument={"m": str(marker)}))
    assert counting.calls == 1 and marker.exists()


def test_unmapped_interface_and_unlisted_subcommand_are_refused_before_spawn(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    adapter, counting = adapter_for(tmp_path, authorization("toucher", "touch_marker.py"))
    fault = fault_of(lambda: adapter.probe(request("toucher", interface="elsewhere", argument={"m": str(marker)})))
    assert fault.reason == "interface-not-authorized"
    fault = fault_of(lambda: adapter.probe(request("toucher", subcommand=["now"], argument={"m": str(marker)})))
    assert fault.reason == "subcommand-not-authorized"
    assert counting.calls == 0 and not marker.exists()


def test_unpermitted_environment_key_is_refused_before_spawn(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    adapter, counting = adapter_for(tmp_path, authorization("toucher", "touch_marker.py"))
    fault = fault_of(
        lambda: adapter.probe(request("toucher", argument={"m": str(marker)}, environment={"AWS_SECRET": "x"}))
    )
    assert (fault.code, fault.reason) == ("forbidden-target", "environment-key-not-authorized")
    assert fault.detail == 'environment key "AWS_SECRET" is not permitted by this authorization'
    assert counting.calls == 0 and not marker.exists()


def test_env_key_match_is_case_sensitive(tmp_path: Path) -> None:
    adapter, counting = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    fault = fault_of(lambda: adapter.probe(request("argv-echo", environment={"evalq_colour": "x"})))
    assert fault.reason == "environment-key-not-authorized" and counting.calls == 0


@pytest.mark.parametrize("spelling", ["PATH", "Path", "path"])
def test_a_request_can_never_choose_path(tmp_path: Path, spelling: str) -> None:
    adapter, counting = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    fault = fault_of(lambda: adapter.probe(request("argv-echo", environment={spelling: "/tmp/evil"})))
    assert fault.reason == "environment-key-not-authorized"
    assert "never permitted" in fault.detail and counting.calls == 0


@pytest.mark.parametrize("spelling", ["PATH", "path", "PaTh"])
def test_a_policy_can_never_permit_path(spelling: str) -> None:
    entry = authorization("argv-echo", "print_argv.py", permittedEnvironmentKeys=["HOME", spelling])
    fault = fault_of(lambda: parse_command_target_policy({"authorizations": [entry]}))
    assert fault.code == "schema-parse-failure"
    assert "/authorizations/0/permittedEnvironmentKeys" in fault.detail


def test_the_child_sees_only_path_and_the_declared_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALQ_HOST_SECRET", "must-not-leak")
    env_binary = shutil.which("env")
    assert env_binary is not None
    # `env` as a bare name: resolved through the adapter's own PATH, not the request's.
    entry = authorization("show-env", "unused", target="env", targetArgs=[], permittedEnvironmentKeys=["EVALQ_COLOUR"])
    adapter, _ = adapter_for(tmp_path, entry)
    observation = adapter.probe(request("show-env", environment={"EVALQ_COLOUR": "blue"}))
    lines = sorted(observation.stdout.value.splitlines())  # type: ignore[union-attr]
    assert lines == sorted([f"PATH={os.environ['PATH']}", "EVALQ_COLOUR=blue"])


def test_non_cli_request_is_refused(tmp_path: Path) -> None:
    adapter, counting = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    api = {
        "kind": "api", "probeId": "leg-1", "interfaceId": INTERFACE, "operationId": "run", "method": "GET",
        "pathTemplate": "/x", "channels": {"path": {}, "query": {}, "header": {}, "body": {"kind": "absent"}},
    }
    fault = fault_of(lambda: adapter.probe(api))
    assert (fault.code, fault.reason) == ("forbidden-target", "interface-not-authorized")
    assert fault.detail == "this adapter runs cli requests only; no api target is ever authorized"
    assert counting.calls == 0


@pytest.mark.parametrize("executable", ["/usr/bin/env", "./x", "bin/x", "http://x", "X", "a..b"])
def test_a_path_can_never_be_written_into_a_request(tmp_path: Path, executable: str) -> None:
    adapter, counting = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    fault = fault_of(lambda: adapter.probe(request(executable)))
    assert (fault.code, fault.artifact_path) == ("schema-parse-failure", "ProbeRequest.executable")
    assert counting.calls == 0


# --- argv, stdin, observation tags -------------------------------------------------------------


def test_channels_reach_the_child_as_literal_argv(tmp_path: Path) -> None:
    adapter, _ = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    observation = adapter.probe(
        request(
            "argv-echo",
            option={"tag": ["a", "b"], "dry-run": True, "verbose": False, "no-color": True, "n": 1.0, "x": None},
            argument={"first": "$(touch pwned) && ;|", "rest": [1, True, {"k": [2]}]},
            stdin={"kind": "text", "value": "hello\n"},
        )
    )
    seen = observation.stdout.value  # type: ignore[union-attr]
    assert seen["argv"] == [
        "--tag", "a", "--tag", "b", "--dry-run", "--no-color", "--n", "1", "--x", "null",
        "$(touch pwned) && ;|", "1", "true", '{"k":[2]}',
    ]
    assert seen["stdin"] == "hello\n"
    assert not (tmp_path / "pwned").exists()


def test_json_stdin_is_written_as_json_text(tmp_path: Path) -> None:
    adapter, _ = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    observation = adapter.probe(request("argv-echo", stdin={"kind": "json", "value": {"prompt": "hi", "n": [1, 2]}}))
    assert json.loads(observation.stdout.value["stdin"]) == {"prompt": "hi", "n": [1, 2]}  # type: ignore[union-attr]


def test_large_stdin_does_not_deadlock(tmp_path: Path) -> None:
    payload = (b"0123456789abcdef" * (1 << 19)).decode()  # 8 MiB
    entry = authorization("stdin-counter", "count_stdin.py", maxOutputBytes=1 << 20)
    adapter, _ = adapter_for(tmp_path, entry)
    observation = adapter.probe(request("stdin-counter", stdin={"kind": "text", "value": payload}))
    assert observation.exit_code == 0
    assert observation.stderr.value == {  # type: ignore[union-attr]
        "bytes": len(payload),
        "sha256": hashlib.sha256(payload.encode()).hexdigest(),
    }


def test_nonzero_exit_is_an_observation(tmp_path: Path) -> None:
    adapter, _ = adapter_for(tmp_path, authorization("failing", "exit_code.py"))
    observation = adapter.probe(request("failing", argument={"code": 42}))
    assert observation.exit_code == 42
    assert observation.stderr.model_dump() == {"kind": "text", "value": "failing on purpose\n"}
    assert observation.stdout.model_dump() == {"kind": "text", "value": ""}


def test_a_signal_exit_is_minus_the_signal_number(tmp_path: Path) -> None:
    adapter, _ = adapter_for(tmp_path, authorization("self-signal", "signal_self.py"))
    assert adapter.probe(request("self-signal")).exit_code == -signal.SIGTERM


def test_artifacts_come_back_json_text_or_absent(tmp_path: Path) -> None:
    artifacts = {"data": "out/data.json", "note": "out/note.txt", "never": "out/never.txt"}
    adapter, _ = adapter_for(tmp_path, authorization("artifact-writer", "write_artifact.py", artifacts=artifacts))
    observation = adapter.probe(request("artifact-writer", argument={"text": '{"ok": [1, 2]}', "path": "out/data.json"}))
    assert observation.artifacts["data"].model_dump() == {"kind": "json", "value": {"ok": [1, 2]}}
    assert observation.artifacts["never"].model_dump() == {"kind": "absent"}
    assert observation.artifacts["note"].model_dump() == {"kind": "absent"}
    observation = adapter.probe(request("artifact-writer", argument={"text": "not json {", "path": "out/note.txt"}))
    assert observation.artifacts["note"].model_dump() == {"kind": "text", "value": "not json {"}
    assert observation.artifacts["data"].model_dump() == {"kind": "json", "value": {"ok": [1, 2]}}


def test_per_call_workdir_resolves_cwd_and_artifacts(tmp_path: Path) -> None:
    entry = authorization("artifact-writer", "write_artifact.py", artifacts={"note": "note.txt"}, cwd="work")
    adapter, _ = adapter_for(tmp_path, entry)
    first, second = tmp_path / "leg-a", tmp_path / "leg-b"
    for leg, text in ((first, "from a"), (second, "from b")):
        (leg / "work").mkdir(parents=True)
        observation = adapter.probe(request("artifact-writer", argument={"text": text, "path": "note.txt"}), workdir=leg)
        assert observation.artifacts["note"].model_dump() == {"kind": "text", "value": text}
    assert (first / "work" / "note.txt").read_text() == "from a"
    assert (second / "work" / "note.txt").read_text() == "from b"


# --- budgets, process groups -------------------------------------------------------------------


def test_timeout_kills_the_whole_group_grandchild_included(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    adapter, _ = adapter_for(tmp_path, authorization("sleeper", "sleep_tree.py", maxElapsedMs=1500))
    fault = fault_of(lambda: adapter.probe(request("sleeper", argument={"pids": str(pids_file)})))
    assert (fault.code, fault.artifact_path) == ("budget-exhausted", "CommandProbeRequest")
    assert fault.detail == "exceeded maxElapsedMs (1500ms) and was killed"
    child, grandchild = (int(p) for p in wait_for_file(pids_file).split())
    assert is_dead(child) and is_dead(grandchild), (process_state(child), process_state(grandchild))
    assert live_process_groups() == frozenset() or child not in live_process_groups()


def test_a_target_that_exits_leaves_nothing_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    adapter, _ = adapter_for(tmp_path, authorization("spawner", "spawn_and_exit.py"))
    observation = adapter.probe(request("spawner", argument={"pid": str(pid_file)}))
    assert observation.exit_code == 0
    grandchild = int(pid_file.read_text())
    assert is_dead(grandchild), process_state(grandchild)


def _peak_rss_reset() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux >= 4.0)
        return True
    except OSError:
        return False


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_gibibyte_of_output_is_killed_at_the_cap_with_bounded_memory(tmp_path: Path, stream: str) -> None:
    cap = 1 << 20
    adapter, _ = adapter_for(tmp_path, authorization("flooder", "flood.py", maxOutputBytes=cap))
    baseline = _status_kib("VmRSS")
    can_measure_peak = _peak_rss_reset()
    fault = fault_of(lambda: adapter.probe(request("flooder", argument={"total": str(1 << 30), "stream": stream})))
    assert fault.code == "budget-exhausted"
    assert fault.detail == f"{stream} exceeded maxOutputBytes ({cap}) and the process was killed"
    grown_kib = (_status_kib("VmHWM") if can_measure_peak else _status_kib("VmRSS")) - baseline
    assert grown_kib < 64 * 1024, f"the test process grew by {grown_kib} KiB while reading a capped stream"


def test_exactly_the_cap_is_allowed(tmp_path: Path) -> None:
    adapter, _ = adapter_for(tmp_path, authorization("flooder", "flood.py", maxOutputBytes=1000))
    observation = adapter.probe(request("flooder", argument={"total": "1000"}))
    assert observation.stdout.model_dump() == {"kind": "text", "value": "x" * 1000}
    fault = fault_of(lambda: adapter.probe(request("flooder", argument={"total": "1001"})))
    assert fault.code == "budget-exhausted"


def test_an_artifact_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    entry = authorization("artifact-writer", "write_artifact.py", artifacts={"big": "big.txt"}, maxOutputBytes=10)
    adapter, _ = adapter_for(tmp_path, entry)
    fault = fault_of(lambda: adapter.probe(request("artifact-writer", argument={"text": "y" * 11, "path": "big.txt"})))
    assert (fault.code, fault.detail) == ("budget-exhausted", 'artifact "big" exceeded maxOutputBytes (10)')


def test_spawn_failure_is_a_port_failure(tmp_path: Path) -> None:
    entry = authorization("ghost", "unused", target=str(tmp_path / "no-such-binary"), targetArgs=[])
    adapter, _ = adapter_for(tmp_path, entry)
    fault = fault_of(lambda: adapter.probe(request("ghost")))
    assert (fault.code, fault.artifact_path, fault.port_failure_reason) == ("port-failure", "ProbeObservation", None)
    assert "ENOENT" in fault.detail


def test_a_launch_too_large_is_named(tmp_path: Path) -> None:
    adapter, _ = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    fault = fault_of(lambda: adapter.probe(request("argv-echo", argument={"huge": "z" * (4 << 20)})))
    assert (fault.code, fault.port_failure_reason) == ("port-failure", "launch-too-large")


@pytest.mark.parametrize("signal_kind", [threading.Event, AbortFlag], ids=["polled-event", "waitable-flag"])
def test_abort_from_another_thread_kills_the_group_promptly(tmp_path: Path, signal_kind: type) -> None:
    pids_file = tmp_path / "pids"
    adapter, _ = adapter_for(tmp_path, authorization("sleeper", "sleep_tree.py", maxElapsedMs=60000))
    abort = signal_kind()
    aborted_at: list[float] = []

    def abort_once_the_tree_runs() -> None:  # not a fixed timer: on a loaded machine the tree starts late
        wait_for_file(pids_file, 60)
        aborted_at.append(time.monotonic())
        abort.set()

    threading.Thread(target=abort_once_the_tree_runs, daemon=True).start()
    fault = fault_of(lambda: adapter.probe(request("sleeper", argument={"pids": str(pids_file)}), abort=abort))
    assert fault.code == "aborted" and time.monotonic() - aborted_at[0] < 5
    for pid in (int(p) for p in wait_for_file(pids_file).split()):
        assert is_dead(pid)


def test_a_leg_waits_on_a_waitable_abort_instead_of_polling_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With an ``AbortFlag`` a running leg's selector sleeps until something happens (here: its 1.5 s
    budget); with a plain event it wakes every 20 ms to look (each wake-up takes the GIL back from the
    threads around it, which slowed a 32-leg fan-out)."""
    pids_file = tmp_path / "pids"
    adapter, _ = adapter_for(tmp_path, authorization("sleeper", "sleep_tree.py", maxElapsedMs=1500))
    calls: list[float] = []
    real = selectors.PollSelector.select
    monkeypatch.setattr(selectors.PollSelector, "select", lambda self, timeout=None: calls.append(1) or real(self, timeout))
    woken = {}
    for kind in (AbortFlag, threading.Event):
        calls.clear()
        signal = kind()
        fault = fault_of(lambda signal=signal: adapter.probe(request("sleeper", argument={"pids": str(pids_file)}), abort=signal))
        assert fault.code == "budget-exhausted"
        woken[kind.__name__] = len(calls)
    assert woken["AbortFlag"] < 10 < 30 < woken["Event"], woken


def test_an_abort_before_the_call_starts_nothing(tmp_path: Path) -> None:
    adapter, counting = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    abort = threading.Event()
    abort.set()
    fault = fault_of(lambda: adapter.probe(request("argv-echo"), abort=abort))
    assert (fault.code, fault.artifact_path, counting.calls) == ("aborted", "ProbeRequest", 0)


def test_kill_all_live_groups_ends_a_running_leg(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    adapter, _ = adapter_for(tmp_path, authorization("sleeper", "sleep_tree.py", maxElapsedMs=60000))
    outcome: dict[str, Any] = {}

    def leg() -> None:
        try:
            outcome["observation"] = adapter.probe(request("sleeper", argument={"pids": str(pids_file)}))
        except RuntimeFault as fault:
            outcome["fault"] = fault

    worker = threading.Thread(target=leg)
    worker.start()
    child, grandchild = (int(p) for p in wait_for_file(pids_file).split())
    assert child in live_process_groups()
    assert child in kill_all_live_groups()
    worker.join(10)
    assert not worker.is_alive()
    assert outcome["observation"].exit_code == -signal.SIGKILL
    assert is_dead(child) and is_dead(grandchild)
    assert child not in live_process_groups()


def test_no_zombie_of_ours_survives_a_leg(tmp_path: Path) -> None:
    adapter, _ = adapter_for(
        tmp_path,
        authorization("argv-echo", "print_argv.py"),
        authorization("sleeper", "sleep_tree.py", maxElapsedMs=300),
        authorization("flooder", "flood.py", maxOutputBytes=100),
    )
    adapter.probe(request("argv-echo"))
    for executable in ("sleeper", "flooder"):
        with pytest.raises(RuntimeFault):
            adapter.probe(request(executable))
    assert own_zombies() == []


def test_fixture_scripts_exist() -> None:
    # the subject's targets are real files (a missing fixture would turn every case into port-failure)
    for script in ("print_argv.py", "exit_code.py", "write_artifact.py", "sleep_tree.py", "flood.py"):
        assert (FIXTURES / script).is_file()
    assert Path(sys.executable).is_file()


def test_elapsed_time_is_reported_beside_the_observation_not_in_it(tmp_path: Path) -> None:
    adapter, _ = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    timed = adapter.probe_timed(request("argv-echo"))
    assert timed.elapsed_ms > 0
    wire = timed.observation.model_dump(by_alias=True)
    assert set(wire) == {"kind", "probeId", "interfaceId", "operationId", "exitCode", "stdout", "stderr", "artifacts"}


@pytest.mark.parametrize("junk", [None, "a request", ["kind", "cli"], 42])
def test_a_request_that_is_not_an_object_is_a_schema_failure(tmp_path: Path, junk: object) -> None:
    adapter, counting = adapter_for(tmp_path, authorization("argv-echo", "print_argv.py"))
    fault = fault_of(lambda: adapter.probe(junk))
    assert (fault.code, fault.artifact_path, counting.calls) == ("schema-parse-failure", "ProbeRequest", 0)


def test_without_pidfd_the_exit_is_polled_and_leftovers_still_die(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evalquality_core.adapters.process_group as process_group

    monkeypatch.setattr(process_group, "USE_PIDFD", False)  # the watchdog polls: kernels before 5.3, other POSIX
    adapter, _ = adapter_for(
        tmp_path,
        authorization("failing", "exit_code.py"),
        authorization("spawner", "spawn_and_exit.py"),
        authorization("sleeper", "sleep_tree.py", maxElapsedMs=500),
    )
    assert adapter.probe(request("failing", argument={"code": 4})).exit_code == 4
    pid_file = tmp_path / "grandchild"
    assert adapter.probe(request("spawner", argument={"pid": str(pid_file)})).exit_code == 0
    assert is_dead(int(pid_file.read_text()))
    assert fault_of(lambda: adapter.probe(request("sleeper"))).code == "budget-exhausted"
