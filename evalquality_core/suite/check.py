"""``eval-quality suite check DIR``: every authoring step's check, in the order a suite is built.

Each step either holds (a one-line detail) or is the first problem, named with the fix (docs/tutorials/first-suite.md, "Bring
your own system"). The steps, in order:

1. ``folder``     — the files and folders a suite holds are there;
2. ``staging``    — ``suite.toml`` reads and a clean workspace stages (``system/`` beside ``work/``);
3. ``mutations``  — each mutation names a probe of the suite, and applies exactly once when staged;
4. ``contract``   — the contract compiles and seals;
5. ``registry``   — ``targets.toml`` and the contract cross-check both ways;
6. ``evaluator``  — ``evaluator.json`` chooses a value for every value the plan leaves open;
7. ``probes``     — every probe reads as a Probe once its derived fields are filled, names a behaviour
                    with exactly one oracle, and (once generated) passes the qualification gate (AD-9);
8. ``generated``  — evidence and the probes' derived fields are what the generator writes now;
9. ``trials``     — every probe has a passed pre-flight and at least the policy's minimum of trials,
                    sealed against the current contract.

Steps 8 and 9 run the system (a few child processes per probe); nothing is written.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evalquality_core.canonical import digest_artifact
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.suite.load import (
    POLICY_FILE,
    TOOL_PROBLEMS,
    SuiteError,
    is_suite,
    load_mutations,
    load_suite,
    problem_line,
    read_suite_json,
    read_suite_settings,
    suite_file_or_fallback,
)

#: Files and folders every suite holds before anything is generated.
REQUIRED_MEMBERS: tuple[str, ...] = (
    "contract.json", "suite.toml", "targets.toml", "evaluator.json", "system", "fixtures", "probes",
)


@dataclass(frozen=True)
class Step:
    """One check's answer: the step, whether it held, what it found, and (on a problem) the fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        """``ok   <step>: <detail>`` or ``<step>: <problem>; fix: <fix>``."""
        if self.ok:
            return f"ok   {self.name}: {self.detail}"
        return f"{self.name}: {self.detail}" + (f"; fix: {self.fix}" if self.fix else "")


class _Problem(Exception):
    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail)
        self.detail, self.fix = detail, fix


def _folder(root: Path) -> str:
    # ``system-from`` (suite.toml) stages a sibling suite's system/ instead of one of its own.
    try:
        borrowed = (root / "suite.toml").is_file() and "system-from" in read_suite_settings(root)
    except SuiteError:
        borrowed = False  # the staging step names what is wrong with suite.toml
    missing = [name for name in REQUIRED_MEMBERS if not (root / name).exists() and not (borrowed and name == "system")]
    if missing:
        raise _Problem(f"{root} lacks {', '.join(missing)}", "start from `eval-quality suite init DIR`, which writes every one")
    held = [f"system (from {read_suite_settings(root)['system-from']})" if borrowed and name == "system" else name
            for name in REQUIRED_MEMBERS]
    return f"{root} holds {', '.join(held)}"


def _staging(root: Path) -> str:
    from evalquality_core.suite.staging import default_store, stage_workspace

    settings = read_suite_settings(root)
    with tempfile.TemporaryDirectory(prefix="eq-check-") as scratch:
        staged = stage_workspace(root, Path(scratch) / "ws", layers=default_store())  # layers linked, not copied
        count = sum(1 for p in staged.work_dir.rglob("*") if p.is_file())
    return f"system {settings['system-id']} and {len(settings['fixtures'])} fixture set(s) stage ({count} file(s) in work/)"


def _mutations(root: Path) -> str:
    from evalquality_core.suite.staging import default_store, stage_workspace

    mutations = load_mutations(root)
    probes = {path.stem for path in (root / "probes").glob("P-*.json")}
    for mutation in mutations.values():
        if mutation.probe_id not in probes:
            raise _Problem(f"{mutation.source_path}: names probe {mutation.probe_id}, which has no probes/{mutation.probe_id}.json",
                           "name an existing probe in probeId, or add the probe")
        with tempfile.TemporaryDirectory(prefix="eq-check-") as scratch:
            stage_workspace(root, Path(scratch) / "ws", mutation, layers=default_store())
    return f"{len(mutations)} mutation(s), each applies exactly once"


def _contract(root: Path) -> str:
    from evalquality_core.compile.pipeline import compile_contract
    from evalquality_core.seal.seal import seal

    contract = read_suite_json(root / "contract.json")
    try:
        seal(compile_contract(contract))
    except (StructuralFailure, RuntimeFault) as fault:
        raise _Problem(f"contract.json: {problem_line(fault)}",
                       "correct the named field (`eval-quality compile --in contract.json` shows the same failure)") from None
    return f"{contract.get('contractId')} compiles and seals"


def _registry(root: Path) -> str:
    from evalquality_core.probe.targets import (
        cross_check_api_targets,
        cross_check_mcp_targets,
        cross_check_targets,
        parse_targets,
    )

    text = (root / "targets.toml").read_text(encoding="utf-8")
    registry = parse_targets(text, str(root / "targets.toml"))
    contracts = [read_suite_json(root / "contract.json")]
    for coverage, fix in (
        (cross_check_targets(registry, contracts), "register every executable and subcommand path the contract names, and nothing else"),
        (cross_check_api_targets(registry, contracts), "register every api interface and method the contract calls, and nothing else"),
        (cross_check_mcp_targets(registry, contracts), "register every tool server and tool the contract calls, and nothing else"),
    ):
        if not coverage.ok:
            raise _Problem(f"{root / 'targets.toml'}: {coverage.problems()[0]}", fix)
    registry.to_policy({"python": sys.executable})
    registry.to_mcp_policy({"python": sys.executable})
    count = len(registry.entries) + len(registry.api_entries) + len(registry.mcp_entries)
    return f"{count} target(s) register exactly what the contract names"


def _evaluator(root: Path) -> str:
    from evalquality_core.suite.evaluator import requests_for_plan

    suite = load_suite(root, probes=False)
    requests = requests_for_plan(suite)
    return f"every one of {len(requests)} plan step(s) has its values"


def _probes(root: Path) -> str:
    from evalquality_core.score.qualification import qualify_probe
    from evalquality_core.score.witness import resolve_home_operation
    from evalquality_core.suite.generate import (
        GenerationError,
        check_authored_probe,
        designated_oracle,
        with_derived_placeholders,
    )

    suite = load_suite(root, probes=False)
    paths = sorted((root / "probes").glob("P-*.json"))
    if not paths:
        raise _Problem("probes/ holds no P-*.json", "write one probe per file, probes/P-001.json, …")
    pending = []
    for path in paths:
        raw = read_suite_json(path)
        probe = with_derived_placeholders(raw)
        try:
            check_authored_probe(probe, path)
            designated_oracle(suite.contract, probe)
        except GenerationError as problem:
            raise _Problem(str(problem), "write the named field(s); derived fields are the generator's") from None
        if raw != probe:
            pending.append(path.stem)
            continue
        signature = probe.get("defectSignature")
        home = None if not signature else resolve_home_operation(suite.contract, signature)
        gate = qualify_probe(probe, home)
        if not gate.qualified:
            codes = ", ".join(sorted({failure.code for failure in gate.failures}))
            raise _Problem(f"{path.name}: the qualification gate refuses it ({codes})",
                           "sign the defect on a response-side channel (stdout, stderr or the exit code), not an "
                           "artifact (docs/reference/suite-format.md, item 7); a refused probe scores Invalid (exit 3)")
    if pending:
        raise _Problem(f"{', '.join(pending)} lack derived fields", "run `eval-quality suite generate DIR`")
    return f"{len(paths)} probe(s) read, each with one designated oracle, and qualify"


def _generated(root: Path) -> str:
    from evalquality_core.suite.generate import Output, generate_suite, stale_files

    out = Output()
    generate_suite(root, out, jobs=4)
    stale = stale_files(out)
    if stale:
        raise _Problem(f"{len(stale)} generated file(s) stale or missing, first {stale[0]}", "run `eval-quality suite generate DIR`")
    return f"{len(out.files)} evidence and probe file(s) up to date"


def _trials(root: Path) -> str:
    from evalquality_core.suite.evaluator import seal_brief_digest

    suite = load_suite(root)
    contract_digest = digest_artifact(suite.contract)
    brief_digest = seal_brief_digest(suite.contract)
    # The corpus-wide fallback sits beside the folder holding the suite (corpus/scoring-policy.json for
    # corpus/suites/notes), as the flows look for it.
    policy_path = suite_file_or_fallback(root, POLICY_FILE, root.resolve().parent.parent)
    if policy_path is None:
        raise _Problem(f"no {POLICY_FILE} in {root} or beside its suites folder",
                       f"put the suite's scoring policy at {root / POLICY_FILE} (`suite init` writes one)")
    minimum = read_suite_json(policy_path)["minimumTrialCount"]
    for probe_id in sorted(suite.probes):
        base = root / "trials" / probe_id
        fix = f"run `eval-quality suite trials DIR` (or `--probe {probe_id}`)"
        verdict = base / "preflight-verdict.json"
        if not verdict.is_file():
            raise _Problem(f"{probe_id} has no trials/{probe_id}/preflight-verdict.json", fix)
        if read_suite_json(verdict).get("passed") is not True:
            raise _Problem(f"{probe_id}'s stored pre-flight did not pass", "see `python -m flows.preflight --suites DIR` for the failed checks")
        records = sorted(base.glob("trial-*/sealed-run-record.json"))
        if len(records) < minimum:
            raise _Problem(f"{probe_id} has {len(records)} trial(s), the policy's minimum is {minimum}", fix)
        for path in records:
            record = read_suite_json(path)
            if record.get("contractDigest") != contract_digest or record.get("sealedBriefDigest") != brief_digest:
                raise _Problem(f"{path.relative_to(root)} was sealed against another contract", fix)
    return f"{len(suite.probes)} probe(s) with a passed pre-flight and at least {minimum} trial(s) of this contract"


#: The steps in order: (name, check). A check returns its detail or raises ``_Problem``.
STEPS: tuple[tuple[str, Callable[[Path], str]], ...] = (
    ("folder", _folder),
    ("staging", _staging),
    ("mutations", _mutations),
    ("contract", _contract),
    ("registry", _registry),
    ("evaluator", _evaluator),
    ("probes", _probes),
    ("generated", _generated),
    ("trials", _trials),
)


def check_suite(root: Path) -> Iterator[Step]:
    """Run :data:`STEPS` in order on the suite at ``root``, yielding each; stop after the first problem."""
    root = Path(root)
    if not is_suite(root):
        yield Step("folder", False, f"{root}: not a suite (no contract.json)", "`eval-quality suite init DIR` writes a working one")
        return
    for name, check in STEPS:
        try:
            yield Step(name, True, check(root))
        except _Problem as problem:
            yield Step(name, False, problem.detail, problem.fix)
            return
        except (SuiteError, *TOOL_PROBLEMS) as problem:
            yield Step(name, False, problem_line(problem), "correct the named file")
            return
