"""A suites folder of the user's own (``--suites DIR`` outside the checkout's corpus/suites) keeps its
baseline, outputs and state beside itself: ``--update-baseline`` without ``--baseline`` never writes the
checkout's ``corpus/expected-*.json`` (docs/how-to/preflight.md "Your own suites folder"). Real flow
processes, no ``EVALQUALITY_HOME`` (the default is what is under test), a fresh ``PREFECT_HOME``; and
with no ``PREFECT_HOME`` either, Prefect's own database follows the suites folder too
(flows/entry_point.py, read at import)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.prefect_db import DATABASE, seed_prefect_home

# Where a run's own Prefect database lives is the subject: no worker server (tests/integration/conftest.py).
pytestmark = pytest.mark.own_prefect_server

PROJECT_ROOT = Path(__file__).resolve().parents[3]
CORPUS = PROJECT_ROOT / "corpus"


def _flow(module: str, args: list[str], prefect_home: Path | None, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` with no ``PREFECT_*``/``EVALQUALITY_*`` of this test process; ``PREFECT_HOME``
    only when ``prefect_home`` is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    env.pop("XDG_CACHE_HOME", None)  # ~/.cache is then under the HOME a test gives
    if prefect_home is not None:
        env["PREFECT_HOME"] = str(prefect_home)
    env.update({"PREFECT_LOGGING_LEVEL": "WARNING",
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


CHECKOUT_PREFECT = PROJECT_ROOT / ".evalquality" / "prefect"


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its mtime and size ({} when the folder is absent)."""
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in sorted(folder.rglob("*")) if p.is_file()} if folder.is_dir() else {}


def _flow_runs(prefect_home: Path) -> list[str]:
    """The names of the flows whose runs the Prefect database in ``prefect_home`` records."""
    with sqlite3.connect(f"file:{prefect_home / DATABASE}?mode=ro", uri=True) as db:
        return [name for (name,) in db.execute("SELECT flow.name FROM flow_run JOIN flow ON flow.id = flow_run.flow_id")]


@pytest.mark.slow
def test_prefect_database_follows_a_foreign_suites_folder_unless_prefect_home_is_given(
    mine: dict[str, Path], migrated_prefect_db: Path, tmp_path: Path,
) -> None:
    suites, work = mine["suites"], mine["work"]
    beside = work / ".evalquality" / "prefect"
    # A machine that has run Prefect before: a migrated database (no minute of migrations); the runs it
    # records below show which database the flow's embedded server (a child process) wrote.
    seed_prefect_home(beside, migrated_prefect_db)
    runs_before = _flow_runs(beside).count("preflight")
    home = tmp_path / "home"  # HOME, so ~/.cache and ~/.prefect would be in tmp too
    home.mkdir()
    checkout_before = _listing(CHECKOUT_PREFECT)
    done = _flow("flows.preflight", ["--suites", str(suites), "--update-baseline"], None, cwd=tmp_path, HOME=str(home))
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert _flow_runs(beside).count("preflight") == runs_before + 1, "the run is not in <suites>/../.evalquality/prefect"
    assert _listing(CHECKOUT_PREFECT) == checkout_before, "the checkout's .evalquality/prefect changed"
    assert sorted(p.name for p in home.iterdir()) == [], "the run wrote under HOME"
    # PREFECT_HOME given: that database records the run, the one beside the suites does not.
    chosen = mine["prefect"]
    chosen_before = _flow_runs(chosen).count("preflight")
    again = _flow("flows.preflight", [f"--suites={suites}", "--from-cache"], chosen, cwd=tmp_path, HOME=str(home))
    assert again.returncode == 0, (again.stdout[-2000:], again.stderr[-2000:])
    assert _flow_runs(chosen).count("preflight") == chosen_before + 1
    assert _flow_runs(beside).count("preflight") == runs_before + 1
    assert _listing(CHECKOUT_PREFECT) == checkout_before


def _prefect_home_of(module: str, args: list[str], cwd: Path, **extra: str) -> None:
    """Start ``python -m module args --help``: the flow modules' import runs, argparse prints and exits 0."""
    done = _flow(module, [*args, "--help"], None, cwd=cwd, **extra)
    assert done.returncode == 0, done.stderr[-2000:]


def test_only_a_flow_entry_point_with_an_existing_suites_folder_moves_prefect_home(tmp_path: Path) -> None:
    """The import-time rule (flows/entry_point.py) in real processes, without running a flow: an entry
    module's ``--suites DIR`` and ``--suites=DIR`` move Prefect's home (its logging file is written there
    at import); a chosen ``EVALQUALITY_HOME`` wins; a missing folder and a non-entry process do not."""
    suites = tmp_path / "work" / "suites"
    suites.mkdir(parents=True)
    beside = tmp_path / "work" / ".evalquality" / "prefect"
    _prefect_home_of("flows.preflight", [f"--suites={suites}"], tmp_path, HOME=str(tmp_path))
    assert (beside / "evalquality-logging.yml").is_file()
    shutil.rmtree(beside)
    _prefect_home_of("flows.mutants", ["--suites", "work/suites"], tmp_path, HOME=str(tmp_path))  # relative to cwd
    assert (beside / "evalquality-logging.yml").is_file()
    shutil.rmtree(tmp_path / "work" / ".evalquality")
    chosen = tmp_path / "chosen"
    _prefect_home_of("flows.contract_strength", ["--suites", str(suites)], tmp_path, HOME=str(tmp_path),
                     EVALQUALITY_HOME=str(chosen))
    assert (chosen / "prefect" / "evalquality-logging.yml").is_file()
    assert not (tmp_path / "work" / ".evalquality").exists()
    # Not an entry point (a library import): the home stays the checkout's default, whatever the arguments
    # say. (PREFECT_HOME in tmp, so that this process writes nothing into the checkout.)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    shown = subprocess.run([sys.executable, "-c", "import flows, os; print(os.environ['EVALQUALITY_HOME'])",
                            "--suites", str(suites)], cwd=tmp_path,
                           env={**env, "HOME": str(tmp_path), "PREFECT_HOME": str(tmp_path / "p")},
                           capture_output=True, text=True, timeout=120, check=True)
    assert shown.stdout.strip() == str(PROJECT_ROOT / ".evalquality")
    assert not (tmp_path / "work" / ".evalquality").exists()


def test_a_suites_folder_that_does_not_exist_is_not_followed_at_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In process (a child's default would write into the checkout): the rule applied to a script entry's
    command line moves the home beside an existing folder, and leaves it unset for a mistyped one, which
    the flow then refuses in one line (exit 64) without a directory created beside it."""
    from flows.settings import follow_entry_point_suites

    (tmp_path / "work" / "suites").mkdir(parents=True)
    for name in ("EVALQUALITY_HOME", "EVALQUALITY_SUITES"):  # restored after the test, set or not
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    script = str(PROJECT_ROOT / "flows" / "preflight.py")
    monkeypatch.setattr(sys, "argv", [script, "--suites", str(tmp_path / "work" / "typo")])
    follow_entry_point_suites()
    assert "EVALQUALITY_HOME" not in os.environ and "EVALQUALITY_SUITES" not in os.environ
    monkeypatch.setattr(sys, "argv", [script, "--suites", str(tmp_path / "work" / "suites")])
    follow_entry_point_suites()
    assert os.environ["EVALQUALITY_HOME"] == str(tmp_path / "work" / ".evalquality")


@pytest.mark.parametrize(("argv", "orig_argv", "module"), [
    (["-m", "--suites", "s"], ["py", "-m", "flows.preflight", "--suites", "s"], "flows.preflight"),
    (["-m", "--suites", "s"], ["py", "-W", "ignore", "-Im", "flows.mutants", "--suites", "s"], "flows.mutants"),
    (["-m", "x"], ["py", "-mflows.contract_strength", "x"], "flows.contract_strength"),
    ([str(PROJECT_ROOT / "flows" / "preflight.py"), "--suites", "s"], ["py", "flows/preflight.py"], "flows.preflight"),
    (["-c", "--suites", "s"], ["py", "-c", "import flows", "--suites", "s"], None),
    (["/elsewhere/flows/preflight.py"], ["py", "/elsewhere/flows/preflight.py"], None),
    ([], [], None),
])
def test_the_entry_module_is_read_from_the_command_line(argv: list[str], orig_argv: list[str], module: str | None) -> None:
    from flows.entry_point import entry_module

    assert entry_module(argv, orig_argv, PROJECT_ROOT) == module


@pytest.mark.parametrize(("arguments", "suites"), [
    (["--suites", "a"], "a"), (["--suites=a"], "a"), (["--suites", "a", "--suites=b"], "b"),
    (["--suites"], None), (["--suites", "--force"], None), (["--suites="], None), (["--", "--suites", "a"], None),
    (["--suite", "a"], None), (["--suites-x", "a"], None),
])
def test_the_suites_flag_is_read_as_argparse_reads_it(arguments: list[str], suites: str | None) -> None:
    from flows.entry_point import suites_argument

    assert suites_argument(arguments) == suites


@pytest.mark.slow
def test_dask_workers_of_a_foreign_suites_run_keep_to_its_prefect_home(
    mine: dict[str, Path], migrated_prefect_db: Path, tmp_path: Path,
) -> None:
    """``flows.contract_strength --task-runner dask``: the run is recorded beside the suites folder, and its
    Dask worker processes (which import ``flows`` themselves) inherit that home: nothing appears in the
    checkout's ``.evalquality/prefect`` nor under HOME."""
    beside = seed_prefect_home(mine["work"] / ".evalquality" / "prefect", migrated_prefect_db)
    runs_before = _flow_runs(beside).count("contract-strength")
    home = tmp_path / "home"
    home.mkdir()
    checkout_before = _listing(CHECKOUT_PREFECT)
    done = _flow("flows.contract_strength", ["--suites", str(mine["suites"]), "--task-runner", "dask",
                                             "--update-baseline"], None, cwd=tmp_path, HOME=str(home))
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    # (That --task-runner dask runs on DaskTaskRunner: tests/integration/flows/test_contract_strength.py.)
    assert (mine["work"] / ".evalquality" / "contract-strength" / "my-notes" / "contract-strength.json").is_file()
    assert _flow_runs(beside).count("contract-strength") == runs_before + 1
    assert _listing(CHECKOUT_PREFECT) == checkout_before, "the checkout's .evalquality/prefect changed"
    assert sorted(p.name for p in home.iterdir()) == [], "a process of the run wrote under HOME"


@pytest.mark.slow
def test_mutants_on_a_foreign_suites_folder_keep_state_and_prefect_beside_it(
    mine: dict[str, Path], migrated_prefect_db: Path, tmp_path: Path,
) -> None:
    """``flows.mutants --suites DIR`` follows the suites folder like the other flows: leg cache, workspaces,
    default ``--out`` and Prefect's database under ``DIR/../.evalquality``."""
    state = mine["work"] / ".evalquality"
    beside = seed_prefect_home(state / "prefect", migrated_prefect_db)
    runs_before = _flow_runs(beside).count("mutants")
    home = tmp_path / "home"
    home.mkdir()
    checkout_before = _listing(CHECKOUT_PREFECT)
    done = _flow("flows.mutants", ["--suites", str(mine["suites"]), "--sample", "1", "--no-coverage"], None,
                 cwd=tmp_path, HOME=str(home))
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert (state / "mutants" / "my-notes").is_dir() and (state / "leg-cache").is_dir()
    assert _flow_runs(beside).count("mutants") == runs_before + 1
    assert _listing(CHECKOUT_PREFECT) == checkout_before, "the checkout's .evalquality/prefect changed"
    assert sorted(p.name for p in home.iterdir()) == [], "the run wrote under HOME"
