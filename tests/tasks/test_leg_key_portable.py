"""The leg cache key holds nothing machine-specific: the same request planned from another checkout, by an
interpreter at another path, gets the same key (so machines share one PostgreSQL cache), while another
interpreter version or implementation gets another key (its answers may differ). Keys made before the
interpreter's identity entered them (they held its path) never match a key made now: old entries miss.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.canonical.digest import digest_composite
from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.preflight.plan import plan_preflight
from tasks import preflight as preflight_tasks
from tasks.leg_cache import LegCache
from tasks.preflight import interpreter_identity, target_entry, tool_version
from tasks.suites import load_suites

PROJECT = Path(__file__).resolve().parents[2]
SUITES = PROJECT / "corpus" / "suites"
#: One suite of each leg kind: cli (notes), mcp (notes-tools), api (notes-api).
KINDS = ("notes", "notes-tools", "notes-api")

#: Run by the "other machine": plans every leg of every suite under argv[1] and prints the keys.
PLAN_KEYS = """
import json, sys
from pathlib import Path
from evalquality_core.compile.pipeline import compile_contract
from evalquality_core.preflight.plan import plan_preflight
from tasks.suites import load_suites
suites, problems = load_suites(Path(sys.argv[1]))
assert not problems, problems
keys = {}
for suite in suites:
    contract = compile_contract(suite.contract)
    keys[suite.name] = sorted({suite.leg_key_of(p, leg) for p in suite.probes
                               for leg in plan_preflight(contract, [p], "r").legs})
import tasks.suites
print(json.dumps({"executable": sys.executable, "code": tasks.suites.__file__, "keys": keys}))
"""


def planned_keys(suites_dir: Path, names: tuple[str, ...] = KINDS) -> dict[str, list[str]]:
    """Every distinct leg key of the named suites, planned in this process."""
    suites, problems = load_suites(suites_dir, list(names))
    assert not problems, problems
    keys = {}
    for suite in suites:
        contract = compile_contract(suite.contract)
        keys[suite.name] = sorted(
            {suite.leg_key_of(p, leg) for p in suite.probes for leg in plan_preflight(contract, [p], "r").legs}
        )
    return keys


def _other_checkout(root: Path) -> Path:
    """A second checkout of the project's code and the three suites, at another path."""
    checkout = root / "elsewhere" / "checkout-b"
    for package in ("evalquality_core", "tasks", "flows"):
        shutil.copytree(PROJECT / package, checkout / package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in KINDS:
        shutil.copytree(SUITES / name, checkout / "corpus" / "suites" / name)
    return checkout


def _interpreter_elsewhere(root: Path) -> Path:
    """This interpreter reached by another path (a symlink outside any venv): ``sys.executable`` differs."""
    link = root / "other-machine" / "bin" / "python3"
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.realpath(sys.executable))
    return link


def test_the_same_requests_from_another_checkout_and_interpreter_path_get_the_same_keys(tmp_path: Path) -> None:
    here = planned_keys(SUITES)
    checkout = _other_checkout(tmp_path)
    python = _interpreter_elsewhere(tmp_path)
    # The other "machine" imports the copied checkout's code first, and this install's dependencies.
    site = [entry for entry in sys.path if entry.endswith("site-packages")]
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "EVALQUALITY_", "PREFECT_"))},
        "PYTHONPATH": os.pathsep.join([str(checkout), *site]),
        "EVALQUALITY_HOME": str(tmp_path / "home"),
        "PREFECT_HOME": str(tmp_path / "prefect"),
    }
    result = subprocess.run(
        [str(python), "-c", PLAN_KEYS, str(checkout / "corpus" / "suites")],
        env=environment, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    there = json.loads(result.stdout.strip().splitlines()[-1])
    # It really was another interpreter path and another checkout...
    assert there["executable"] == str(python) != sys.executable
    assert there["code"].startswith(str(checkout))
    # ...and the registry entries it filled hold that path (so a path-keyed cache would never share).
    suites, _ = load_suites(SUITES, ["notes"])
    assert target_entry(suites[0].policy, {"interfaceId": "notes", "executable": "notes"})["target"] == sys.executable
    assert there["keys"] == here
    assert all(here[name] for name in KINDS)


def test_another_interpreter_version_or_implementation_gets_other_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    here = planned_keys(SUITES)
    try:
        monkeypatch.setattr(preflight_tasks.platform, "python_version", lambda: "3.99.0")
        interpreter_identity.cache_clear()
        assert interpreter_identity().endswith("-3.99.0")
        newer = planned_keys(SUITES)
        monkeypatch.undo()
        interpreter_identity.cache_clear()
        monkeypatch.setattr(sys.implementation, "name", "pypy")
        other_implementation = planned_keys(SUITES)
    finally:
        monkeypatch.undo()
        interpreter_identity.cache_clear()
    for name in KINDS:
        # Every target of these suites runs {python} (the api suite's service too): every key moves.
        assert not set(newer[name]) & set(here[name]), name
        assert not set(other_implementation[name]) & set(here[name]), name
    assert planned_keys(SUITES) == here  # and back


def test_a_target_that_does_not_use_the_interpreter_is_keyed_without_it() -> None:
    authored, runtime = preflight_tasks.portable_entry({"target": "/usr/bin/env", "targetArgs": ["node", "a.js"]})
    assert runtime == {} and authored["target"] == "/usr/bin/env"
    authored, runtime = preflight_tasks.portable_entry({"target": sys.executable, "targetArgs": ["a.py"]})
    assert authored["target"] == "{python}" and runtime == {"python": interpreter_identity()}
    # A longer path that merely starts with the interpreter's path is another program: kept as is.
    authored, _ = preflight_tasks.portable_entry({"target": sys.executable + ".12-debug"})
    assert authored["target"] == sys.executable + ".12-debug"


def test_an_entry_stored_under_a_key_of_the_old_shape_is_never_served(tmp_path: Path) -> None:
    """Before this change the key held the interpreter's path and no runtime; such an entry simply misses."""
    suites, _ = load_suites(SUITES, ["notes"])
    suite = suites[0]
    contract = compile_contract(suite.contract)
    probe = suite.probes[0]
    leg = plan_preflight(contract, [probe], "r").legs[0]
    staged = suite.staged_digest_of_leg(probe, leg.leg_id)
    old_key = digest_composite(
        {"request": {**leg.request, "probeId": ""}, "target": target_entry(suite.policy, leg.request),
         "staged": staged, "tool": tool_version()}
    ).removeprefix("sha256:")
    new_key = suite.leg_key_of(probe, leg)
    assert old_key != new_key
    cache = LegCache(tmp_path / "cache")
    planted = {"kind": "cli", "probeId": "p", "interfaceId": leg.request["interfaceId"],
               "operationId": leg.request["operationId"], "exitCode": 0, "stdout": {"kind": "text", "value": "old"},
               "stderr": {"kind": "text", "value": ""}, "artifacts": {}}
    cache.answer(old_key, leg.request, lambda: planted)
    fresh = {**planted, "stdout": {"kind": "text", "value": "new"}}
    answer = cache.answer(new_key, leg.request, lambda: fresh)
    assert answer.source == "spawned" and answer.observation["stdout"]["value"] == "new"
    cache.close()
