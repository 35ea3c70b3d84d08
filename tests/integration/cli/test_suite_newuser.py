"""Issue 33 (new users of ``eval-quality suite``): a failed pre-flight, a suite no probe qualifies in, and a
suite copied under another folder name. Every command runs as a user runs it: a real ``eval-quality``
child process, on a copy of a corpus suite in a temporary folder outside the checkout."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalquality_core.suite.load import tree_digest

PROJECT_ROOT = Path(__file__).resolve().parents[3]
SUITES = PROJECT_ROOT / "corpus" / "suites"
EQ = [sys.executable, "-m", "evalquality_core"]


def eq(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``eval-quality <args>`` as a child process in ``cwd``."""
    return subprocess.run([*EQ, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_line(proc: subprocess.CompletedProcess[str], code: int, *names: str) -> str:
    """Exactly one stderr line, the exit code, no traceback, and every name in the line."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def copy_suite(name: str, where: Path, as_name: str | None = None) -> Path:
    """A copy of corpus suite ``name`` at ``where/<as_name or name>``."""
    target = where / (as_name or name)
    shutil.copytree(SUITES / name, target)
    return target


def _score_stored(suite: Path, probe_id: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``eval-quality score`` of a probe's stored trials against its stored pre-flight verdict."""
    trials = suite / "trials" / probe_id
    records = [arg for n in (1, 2, 3) for arg in ("--record", str(trials / f"trial-{n}" / "sealed-run-record.json"))]
    digest = eq("suite", "digest", str(suite), cwd=cwd).stdout.strip()
    return eq("score", *records, "--contract", str(suite / "contract.json"),
              "--probe", str(suite / "probes" / f"{probe_id}.json"),
              "--preflight-verdict", str(trials / "preflight-verdict.json"),
              "--policy", str(SUITES.parent / "scoring-policy.json"),
              "--isolation-manifest", str(trials / "trial-1" / "isolation-manifest.json"),
              "--evaluator-configuration", str(trials / "trial-1" / "evaluator-configuration.json"),
              "--corpus-digest", digest, "--out", str(cwd / "evidence.json"), cwd=cwd)


@pytest.mark.slow
def test_trials_exit_3_naming_the_failed_preflight_it_stored_and_scoring_it_is_invalid(tmp_path: Path) -> None:
    """A system whose ``list`` ignores ``--limit`` fails input-sensitivity for list-notes. ``suite trials``
    stores that failed verdict (replacing the passing one the copy held) with the trials beside it, and
    exits 3 with one line naming the verdict file and the failed check; scoring those trials against the
    stored verdict is Invalid, never a PASS."""
    suite = copy_suite("notes", tmp_path)
    system = suite / "system" / "notes.py"
    source = system.read_text()
    assert source.count('notes = notes[: int(options["limit"])]') == 1
    system.write_text(source.replace('notes = notes[: int(options["limit"])]', "pass  # ignores the limit"))

    proc = eq("suite", "trials", str(suite), "--probe", "P-001", cwd=tmp_path)
    line = one_line(proc, 3, "suite trials:", str(suite / "trials" / "P-001" / "preflight-verdict.json"),
                    "pre-flight failed:", "input-sensitivity (list-notes")
    assert line.startswith("eval-quality: ")
    assert proc.stdout == f"wrote {suite / 'trials' / 'P-001'}\n"
    verdict = json.loads((suite / "trials" / "P-001" / "preflight-verdict.json").read_text())
    assert verdict["passed"] is False
    assert sorted(p.name for p in (suite / "trials" / "P-001").iterdir()) == [
        "preflight-verdict.json", "trial-1", "trial-2", "trial-3"]

    score = _score_stored(suite, "P-001", tmp_path)
    one_line(score, 3, "invalid: pre-flight verdict did not pass")
    assert not (tmp_path / "evidence.json").exists()


@pytest.mark.slow
def test_trials_refuse_a_witness_that_also_holds_on_the_clean_system(tmp_path: Path) -> None:
    """P-001's witness asks to patch a note that does not exist: the seeded system (its store write
    deleted) leaves the store untouched, so the witness "fires", but so does the clean system (an unknown
    note is refused before anything is written). ``suite trials`` runs the witness's inputs on the clean
    system too, so the stored pre-flight fails ``seeded-faults-scoped`` naming that clean leg, and the
    command exits 3 (before, the stored verdict passed and the probe "caught" clean behaviour)."""
    suite = copy_suite("notes", tmp_path)
    probe_path = suite / "probes" / "P-001.json"
    probe = json.loads(probe_path.read_text(encoding="utf-8"))
    witness = probe["defects"][0]["manifestationWitness"]
    assert witness["legId"] == "silent-write-leg"
    witness["inputs"]["option"]["id"] = "n-404"
    probe_path.write_text(json.dumps(probe, indent=1), encoding="utf-8")

    proc = eq("suite", "trials", str(suite), "--probe", "P-001", cwd=tmp_path)
    one_line(proc, 3, "suite trials:", "pre-flight failed:", "seeded-faults-scoped (patch-note",
             'also holds on the clean system for its own inputs (clean leg "silent-write-leg-clean")')
    verdict = json.loads((suite / "trials" / "P-001" / "preflight-verdict.json").read_text())
    assert verdict["passed"] is False
    failed = [check for check in verdict["checks"] if check["outcome"] == "failed"]
    assert [check["kind"] for check in failed] == ["seeded-faults-scoped"]


@pytest.mark.slow
def test_generate_exits_3_when_qualification_refuses_every_probe_and_0_when_one_qualifies(tmp_path: Path) -> None:
    """trace keeps two refused probes (artifact-channel signatures) beside two that qualify: generate
    writes and exits 0, reporting the refusals. Without the two that qualify nothing is measured:
    the files are still written (the refused probes recorded refused), then one line naming the suite
    and counting the refusal codes, exit 3; ``--check`` on the up-to-date result says the same."""
    suite = copy_suite("trace", tmp_path, "my-trace")
    some = eq("suite", "generate", str(suite), cwd=tmp_path)
    assert some.returncode == 0 and "Traceback" not in some.stderr, some.stderr
    assert some.stderr == ""
    assert "P-001: qualification refuses it: condition-artifact-channel-contract-local" in some.stdout
    assert "P-003: qualification admits it" in some.stdout

    for probe_id in ("P-003", "P-004"):  # the two that qualify: P-003 (stdout signature), P-004 (clean control)
        (suite / "probes" / f"{probe_id}.json").unlink()
        shutil.rmtree(suite / "evidence" / probe_id)
    for mutation in (suite / "mutations").glob("*.json"):
        if json.loads(mutation.read_text())["probeId"] == "P-003":
            mutation.unlink()
    none = eq("suite", "generate", str(suite), cwd=tmp_path)
    line = one_line(none, 3, "suite generate:", str(suite), "no probe qualifies",
                    "refused all 2 probe(s)", "condition-artifact-channel-contract-local x2")
    assert "P-001: qualification refuses it" in none.stdout and "P-002: qualification refuses it" in none.stdout
    # Both refused probes give the same codes, so every code is counted twice.
    counted = line.rsplit("(", 1)[1].rstrip(")").split(", ")
    assert len(counted) > 1 and all(entry.endswith(" x2") for entry in counted), counted
    check = eq("suite", "generate", str(suite), "--check", cwd=tmp_path)
    assert "up to date" in check.stdout
    one_line(check, 3, "suite generate:", str(suite), "no probe qualifies")

    # No probe at all measures nothing either (the simplest reading of "no probe qualifies").
    for path in [*(suite / "probes").glob("*.json"), *(suite / "mutations").glob("*.json")]:
        path.unlink()
    empty = eq("suite", "generate", str(suite), cwd=tmp_path)
    one_line(empty, 3, "suite generate:", str(suite), "no probe qualifies", "it has no probe")


@pytest.mark.slow
def test_a_suite_copied_under_another_folder_name_is_not_stale(tmp_path: Path) -> None:
    """Nothing generated names the suite's folder: ``generate --check`` holds on a copy called something
    else, and its regenerated trials (pre-flight verdict and sealed records) are byte for byte the
    corpus's, so its corpus digest is the original's."""
    suite = copy_suite("notes", tmp_path, "someone-elses-notes")
    check = eq("suite", "generate", str(suite), "--check", cwd=tmp_path)
    assert check.returncode == 0 and "up to date" in check.stdout, (check.stdout, check.stderr)
    assert check.stderr == ""

    trials = eq("suite", "trials", str(suite), "--probe", "P-001", cwd=tmp_path)
    assert trials.returncode == 0 and trials.stderr == "", trials.stderr
    assert tree_digest(suite / "trials" / "P-001") == tree_digest(SUITES / "notes" / "trials" / "P-001")
    digest = eq("suite", "digest", str(suite), cwd=tmp_path)
    original = eq("suite", "digest", str(SUITES / "notes"), cwd=tmp_path)
    assert digest.returncode == 0 and digest.stdout == original.stdout
    # check's generated and trials steps hold too (the corpus-wide policy goes in, as a user's suite holds one).
    shutil.copy(SUITES.parent / "scoring-policy.json", suite / "scoring-policy.json")
    holds = eq("suite", "check", str(suite), cwd=tmp_path)
    assert holds.returncode == 0 and holds.stderr == "", holds.stderr
    assert "ok   generated:" in holds.stdout and "ok   trials:" in holds.stdout


@pytest.mark.slow
def test_the_corpus_aliases_exit_3_as_the_suite_commands_do(tmp_path: Path) -> None:
    """``python -m corpus.tools.evaluator`` and ``corpus.tools.generate`` (given a suite folder) run the same
    code as ``suite trials`` and ``suite generate``, so they exit 3 for a failed pre-flight and for a suite
    no probe qualifies in, one line each, never 0."""
    suite = copy_suite("notes", tmp_path)
    system = suite / "system" / "notes.py"
    system.write_text(system.read_text().replace('notes = notes[: int(options["limit"])]', "pass"))
    trials = subprocess.run([sys.executable, "-m", "corpus.tools.evaluator", "--regenerate", "--suite", str(suite),
                             "--trials", "1"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert trials.returncode == 3 and "Traceback" not in trials.stderr, trials.stderr
    lines = trials.stderr.splitlines()
    assert len(lines) == 6 and all(line.startswith("evaluator: ") and "pre-flight failed:" in line for line in lines)

    refused = copy_suite("trace", tmp_path)
    for probe_id in ("P-003", "P-004"):
        (refused / "probes" / f"{probe_id}.json").unlink()
    for mutation in (refused / "mutations").glob("*.json"):
        if json.loads(mutation.read_text())["probeId"] == "P-003":
            mutation.unlink()
    generate = subprocess.run([sys.executable, "-m", "corpus.tools.generate", "--suite", str(refused)],
                              cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert generate.returncode == 3 and "Traceback" not in generate.stderr, generate.stderr
    assert generate.stderr.splitlines() == [line for line in generate.stderr.splitlines()
                                            if line.startswith(f"generate: {refused}: no probe qualifies")]
    assert len(generate.stderr.splitlines()) == 1
