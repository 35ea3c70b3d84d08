"""A benchmark's figures as data: ``record(...)`` writes ``benchmarks/results/<bench>.json``.

Dated measurements live in these files, never in the documentation's prose; ``python -m
benchmarks.publish`` renders them all into ``docs/reference/measurements.md`` (a test holds the page equal
to a fresh rendering). A file holds ONE run of one benchmark: its ratios (each against a baseline measured
in the same run, so a slow host slows both sides), the raw figures behind them, what the baseline was, the
host it ran on, the UTC date and the exact command. Re-running a benchmark replaces its file.

``BENCH_RESULTS_DIR`` redirects the files (the tests write into a temp dir, never into the checkout).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

RESULTS_DIR = Path(__file__).resolve().parent / "results"
RESULTS_VARIABLE = "BENCH_RESULTS_DIR"
#: Significant digits kept: more would only record the host's noise.
DIGITS = 4


class Host(BaseModel):
    """The machine a run measured: enough to tell a slow host from a slow change."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpus: int
    cpu_model: str
    system: str
    python: str
    #: 1-minute load average when the benchmark started (other work on a shared host).
    load_average: float
    #: Seconds of ``eval-quality --help`` in a child process: the gauge of a host's speed the project
    #: has compared days by (null when the CLI is not on PATH).
    cli_help_seconds: float | None


class BenchmarkResult(BaseModel):
    """One run of one benchmark (``benchmarks/results/<bench>.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bench: str = Field(pattern=r"^[a-z0-9_]+$")
    command: str
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
    baseline: str
    ratios: dict[str, float] = Field(min_length=1)
    figures: dict[str, float | int | str] = {}
    host: Host


def _round(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cli_help_seconds() -> float | None:
    # The CLI beside this interpreter first (a venv not activated), else the one on PATH.
    beside = Path(sys.executable).parent / "eval-quality"
    cli = str(beside) if beside.is_file() else shutil.which("eval-quality")
    if cli is None:
        return None
    started = time.perf_counter()
    subprocess.run([cli, "--help"], capture_output=True, check=False, timeout=120)
    return _round(time.perf_counter() - started)


def host_now() -> Host:
    """This machine, now."""
    return Host(
        cpus=os.cpu_count() or 0,
        cpu_model=_cpu_model(),
        system=f"{platform.system()} {platform.release()}",
        python=platform.python_version(),
        load_average=round(os.getloadavg()[0], 2),
        cli_help_seconds=_cli_help_seconds(),
    )


def results_dir() -> Path:
    """Where result files go: ``$BENCH_RESULTS_DIR``, else ``benchmarks/results/``."""
    return Path(os.environ.get(RESULTS_VARIABLE) or RESULTS_DIR)


def record(bench_file: str, *, baseline: str, ratios: dict[str, float],
           figures: dict[str, float | int | str] | None = None, argv: list[str] | None = None) -> Path:
    """Write this run's figures as ``<results>/<bench>.json`` and say where, on stdout.

    ``bench_file`` is the benchmark's ``__file__``; ``argv`` its arguments (default ``sys.argv[1:]``),
    so the file names the exact command that reproduces it."""
    bench = Path(bench_file).stem
    arguments = sys.argv[1:] if argv is None else argv
    result = BenchmarkResult(
        bench=bench,
        command=" ".join(["python", f"benchmarks/{bench}.py", *arguments]),
        date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        baseline=baseline,
        ratios={name: _round(value) for name, value in ratios.items()},
        figures={name: _round(value) if isinstance(value, float) else value for name, value in (figures or {}).items()},
        host=host_now(),
    )
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{bench}.json"
    temp = path.with_suffix(".json.tmp")
    temp.write_text(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    temp.replace(path)
    print(f"figures written to {path}")
    return path
