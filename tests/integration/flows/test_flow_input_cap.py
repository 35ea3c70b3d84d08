"""The flows read suite files under the same input size cap as the CLI (``EVALQUALITY_MAX_INPUT_BYTES``, 64 MiB).

A suite file past the cap (a padded probe, a padded stored trial record, a padded baseline) is refused before
it is parsed, with one line naming the file, the cap and how to raise it; the suite is reported as could
not run (exit 2). A FIFO is refused without blocking; a malformed cap is a usage error (64) before anything runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evalquality_core.suite.load import DEFAULT_MAX_INPUT_BYTES, StagingError, input_cap, read_suite_bytes
from tests.integration.flows.test_contract_strength import make_corpus, run

PROJECT = Path(__file__).resolve().parents[3]
CAP = 256 * 1024  # above every file of the cut notes suite, below the padded ones


def _pad(path: Path, size: int) -> None:
    """Grow a JSON file past ``size`` bytes with trailing whitespace: still the same, valid JSON."""
    text = path.read_text()
    path.write_text(text + " " * (size - len(text.encode()) + 1))
    assert json.loads(path.read_text()) is not None


def test_the_cap_is_exact_and_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALQUALITY_MAX_INPUT_BYTES", "10")
    exact, over = tmp_path / "exact.json", tmp_path / "over.json"
    exact.write_bytes(b"[1,2,3,45]")
    over.write_bytes(b"[1,2,3,456]")
    assert read_suite_bytes(exact) == b"[1,2,3,45]"
    with pytest.raises(StagingError) as refused:
        read_suite_bytes(over)
    assert str(refused.value) == (
        f"{over}: larger than 10 bytes; nothing was parsed (raise EVALQUALITY_MAX_INPUT_BYTES to allow it)"
    )
    monkeypatch.delenv("EVALQUALITY_MAX_INPUT_BYTES")
    assert input_cap() == DEFAULT_MAX_INPUT_BYTES == 64 * 1024 * 1024
    monkeypatch.setenv("EVALQUALITY_MAX_INPUT_BYTES", "lots")
    with pytest.raises(ValueError, match="EVALQUALITY_MAX_INPUT_BYTES='lots' is not a positive whole number"):
        input_cap()


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "contract.json"
    os.mkfifo(fifo)
    outcome: list[BaseException | bytes] = []
    reader = threading.Thread(target=lambda: outcome.append(_try(fifo)), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], StagingError) and "is not a regular file" in str(outcome[0])


def _try(path: Path) -> BaseException | bytes:
    try:
        return read_suite_bytes(path)
    except StagingError as problem:
        return problem


@pytest.mark.slow
def test_oversized_suite_files_make_the_suite_could_not_run_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALQUALITY_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("EVALQUALITY_SUITES", raising=False)
    monkeypatch.setenv("EVALQUALITY_MAX_INPUT_BYTES", str(CAP))
    corpus = make_corpus(tmp_path)
    probe = corpus / "suites/notes/probes/P-006.json"
    _pad(probe, CAP)

    result = run(corpus, tmp_path / "out")
    line = f"{probe}: larger than {CAP} bytes; nothing was parsed (raise EVALQUALITY_MAX_INPUT_BYTES to allow it)"
    assert result.exit_code == 2
    assert result.problems["notes"] == line, result.problems
    assert any(line in gate_line and "\n" not in gate_line for gate_line in result.gate.lines()), result.gate.lines()

    # A stored trial record past the cap: read by the strength flow itself, refused alike.
    probe.write_text(json.dumps(json.loads(probe.read_text())))
    record = corpus / "suites/notes/trials/P-001/trial-2/sealed-run-record.json"
    _pad(record, CAP)
    result = run(corpus, tmp_path / "out")
    assert result.exit_code == 2
    assert result.problems["notes"].endswith(
        f"{record}: larger than {CAP} bytes; nothing was parsed (raise EVALQUALITY_MAX_INPUT_BYTES to allow it)"
    ), result.problems

    # The baseline is read under the cap too: unreadable, exit 2, named.
    record.write_text(json.dumps(json.loads(record.read_text())))
    _pad(corpus / "expected-strength.json", CAP)
    result = run(corpus, tmp_path / "out")
    assert result.exit_code == 2
    assert any("expected-strength.json: larger than" in gate_line for gate_line in result.gate.lines()), (
        result.gate.lines()
    )


@pytest.mark.parametrize("flow", ["flows.preflight", "flows.contract_strength"])
def test_a_malformed_cap_is_a_usage_error_before_anything_runs(tmp_path, flow):
    home = tmp_path / "home"
    env = {**os.environ, "EVALQUALITY_HOME": str(home), "EVALQUALITY_MAX_INPUT_BYTES": "64MiB"}
    done = subprocess.run([sys.executable, "-m", flow], cwd=PROJECT, env=env, capture_output=True, text=True,
                          timeout=180)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 64, done.stderr
    assert lines == [f"python -m {flow}: usage: EVALQUALITY_MAX_INPUT_BYTES='64MiB' is not a positive whole number"]
    assert not (home / "leg-cache").exists()
