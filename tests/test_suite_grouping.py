"""The test suite's own scheduling (pyproject's addopts): ``--dist loadgroup`` keeps each module marked
``xdist_group`` on one worker, so its module fixture (a whole flow run, for the slow ones) is built once.

pytest 9.2 with pytest-xdist 3.8 silently ignored every group (xdist renames the node id, pytest 9.2
no longer reads the name it renames): the fresh-clone suite then built one 2-minute fixture on two
workers. This runs a tiny suite of a grouped module and ungrouped tests under the same options, in a
child pytest, and counts how many processes built the grouped module's fixture.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

GROUPED = '''
import os
import pytest

pytestmark = pytest.mark.xdist_group("built-once")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    with open(os.environ["BUILT_LOG"], "a", encoding="ascii") as log:
        log.write(f"{os.getpid()}\\n")
    return True


@pytest.mark.parametrize("index", range(6))
def test_reads_the_fixture(built, index):
    assert built
'''

UNGROUPED = '''
import os
import time

import pytest


@pytest.mark.parametrize("index", range(24))
def test_elsewhere(index):
    time.sleep(0.02)
    with open(os.environ["WORKERS_LOG"], "a", encoding="ascii") as log:
        log.write(f"{os.getpid()}\\n")
'''


def test_a_grouped_modules_fixture_is_built_by_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(textwrap.dedent(GROUPED), encoding="utf-8")
    (tmp_path / "test_ungrouped.py").write_text(textwrap.dedent(UNGROUPED), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # not this project's addopts twice
    built, workers = tmp_path / "built.log", tmp_path / "workers.log"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "4", "--dist", "loadgroup",
         "--no-loadscope-reorder", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "BUILT_LOG": str(built), "WORKERS_LOG": str(workers)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(set(workers.read_text().split())) > 1  # the tests were spread over several workers...
    assert len(built.read_text().split()) == 1, built.read_text()  # ...and the grouped fixture built once
