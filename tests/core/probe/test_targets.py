"""``targets.toml``: parsing, refusals, policy building and the two-way contract cross-check (harness.md A.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.targets import (
    OPTIONAL_TARGET_KEYS,
    TARGET_KEYS,
    cross_check_targets,
    parse_targets,
)

SKILL_RUNNER = """
[[target]]
interface_id = "skill-runner"
executable = "skill-runner"
target = "{python}"
target_args = ["{suite}/runner.py", "--quiet"]
permitted_subcommand_paths = [[]]
permitted_environment_keys = ["HOME", "USER"]
cwd = "work"
max_elapsed_ms = 360000
max_output_bytes = 8388608

[target.artifacts]
summary = "out/summary.json"
"""

EXTRA = """
[[target]]
interface_id = "trace-runner"
executable = "trace-runner"
target = "/usr/bin/env"
target_args = []
permitted_subcommand_paths = [["run"], ["run", "fast"]]
permitted_environment_keys = []
cwd = "/srv/trace"
max_elapsed_ms = 1000
max_output_bytes = 1024
artifacts = {}
"""


def refusal(text: str) -> RuntimeFault:
    with pytest.raises(RuntimeFault) as caught:
        parse_targets(text, "suite/targets.toml")
    assert (caught.value.code, caught.value.artifact_path) == ("schema-parse-failure", "suite/targets.toml")
    return caught.value


def test_parses_into_a_policy_with_placeholders_filled() -> None:
    registry = parse_targets(SKILL_RUNNER + EXTRA)
    assert registry.pairs() == [("skill-runner", "skill-runner"), ("trace-runner", "trace-runner")]
    assert registry.placeholders == {"python", "suite"}
    policy = registry.to_policy({"python": "/opt/py/bin/python3", "suite": "/corpus/skill"})
    first = policy.authorizations[0]
    assert first.target == "/opt/py/bin/python3"
    assert first.target_args == ["/corpus/skill/runner.py", "--quiet"]
    assert first.permitted_environment_keys == ["HOME", "USER"]
    assert first.artifacts == {"summary": "out/summary.json"}
    assert (first.cwd, first.max_elapsed_ms, first.max_output_bytes) == ("work", 360000, 8388608)
    assert policy.authorizations[1].permitted_subcommand_paths == [["run"], ["run", "fast"]]


def test_an_empty_registry_authorizes_nothing() -> None:
    assert parse_targets("").to_policy().authorizations == []


def test_a_missing_substitution_is_refused() -> None:
    with pytest.raises(RuntimeFault) as caught:
        parse_targets(SKILL_RUNNER).to_policy({"python": "/usr/bin/python3"})
    assert caught.value.detail == "no value given for placeholder(s) {suite}"


def test_not_toml() -> None:
    assert refusal("[[target]\n").detail.startswith("not TOML: ")


def test_unknown_top_level_key() -> None:
    assert "unknown top-level key(s) targets" in refusal("[[targets]]\nx = 1\n").detail


@pytest.mark.parametrize("key", [key for key in TARGET_KEYS if key not in OPTIONAL_TARGET_KEYS])
def test_every_key_is_required(key: str) -> None:
    lines = [line for line in SKILL_RUNNER.splitlines() if not line.startswith(key + " ")]
    if key == "artifacts":
        lines = [line for line in lines if line not in ("[target.artifacts]", 'summary = "out/summary.json"')]
    detail = refusal("\n".join(lines)).detail
    assert detail == f"target[0] lacks required key(s) {key} (there are no defaults)"


def test_an_unknown_key_is_refused() -> None:
    assert refusal(SKILL_RUNNER.replace("cwd =", "shell = true\ncwd =")).detail == "target[0] has unknown key(s) shell"


@pytest.mark.parametrize("spelling", ["PATH", "Path", "path"])
def test_path_can_never_be_permitted(spelling: str) -> None:
    detail = refusal(SKILL_RUNNER.replace('["HOME", "USER"]', f'["HOME", "{spelling}"]')).detail
    assert detail.startswith("target[0] ('skill-runner'): input does not conform")
    assert "permittedEnvironmentKeys" in detail and "never permitted" in detail


def test_a_path_is_not_a_logical_executable() -> None:
    detail = refusal(SKILL_RUNNER.replace('executable = "skill-runner"', 'executable = "./runner.py"')).detail
    assert "/authorizations/0/executable" in detail


def test_a_pair_registered_twice_is_refused() -> None:
    detail = refusal(SKILL_RUNNER + SKILL_RUNNER).detail
    assert detail == "target[1] registers interface 'skill-runner' and executable 'skill-runner' a second time"


def contract(*operations: tuple[str, str, list[str]], contract_id: str = "c-one") -> dict[str, object]:
    interfaces: dict[str, list[dict[str, object]]] = {}
    for logical, executable, path in operations:
        interfaces.setdefault(logical, []).append(
            {"operationId": f"op-{len(interfaces[logical])}", "invocation": {"executable": executable, "subcommandPath": path}}
        )
    return {
        "contractId": contract_id,
        "permittedInterfaces": [
            {"kind": "api", "logicalId": "web-api", "operations": []},
            *({"kind": "cli", "logicalId": logical, "operations": ops} for logical, ops in interfaces.items()),
        ],
    }


def test_cross_check_passes_when_both_directions_agree() -> None:
    coverage = cross_check_targets(
        parse_targets(SKILL_RUNNER + EXTRA),
        [contract(("skill-runner", "skill-runner", [])), contract(("trace-runner", "trace-runner", ["run", "fast"]))],
    )
    assert coverage.ok and coverage.problems() == []


def test_cross_check_names_every_problem() -> None:
    coverage = cross_check_targets(
        parse_targets(SKILL_RUNNER + EXTRA),
        [contract(("skill-runner", "skill-runner", ["now"]), ("fiction", "nobody-ships-this", []), contract_id="c-two")],
    )
    assert not coverage.ok
    assert coverage.problems() == [
        'contract "c-two" names interface "fiction" executable "nobody-ships-this", which the registry does not register',
        'contract "c-two" runs interface "skill-runner" executable "skill-runner" with subcommand path [now], '
        "which the registry does not permit",
        'the registry registers interface "trace-runner" executable "trace-runner", which no contract names',
    ]


def test_cross_check_against_the_reference_cli_contract(conformance: Path) -> None:
    wire = json.loads((conformance / "chains" / "skill-defect" / "eval-contract.json").read_text())
    assert cross_check_targets(parse_targets(SKILL_RUNNER), [wire]).ok
    coverage = cross_check_targets(parse_targets(EXTRA), [wire])
    assert [row[1:] for row in coverage.unregistered] == [("skill-runner", "skill-runner")]
    assert coverage.unused == (("trace-runner", "trace-runner"),)


def test_cross_check_takes_models_too(conformance: Path) -> None:
    from evalquality_core.artifacts.base import read_artifact
    from evalquality_core.artifacts.contract import EvalContract

    wire = json.loads((conformance / "chains" / "skill-defect" / "eval-contract.json").read_text())
    model = read_artifact(EvalContract, wire)
    assert cross_check_targets(parse_targets(SKILL_RUNNER), [model]).ok


def test_an_entry_without_target_args_loads_with_none():
    """As the reference's policy: ``target_args`` may be left out (an empty list); so may our two
    argument-rule keys (no end-of-options marker, no dash-leading positionals)."""
    text = "\n".join(line for line in SKILL_RUNNER.splitlines() if not line.startswith("target_args "))
    registry = parse_targets(text)
    policy = registry.to_policy({"python": "/usr/bin/python3", "suite": "/s"})
    (entry,) = policy.authorizations
    assert entry.target_args == [] and entry.end_of_options is None and entry.dash_positionals is False


def test_the_argument_rule_keys_load():
    text = SKILL_RUNNER.replace("cwd =", 'end_of_options = "--"\ndash_positionals = true\ncwd =')
    (entry,) = parse_targets(text).to_policy({"python": "/usr/bin/python3", "suite": "/s"}).authorizations
    assert entry.end_of_options == "--" and entry.dash_positionals is True
