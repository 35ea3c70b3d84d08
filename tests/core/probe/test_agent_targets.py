"""The agent keys of ``targets.toml`` (issue 34): the exit-code class table, the decision table row by
row, the backoff, and one-line refusals of bad keys naming the file, the table and the key."""

from __future__ import annotations

import pytest

from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.agent_targets import (
    DECISIONS,
    RUNNER_EXIT_CLASSES,
    AgentProfile,
    RetryPolicy,
    backoff_seconds,
    decide,
)
from evalquality_core.probe.targets import parse_targets

ENTRY = """
[[target]]
interface_id = "review"
executable = "tea-review"
target = "{python}"
target_args = ["runner.py"]
permitted_subcommand_paths = [[]]
permitted_environment_keys = []
cwd = "."
max_elapsed_ms = 60000
max_output_bytes = 1048576
[target.artifacts]
"""
AGENT = ENTRY.replace('cwd = "."', 'cwd = "."\nvendor = "anthropic"\ncost_per_leg = 0.25') + """
[target.exit_classes]
configuration = [3]
transport = [4]
timeout = [5]
parser = [6]
[target.retry]
transient = ["transport", "timeout"]
attempts = 3
backoff_ms = 500
max_backoff_ms = 4000
[vendors]
anthropic = 2
"""
PROFILE = parse_targets(AGENT, "suite/targets.toml").agent_of("review", "tea-review")


def test_the_registry_declares_the_runners_table_vendor_cost_and_retries() -> None:
    registry = parse_targets(AGENT, "suite/targets.toml")
    assert PROFILE is not None
    assert dict(PROFILE.exit_classes) == dict(RUNNER_EXIT_CLASSES) == {3: "configuration", 4: "transport", 5: "timeout", 6: "parser"}
    assert (PROFILE.vendor, PROFILE.cost_per_leg, dict(registry.vendors)) == ("anthropic", 0.25, {"anthropic": 2})
    assert PROFILE.retry == RetryPolicy(frozenset({"transport", "timeout"}), 3, 500, 4000)
    # The agent keys never reach the adapter's policy (it forbids unknown fields).
    assert registry.to_policy({"python": "/usr/bin/python3"}).authorizations[0].executable == "tea-review"


def test_a_target_without_agent_keys_is_plain() -> None:
    assert parse_targets(ENTRY).agent_of("review", "tea-review") is None


# (exit code, attempt, what happens): one case per row of DECISIONS, attempts = 3.
ROWS = [
    ((False, False, False), 0, 3, "answer"),      # exit 0 on the last attempt: the answer
    ((False, False, True), 1, 1, "answer"),       # exit 1 is no class: an observation, never retried
    ((True, False, False), 3, 3, "fault"),        # configuration, no attempts left
    ((True, False, True), 6, 1, "fault"),         # parser is not transient: never retried
    ((True, True, False), 4, 3, "fault"),         # transport out of attempts: a fault, never cached
    ((True, True, True), 5, 2, "retry"),          # timeout with an attempt left
]


@pytest.mark.parametrize(("row", "exit_code", "attempt", "expected"), ROWS)
def test_each_row_of_the_decision_table(row: tuple[bool, bool, bool], exit_code: int, attempt: int, expected: str) -> None:
    assert PROFILE is not None
    assert DECISIONS[row] == expected
    assert decide(PROFILE, exit_code, attempt) == expected


def test_the_rows_cover_the_table() -> None:
    assert {row for row, *_ in ROWS} == set(DECISIONS)


def test_backoff_doubles_up_to_the_cap_with_seeded_jitter() -> None:
    retry = RetryPolicy(frozenset({"transport"}), 6, 500, 4000)
    waits = [backoff_seconds(retry, attempt, "leg-key") for attempt in range(1, 6)]
    for wait, base in zip(waits, [0.5, 1.0, 2.0, 4.0, 4.0], strict=True):
        assert base * 0.5 <= wait < base
    assert waits == [backoff_seconds(retry, attempt, "leg-key") for attempt in range(1, 6)]  # seeded: repeatable
    assert waits != [backoff_seconds(retry, attempt, "another-leg") for attempt in range(1, 6)]  # legs spread out


def test_a_profile_without_a_class_table_answers_every_exit() -> None:
    plain = AgentProfile(vendor="x")
    assert [decide(plain, code, 1) for code in (0, 3, 4, 137)] == ["answer"] * 4


@pytest.mark.parametrize(("change", "names"), [
    (('vendor = "anthropic"', 'vendor = "openai"'), ["target[0]", "vendor", "openai", "[vendors]"]),
    (("cost_per_leg = 0.25", 'cost_per_leg = "cheap"'), ["target[0]", "cost_per_leg"]),
    (("transport = [4]", "transport = [3]"), ["target[0]", "exit 3", "configuration", "transport"]),
    (("parser = [6]", "parse = [6]"), ["target[0]", "exit_classes.parse", "not a failure class"]),
    (("timeout = [5]", "timeout = [0]"), ["target[0]", "exit_classes.timeout", "1 to 255"]),
    (('transient = ["transport", "timeout"]', 'transient = ["network"]'), ["target[0]", "retry.transient", "network"]),
    (("attempts = 3", "attempts = 0"), ["target[0]", "retry.attempts", "1 to 10"]),
    (("max_backoff_ms = 4000", "max_backoff_ms = 100"), ["target[0]", "max_backoff_ms", "below"]),
    (("attempts = 3", "attempts = 3\ntries = 2"), ["target[0]", "retry", "tries"]),
    (("anthropic = 2", "anthropic = 0"), ["[vendors]", "anthropic", "1 to 1000"]),
    (("anthropic = 2", '"Anthropic Inc" = 2'), ["[vendors]", "Anthropic Inc"]),
])
def test_a_bad_agent_key_is_one_schema_parse_failure_naming_it(change: tuple[str, str], names: list[str]) -> None:
    text = AGENT.replace(*change)
    assert text != AGENT
    with pytest.raises(RuntimeFault) as raised:
        parse_targets(text, "suite/targets.toml")
    fault = raised.value
    assert fault.code == "schema-parse-failure" and fault.artifact_path == "suite/targets.toml"
    assert "\n" not in fault.detail
    for name in names:
        assert name in fault.detail, (name, fault.detail)
