"""Dated measurements live in benchmarks/results/*.json, never in prose: a real benchmark run writes its
file, ``python -m benchmarks.publish`` renders them, and docs/reference/measurements.md equals a fresh
rendering of the committed files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.publish import PAGE, load_results, render
from benchmarks.results import RESULTS_DIR, BenchmarkResult
from tests.conftest import PROJECT_ROOT


def run(args: list[str], results: Path) -> subprocess.CompletedProcess[str]:
    """A child process in the checkout with ``BENCH_RESULTS_DIR=results`` and the venv's bin on PATH."""
    env = {**os.environ, "BENCH_RESULTS_DIR": str(results),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_measurements_page_equals_a_fresh_rendering_of_the_committed_results() -> None:
    results = load_results(RESULTS_DIR)
    assert results, "benchmarks/results/ holds the seeded runs"
    assert PAGE.read_text(encoding="utf-8") == render(results), "stale: run python -m benchmarks.publish"


def test_every_benchmark_records_its_figures() -> None:
    for script in sorted((PROJECT_ROOT / "benchmarks").glob("*.py")):
        if script.name.startswith("bench_") or script.name == "regex_linear.py":
            assert "record(__file__" in script.read_text(encoding="utf-8"), script.name


def test_a_benchmark_run_writes_its_json_and_publish_renders_it(tmp_path: Path) -> None:
    done = run(["benchmarks/regex_linear.py"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    written = tmp_path / "regex_linear.json"
    assert f"figures written to {written}" in done.stdout.splitlines()
    result = BenchmarkResult.model_validate(json.loads(written.read_text(encoding="utf-8")))
    assert result.command == "python benchmarks/regex_linear.py"
    # What the benchmark printed is what it recorded (the RE2 ratio, to the two decimals it prints).
    printed = next(line for line in done.stdout.splitlines() if line.startswith("re2 "))
    ratio = next(value for name, value in result.ratios.items() if name.startswith("RE2 "))
    assert abs(float(printed.split("time ratio ")[1].split()[0]) - ratio) <= 0.0051, (printed, ratio)
    assert result.host.cpus == os.cpu_count() and result.host.cli_help_seconds is not None
    page = tmp_path / "measurements.md"
    published = run(["-m", "benchmarks.publish", "--out", str(page)], tmp_path)
    assert published.returncode == 0, published.stderr
    text = page.read_text(encoding="utf-8")
    assert "## regex_linear" in text and result.command in text and f"**{ratio:g}**" in text
    assert run(["-m", "benchmarks.publish", "--check", "--out", str(page)], tmp_path).returncode == 0
    page.write_text(text.replace(f"**{ratio:g}**", "**0.5**"), encoding="utf-8")
    stale = run(["-m", "benchmarks.publish", "--check", "--out", str(page)], tmp_path)
    assert stale.returncode == 1 and "stale" in stale.stderr


def test_a_malformed_results_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    good = json.loads((RESULTS_DIR / "regex_linear.json").read_text(encoding="utf-8"))
    (tmp_path / "regex_linear.json").write_text(json.dumps({**good, "ratios": {"x": "fast"}}), encoding="utf-8")
    page = tmp_path / "measurements.md"
    done = run(["-m", "benchmarks.publish", "--out", str(page)], tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"benchmarks.publish: {tmp_path / 'regex_linear.json'}: ratios.x: Input should be a valid number, "
        "unable to parse string as a number"]
    assert not page.exists()
