"""Pruning the dependency layer store (``eval-quality layers prune``, evalquality_core/suite/layers.py).

Every leg here is a real child process that stages from the store and runs a real target reading the
layer through its link; every prune is the real CLI. A layer a running leg holds is never removed, an
unused old one is, and a prune killed mid-removal leaves nothing a later run reads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.corpus.test_layers import ORIGINAL, layered_suite

DAY = 86400.0

#: One leg in its own process: stage with the layer linked from the store, run a real target that reads
#: the layer, waits for a gate file, reads it again; print what it read both times and check_layers.
LEG = """
import subprocess, sys
from pathlib import Path
from evalquality_core.suite.layers import LayerStore
from evalquality_core.suite.staging import check_layers, stage_workspace
suite, workspace, store, gate = sys.argv[1:5]
staged = stage_workspace(suite, Path(workspace), layers=LayerStore(Path(store)))
print("staged", flush=True)
target = (
    "import os, sys, time\\n"
    "first = open('../system/node_modules/dep/index.js').read()\\n"
    "while not os.path.exists(sys.argv[1]): time.sleep(0.02)\\n"
    "print(repr(first == open('../system/node_modules/dep/index.js').read()))"
)
done = subprocess.run([sys.executable, "-c", target, gate], cwd=staged.work_dir, capture_output=True, text=True, timeout=120)
print(done.stdout.strip() or done.stderr.strip().splitlines()[-1], check_layers(staged), flush=True)
"""


def start_leg(tmp_path: Path, suite: Path, store: Path, name: str, gate: Path) -> subprocess.Popen[str]:
    script = tmp_path / "leg.py"
    script.write_text(LEG)
    return subprocess.Popen([sys.executable, str(script), str(suite), str(tmp_path / name), str(store), str(gate)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_leg(tmp_path: Path, suite: Path, store: Path, name: str) -> str:
    gate = tmp_path / f"{name}.gate"
    gate.write_text("go")
    leg = start_leg(tmp_path, suite, store, name, gate)
    out, err = leg.communicate(timeout=180)
    assert leg.returncode == 0, err
    return out


def prune(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["eval-quality", "layers", "prune", "--store", str(store), *args],
                          capture_output=True, text=True, timeout=120)


def age(store: Path, days: float) -> None:
    """Make every digest folder's last use ``days`` old (as if no run had staged from it since)."""
    when = time.time() - days * DAY
    for folder in store.iterdir():
        os.utime(folder / ".lock", (when, when))


def test_prune_removes_layers_unused_for_longer_than_the_cut_off_and_keeps_recent_ones(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    other = layered_suite(tmp_path / "other")
    (other / "system" / "node_modules" / "dep" / "index.js").write_text("module.exports = 'other';\n")
    store = tmp_path / "home" / "layers"
    assert "True []" in run_leg(tmp_path, suite, store, "old")
    age(store, 40)
    assert "True []" in run_leg(tmp_path, other, store, "new")
    assert len(list(store.iterdir())) == 2
    done = prune(store, "--older-than", "30")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{store}: removed 1 layer(s) unused for 30 day(s)")
    assert "kept 0 in use and 1 used more recently" in done.stdout
    assert len(list(store.iterdir())) == 1
    # The store is a cache: the removed layer is stored again by the next leg that needs it.
    assert "True []" in run_leg(tmp_path, suite, store, "again")
    assert len(list(store.iterdir())) == 2


def test_a_layer_a_running_leg_uses_is_never_pruned(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    store = tmp_path / "home" / "layers"
    gate = tmp_path / "gate"
    leg = start_leg(tmp_path, suite, store, "running", gate)
    try:
        assert leg.stdout is not None and leg.stdout.readline().strip() == "staged"
        age(store, 400)  # its last use looks a year old: only the leg's lock keeps it
        during = prune(store, "--older-than", "0")
        assert during.returncode == 0, during.stderr
        assert "removed 0 layer(s)" in during.stdout and "kept 1 in use" in during.stdout
        gate.write_text("go")
        out, err = leg.communicate(timeout=120)
    finally:
        if leg.poll() is None:
            leg.kill()
            leg.wait()
    # The leg read the same layer before and after the prune, and its layer is intact.
    assert leg.returncode == 0, err
    assert out.strip().splitlines()[-1] == "True []"
    after = prune(store, "--older-than", "0")  # the leg has ended: now nothing holds it
    assert "removed 1 layer(s)" in after.stdout and list(store.iterdir()) == []


def test_a_prune_killed_mid_removal_leaves_nothing_a_later_run_reads(tmp_path: Path) -> None:
    suite = layered_suite(tmp_path / "suites")
    many = suite / "system" / "node_modules" / "many"
    for index in range(60):  # enough files that the removal takes a while
        folder = many / f"d{index}"
        folder.mkdir(parents=True)
        for number in range(250):
            (folder / f"f{number}.js").write_text(f"// {index}/{number}\n")
    store = tmp_path / "home" / "layers"
    assert "True []" in run_leg(tmp_path, suite, store, "first")
    age(store, 40)
    pruning = subprocess.Popen(["eval-quality", "layers", "prune", "--store", str(store), "--older-than", "30"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not any(path.name.startswith(".pruning-") for path in store.iterdir()):
            assert pruning.poll() is None and time.monotonic() < deadline, "the prune ended before it could be killed"
            time.sleep(0.001)
        pruning.send_signal(signal.SIGKILL)
    finally:
        pruning.kill()
        pruning.communicate()
    [leftover] = [path for path in store.iterdir() if path.name.startswith(".pruning-")]
    # Under its digest the half-removed layer is gone, so the next leg stores and verifies a whole one...
    assert "True []" in run_leg(tmp_path, suite, store, "after")
    [digest] = [path for path in store.iterdir() if not path.name.startswith(".pruning-")]
    [generation] = list(digest.glob("gen-*"))
    assert (generation / "node_modules" / "dep" / "index.js").read_text() == ORIGINAL
    assert len(list((generation / "node_modules" / "many").rglob("*.js"))) == 60 * 250
    # ...and the next prune clears what the killed one left.
    done = prune(store, "--older-than", "30")
    assert "cleared 1 leftover(s) of an interrupted prune" in done.stdout and not leftover.exists()
