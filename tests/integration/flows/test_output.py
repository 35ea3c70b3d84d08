"""``tasks/output.py``: a file is written whole or not at all, with no temp file left beside it."""

from __future__ import annotations

import json

from tasks.output import write_artifact, write_atomically


def test_an_artifact_is_canonical_json_plus_one_newline_and_no_temp_is_left(tmp_path):
    path = write_artifact(tmp_path / "suite" / "evidence-P-001.json", {"b": 1, "a": [1.0, "x"]})
    assert path.read_bytes() == b'{"a":[1,"x"],"b":1}\n'
    assert [entry.name for entry in path.parent.iterdir()] == ["evidence-P-001.json"]


def test_rewriting_replaces_the_whole_file(tmp_path):
    path = tmp_path / "baseline.json"
    write_atomically(path, json.dumps({"long": "x" * 1000}).encode())
    write_atomically(path, b"{}\n")
    assert path.read_bytes() == b"{}\n"
    assert [entry.name for entry in tmp_path.iterdir()] == ["baseline.json"]
