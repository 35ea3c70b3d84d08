"""A suites folder of the user's own (``--suites DIR`` outside the checkout's corpus/suites) keeps its
baseline, outputs and state beside itself: ``--update-baseline`` without ``--baseline`` never writes the
checkout's ``corpus/expected-*.json`` (README "Flows on your own suites folder"). Real flow processes,
no ``EVALQUALITY_HOME`` (the default is what is under test), a fresh ``PREFECT_HOME``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.prefect_db import seed_prefect_home

PROJECT_ROOT = Path(__file__).resolve().parents[3]
CORPUS = PROJECT_ROOT / "corpus"


def _flow(module: str, args: list[str], prefect_home: Path, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    env.update({"PREFECT_HOME": str(prefect_home), "PREFECT_LOGGING_LEVEL": "WARNING",
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
                "EVALQUALITY_PROGRESS_SECONDS": "0", "EVALQUALITY_CONCURRENCY": "2", **extra})
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


@pytest.fixture
def mine(tmp_path: Path, migrated_prefect_db: Path) -> dict[str, Path]:
    """``<tmp>/work/suites/my-notes``: a copy of the corpus's notes suite, with a seeded Prefect home."""
    suites = tmp_path / "work" / "suites"
    shutil.copytree(CORPUS / "suites" / "notes", suites / "my-notes")
    shutil.copyfile(CORPUS / "scoring-policy.json", tmp_path / "work" / "scoring-policy.json")  # corpus-wide policy
    prefect = seed_prefect_home(tmp_path / "prefect", migrated_prefect_db)
    return {"suites": suites, "prefect": prefect, "work": tmp_path / "work"}


@pytest.mark.slow
def test_update_baseline_on_a_foreign_suites_folder_writes_beside_it_never_into_the_checkout(
    mine: dict[str, Path], tmp_path: Path,
) -> None:
    corpus_before = {name: (CORPUS / name).read_bytes() for name in ("expected-preflight.json", "expected-strength.json")}
    suites, work = mine["suites"], mine["work"]
    for module in ("flows.preflight", "flows.contract_strength"):
        done = _flow(module, ["--suites", str(suites), "--update-baseline"], mine["prefect"], cwd=tmp_path)
        assert done.returncode == 0, (module, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr
    for name, before in corpus_before.items():
        assert (CORPUS / name).read_bytes() == before, f"corpus/{name} was rewritten"
    # The baselines landed beside the suites folder, recording this suite (and only it).
    for name in ("expected-preflight.json", "expected-strength.json"):
        document = json.loads((work / name).read_text())
        suites_recorded = {key.split("/")[0] for key in document.get("probes", document)}
        assert suites_recorded == {"my-notes"}, (name, suites_recorded)
    # Outputs and state: <suites>/../.evalquality.
    home = work / ".evalquality"
    assert sorted(p.name for p in (home / "preflight" / "my-notes").glob("*.json"))
    assert (home / "contract-strength" / "my-notes").is_dir()
    assert (home / "leg-cache").is_dir()
    # A second run gates on the baseline it wrote (matched, exit 0) without --baseline.
    again = _flow("flows.preflight", ["--suites", str(suites), "--from-cache"], mine["prefect"], cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    # A chosen EVALQUALITY_HOME and explicit --out and --baseline still win over "beside the suites".
    chosen, out, baseline = tmp_path / "chosen-home", tmp_path / "out", tmp_path / "base.json"
    done = _flow("flows.preflight", ["--suites", str(suites), "--out", str(out), "--baseline", str(baseline),
                                     "--update-baseline"], mine["prefect"], cwd=tmp_path, EVALQUALITY_HOME=str(chosen))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "my-notes").is_dir() and set(json.loads(baseline.read_text())["probes"]) == set(
        json.loads((work / "expected-preflight.json").read_text())["probes"])
    assert (chosen / "leg-cache").is_dir()
