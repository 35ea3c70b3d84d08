"""The exit-code class table enters a leg's cache key (issue 34): an exit cached before a target declared
the table (an observation then) must not answer a leg under it (a fault or a retry now)."""

from __future__ import annotations

from evalquality_core.probe.targets import parse_targets
from tasks.preflight import leg_key

PLAIN = """
[[target]]
interface_id = "review"
executable = "tea-review"
target = "/bin/true"
permitted_subcommand_paths = [[]]
permitted_environment_keys = []
cwd = "."
max_elapsed_ms = 60000
max_output_bytes = 1048576
[target.artifacts]
"""
CLASSES = PLAIN + "[target.exit_classes]\ntransport = [4]\n"
REQUEST = {
    "kind": "cli", "probeId": "P-001", "interfaceId": "review", "operationId": "review", "executable": "tea-review",
    "subcommandPath": [], "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}},
}


def _key(text: str) -> str:
    registry = parse_targets(text)
    return leg_key(REQUEST, registry.to_policy(), "sha256:" + "0" * 64, targets=registry)


def test_the_class_table_changes_the_key_and_other_agent_keys_do_not() -> None:
    assert _key(CLASSES) != _key(PLAIN)
    assert _key(CLASSES.replace("[4]", "[4, 5]")) != _key(CLASSES)
    vendor = CLASSES.replace('cwd = "."', 'cwd = "."\nvendor = "acme"\ncost_per_leg = 2') + "[vendors]\nacme = 1\n"
    assert _key(vendor) == _key(CLASSES)
    assert _key(PLAIN.replace('cwd = "."', 'cwd = "."\nvendor = "acme"') + "[vendors]\nacme = 1\n") == _key(PLAIN)
