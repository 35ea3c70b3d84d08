"""Per-leg line coverage of a suite's clean system: which source lines each leg and the plan reach.

Recorded by running every leg (and the interaction plan) once against the clean system through the
suite's own adapters, with the registry's ``{python}`` filled by a small tracing wrapper instead of
the interpreter: the wrapper starts the system's script under ``sys.settrace`` (and
``threading.settrace``) and appends each newly reached ``system/<file>:<line>`` to a file outside the
workspace, flushed line by line. Flushed as it goes because a service or tool server is ended by a
group kill, and a recorder that writes at exit (coverage.py's data file) would lose a killed server's
lines. Tracing costs time, so coverage runs are never used as observations: classification compares
only untraced runs.

Only systems run through ``{python}`` can be traced; a registry without that placeholder has no
coverage (``None``), and then every mutant runs every leg.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalquality_core.adapters.leg_calls import probe_leg
from evalquality_core.suite.evaluator import run_plan
from evalquality_core.suite.load import SuiteFiles, adapter_for
from evalquality_core.suite.staging import default_store, layers_intact, stage_workspace

_WRAPPER = '''#!{python}
# eval-quality line-coverage wrapper (evalquality_core/suite/line_coverage.py): runs the system's
# script under a tracer and appends every newly reached system/<file>\\t<line> to {out!r}.
import os, runpy, sys, threading
_script = os.path.realpath(sys.argv[1])
_system = os.path.dirname(_script)
while os.path.basename(_system) != "system" and os.path.dirname(_system) != _system:
    _system = os.path.dirname(_system)
_prefix = _system + os.sep
_seen = set()
_out = open({out!r}, "a", encoding="utf-8")

def _line(frame, event, arg):
    if event == "line":
        key = (frame.f_code.co_filename, frame.f_lineno)
        if key not in _seen:
            _seen.add(key)
            _out.write("system/" + os.path.relpath(key[0], _system).replace(os.sep, "/") + "\\t" + str(key[1]) + "\\n")
            _out.flush()
    return _line

def _call(frame, event, arg):
    return _line if frame.f_code.co_filename.startswith(_prefix) else None

sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(_script)
threading.settrace(_call)
sys.settrace(_call)
runpy.run_path(_script, run_name="__main__")
'''

#: A traced run gets this many times its target's ``max_elapsed_ms``. Tracing slows a system several
#: times over, and a traced run that runs out of budget is recorded as reaching every line: its mutants
#: then run every leg, and on a loaded machine the same suite's coverage (so its outcome keys) would
#: differ from run to run. What a coverage run answers is never an observation, so its budget is ours.
COVERAGE_BUDGET_SCALE = 4

#: Lines reached: ``system/<file>`` → sorted line numbers.
Lines = dict[str, list[int]]


def traceable(targets_text: str) -> bool:
    """Whether the registry runs its system through ``{python}`` (then it can be traced)."""
    return "{python}" in targets_text


def write_wrapper(directory: Path, out: Path) -> Path:
    """An executable tracing wrapper in ``directory`` that appends reached lines to ``out``."""
    path = directory / f"trace-{out.stem}.py"
    path.write_text(_WRAPPER.format(python=sys.executable, out=str(out)), encoding="utf-8")
    path.chmod(0o755)
    return path


def read_lines(out: Path) -> Lines:
    """The lines a wrapper recorded (an absent file: none reached)."""
    found: dict[str, set[int]] = {}
    if out.is_file():
        for row in out.read_text(encoding="utf-8").splitlines():
            name, _, line = row.partition("\t")
            if line.isdigit():
                found.setdefault(name, set()).add(int(line))
    return {name: sorted(lines) for name, lines in sorted(found.items())}


def record_coverage(
    suite: SuiteFiles,
    legs: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    jobs: int = 4,
    on_leg: Callable[[str], None] | None = None,
) -> dict[str, Lines] | None:
    """Per run id (each leg id, and ``plan``) the lines of the clean system it reaches; None when the
    system cannot be traced. A leg that faults under tracing reaches, as far as we know, every line
    (it is recorded as ``None`` → the caller runs it for every mutant)."""
    if not traceable(suite.targets_text):
        return None
    from concurrent.futures import ThreadPoolExecutor

    scratch = Path(tempfile.mkdtemp(prefix="eq-coverage-"))
    try:
        def one(run_id: str, request: Mapping[str, Any] | None) -> tuple[str, Lines | None]:
            out = scratch / f"{len(os.listdir(scratch))}-{abs(hash(run_id))}.lines"
            wrapper = write_wrapper(scratch, out)
            adapter = adapter_for(suite, {"python": str(wrapper)}, budget_scale=COVERAGE_BUDGET_SCALE)
            workspace_dir = Path(tempfile.mkdtemp(prefix="eq-coverage-ws-", dir=scratch))
            try:
                staged = stage_workspace(suite.root, workspace_dir / "ws", layers=default_store())
                if request is None:
                    run_plan(suite, staged.root, adapter)
                else:
                    probe_leg(adapter, dict(request), workdir=staged.root)  # a multi-call leg: all its calls
                layers_intact(staged)  # a changed layer: this leg's trace is not trusted
            except Exception:  # noqa: BLE001 — a leg that cannot run traced is run for every mutant
                return run_id, None
            finally:
                shutil.rmtree(workspace_dir, ignore_errors=True)
            if on_leg is not None:
                on_leg(run_id)
            return run_id, read_lines(out)

        runs: list[tuple[str, Mapping[str, Any] | None]] = [*legs, ("plan", None)]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(lambda item: one(*item), runs))
        return {run_id: lines for run_id, lines in results}  # type: ignore[misc]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def reaches(lines: Lines | None, target: str, mutated: range) -> bool:
    """Whether a run with ``lines`` reaches any of the ``mutated`` lines of ``target`` (unknown: yes)."""
    if lines is None:
        return True
    reached = set(lines.get(target, ()))
    return any(line in reached for line in mutated)
