"""Fault injection into the leg cache: whatever a hostile or broken writer leaves in the cache directory is
never served and never executed. Each tamper is done by a separate real process (as an attacker would),
the leg then runs again (a real child process counted by a marker file), and exactly one warning line
says what was discarded. Also: identical legs that hang collapse into one spawn."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evalquality_core.faults import RuntimeFault
from tasks.leg_cache import DATABASE_NAME, LegCache, LegCacheUnusable, decode_entry, encode_entry

REQUEST = {
    "kind": "cli",
    "probeId": "leg-a",
    "interfaceId": "skill-runner",
    "operationId": "run-skill",
    "executable": "skill-runner",
    "subcommandPath": [],
    "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}},
}


def _spawner(marker: Path, exit_code: int = 0):
    """A spawn that starts a real process (one marker line per start) and returns its observation."""

    def spawn() -> dict:
        code = f"open({str(marker)!r}, 'a').write('start\\n')"
        subprocess.run([sys.executable, "-c", code], check=True)
        return {
            "kind": "cli", "probeId": "first", "interfaceId": "skill-runner", "operationId": "run-skill",
            "exitCode": exit_code,
            "stdout": {"kind": "text", "value": "honest"},
            "stderr": {"kind": "text", "value": ""},
            "artifacts": {},
        }

    return spawn


def _starts(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def _in_child(code: str) -> None:
    """Run ``code`` in a separate Python process (the tamperer); it must succeed."""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def _filled(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    directory, marker, warnings = tmp_path / "cache", tmp_path / "starts", []
    first = LegCache(directory, warn=warnings.append)
    assert first.answer("k1", REQUEST, _spawner(marker)).source == "spawned"
    first.close()
    assert _starts(marker) == 1
    return directory, marker, warnings


def _rerun(directory: Path, marker: Path) -> tuple[str, list[str]]:
    warnings: list[str] = []
    cache = LegCache(directory, warn=warnings.append)
    answer = cache.answer("k1", REQUEST, _spawner(marker))
    cache.close()
    assert answer.observation["stdout"] == {"kind": "text", "value": "honest"}
    return answer.source, warnings


def test_an_entry_is_canonical_json_with_both_digests(tmp_path):
    directory, _, _ = _filled(tmp_path)
    with sqlite3.connect(directory / DATABASE_NAME) as db:
        (text,) = db.execute("SELECT entry FROM legs WHERE key = 'k1'").fetchone()
    entry = json.loads(text)
    assert set(entry) == {"format", "key", "keyDigest", "record", "recordDigest"}
    assert entry["key"] == "k1" and entry["keyDigest"].startswith("sha256:")
    assert decode_entry("k1", text)["observation"]["exitCode"] == 0
    assert encode_entry("k1", entry["record"]) == text  # canonical: re-encoding gives the same bytes


def test_a_tampered_observation_is_discarded_and_the_leg_runs_again(tmp_path):
    directory, marker, _ = _filled(tmp_path)
    _in_child(
        "import sqlite3, json\n"
        f"db = sqlite3.connect({str(directory / DATABASE_NAME)!r})\n"
        "(text,) = db.execute(\"SELECT entry FROM legs WHERE key='k1'\").fetchone()\n"
        "entry = json.loads(text)\n"
        "entry['record']['observation']['exitCode'] = 1  # flip the verdict-deciding answer\n"
        "db.execute(\"UPDATE legs SET entry=? WHERE key='k1'\", (json.dumps(entry),))\n"
        "db.commit()\n"
    )
    source, warnings = _rerun(directory, marker)
    assert source == "spawned" and _starts(marker) == 2
    assert len(warnings) == 1 and "record digest does not match" in warnings[0] and str(directory) in warnings[0]
    assert _rerun(directory, marker) == ("cache", [])  # the re-run's fresh entry verifies


def test_an_entry_moved_to_another_key_is_not_served(tmp_path):
    directory, marker, _ = _filled(tmp_path)
    _in_child(
        "import sqlite3\n"
        f"db = sqlite3.connect({str(directory / DATABASE_NAME)!r})\n"
        "db.execute(\"UPDATE legs SET key='k-other' WHERE key='k1'\")\n"
        "db.commit()\n"
    )
    warnings: list[str] = []
    cache = LegCache(directory, warn=warnings.append)
    assert cache.answer("k-other", REQUEST, _spawner(marker)).source == "spawned"
    assert len(warnings) == 1 and "another key" in warnings[0]


def test_a_planted_pickle_is_never_executed(tmp_path):
    directory, marker, _ = _filled(tmp_path)
    pwned = tmp_path / "pwned"
    # A pickle whose loading would run code, planted as the entry.
    _in_child(
        "import pickle, sqlite3, os\n"
        "class Boom:\n"
        f"    def __reduce__(self): return (os.system, ('touch {pwned}',))\n"
        "blob = pickle.dumps(Boom())\n"
        f"db = sqlite3.connect({str(directory / DATABASE_NAME)!r})\n"
        "db.execute(\"UPDATE legs SET entry=? WHERE key='k1'\", (blob,))\n"
        "db.commit()\n"
    )
    (directory / "claims").mkdir(exist_ok=True)
    (directory / "claims" / "k1.lock").unlink()
    (directory / "claims" / "k1.lock").symlink_to("/etc/passwd")  # and a claim file pointing elsewhere
    source, warnings = _rerun(directory, marker)
    assert not pwned.exists()
    assert not (directory / "claims" / "k1.lock").is_symlink()
    assert source == "spawned" and _starts(marker) == 2
    assert len(warnings) == 1 and "not JSON text" in warnings[0]


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_a_broken_database_is_moved_aside_and_rebuilt_with_one_line(tmp_path, damage):
    directory, marker, _ = _filled(tmp_path)
    database = directory / DATABASE_NAME
    _in_child(
        "import os\n"
        f"path = {str(database)!r}\n"
        + (
            "size = os.path.getsize(path); os.truncate(path, size // 3)\n"
            if damage == "truncate"
            else "data = bytearray(open(path, 'rb').read()); data[:4096] = os.urandom(4096); open(path, 'wb').write(data)\n"
        )
    )
    source, warnings = _rerun(directory, marker)
    assert source == "spawned" and _starts(marker) == 2
    assert len(warnings) == 1
    assert str(directory) in warnings[0] and "moved it to legs.sqlite3.corrupt-" in warnings[0]
    assert len(list(directory.glob(f"{DATABASE_NAME}.corrupt-*"))) >= 1
    assert _rerun(directory, marker) == ("cache", [])


def test_an_unusable_cache_directory_is_one_line(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    with pytest.raises(LegCacheUnusable) as caught:
        LegCache(blocker / "cache")
    assert "\n" not in str(caught.value) and str(blocker / "cache") in str(caught.value)


def test_identical_hanging_legs_collapse_into_one_spawn(tmp_path):
    """Six identical legs whose target hangs: one process runs into the budget, the other five wait for
    it and get the same fault; only that one leg carries a cost."""
    marker = tmp_path / "starts"
    cache = LegCache(tmp_path / "cache")

    def hanging() -> dict:
        process = subprocess.Popen(
            [sys.executable, "-c", f"open({str(marker)!r}, 'a').write('start\\n'); import time; time.sleep(30)"]
        )
        try:
            process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise RuntimeFault("budget-exhausted", "CommandProbeRequest", "exceeded maxElapsedMs (500ms) and was killed")

    faults: list[RuntimeFault] = []

    def leg(index: int) -> None:
        try:
            cache.answer("k-hang", {**REQUEST, "probeId": f"leg-{index}"}, hanging)
        except RuntimeFault as fault:
            faults.append(fault)

    threads = [threading.Thread(target=leg, args=(index,)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert _starts(marker) == 1
    assert len(faults) == 6 and {fault.code for fault in faults} == {"budget-exhausted"}
    costs = sorted((fault.leg_cost.spawned, fault.leg_cost.elapsed_s > 0.4) for fault in faults)
    assert costs == [(False, False)] * 5 + [(True, True)]
    assert cache.lookup("k-hang") is None  # never cached: the next invocation tries again
    assert LegCache(tmp_path / "cache").answer("k-hang", REQUEST, _spawner(marker)).source == "spawned"


def _strictly(key: str, text: str) -> dict:
    """What the strict reader alone makes of an entry (an indented copy never takes the byte-level path)."""
    return decode_entry(key, json.dumps(json.loads(text), indent=1, ensure_ascii=False))


@pytest.mark.parametrize("stdout", ["honest", "ünïcode ✓ \u2028", "x" * 5000])
def test_an_entry_as_written_is_read_on_its_bytes_and_equals_the_strict_read(stdout):
    from tasks.leg_cache.entry import _bound_record

    observation = {**_spawner(Path("/dev/null"))(), "stdout": {"kind": "text", "value": stdout}}
    text = encode_entry("k1", {"key": "k1", "observation": observation, "answeredBy": {"run": "r"}})
    assert _bound_record("k1", text) is not None
    assert decode_entry("k1", text) == _strictly("k1", text)
    assert _bound_record("k2", text) is None  # another key's layout never matches


def test_record_bytes_rebound_to_a_recomputed_digest_still_face_every_record_check():
    import hashlib

    from tasks.leg_cache import EntryRejected

    text = encode_entry("k1", {"key": "k1", "observation": _spawner(Path("/dev/null"))(), "answeredBy": {}})
    head, _, tail = text.partition(',"record":')
    planted = json.dumps({"key": "k1", "observation": {"kind": "cli", "exitCode": "zero"}}, separators=(",", ":"))
    forged = f'{head},"record":{planted},"recordDigest":"sha256:{hashlib.sha256(planted.encode()).hexdigest()}"}}'
    with pytest.raises(EntryRejected, match="not a valid ProbeObservation"):
        decode_entry("k1", forged)
    altered = text.replace("honest", "HONEST")  # the digest left as it was
    with pytest.raises(EntryRejected, match="record digest does not match"):
        decode_entry("k1", altered)
