"""The probe generator and checker: qualification evidence and every derived probe field.

``python -m corpus.tools.generate [--check] [--suite NAME ...]`` (harness.md A.10). For each probe of
each suite it checks, and fails loudly (naming the suite, probe and reason) when any check fails:

* the contract compiles (our ``compile_contract``) and the probe reads as a Probe;
* the probe's behaviour declares exactly one oracle, its designated oracle (AD-40): one oracle per
  behaviour it names;
* a non-clean probe has exactly one declared mutation (``mutations/*.json`` naming its probe id), its
  text applies cleanly (occurs exactly once), and a gameability mutation states its naive check;
* the mutation cycle runs in a disposable copy of the system and is *earned*, not asserted: run the
  clean arm, apply the one edit, run the mutated arm, restore the original and compare digests,
  re-run the clean arm and compare its observations (the operations' declared volatile parts aside,
  ``preflight/volatility.py``; a difference names the step and the field). ``rollbackVerified`` is true only when every
  step held;
* the evidence, produced by running both arms through our command-line adapter, shows the baseline
  passing (the designated oracle resolves true and the defect signature matches no observation)
  and the mutation failing (the designated oracle resolves false and the signature matches an
  observation); a gameability probe's evidence also shows the naive check satisfied; a clean
  control's baseline shows every oracle holding.

It then writes ``evidence/<probe>/{baseline,mutant}.json`` and rewrites each probe's derived fields:
``systemId``, the three digests, the qualification's references, ``rollbackVerified`` and the
defects' ``oracleEvidence``. Authored fields (rationale, signature, witnesses, summaries) are never
touched. ``--check`` does the same in memory and compares bytes: exit 0 when up to date, 1 when a
file is stale or missing, 2 when a check fails or the generator cannot run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.probe import Probe
from evalquality_core.canonical import digest_bytes, digest_directory
from evalquality_core.evaluate import resolution_context, resolve_check, select_plan
from evalquality_core.evaluate.bindings import observation_satisfies_bindings
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.preflight.volatility import first_difference, stable_observation
from evalquality_core.score.qualification import qualify_probe
from evalquality_core.score.witness import resolve_home_operation
from evalquality_core.suite.evaluator import REGEX_STEP_BUDGET, requests_for_plan, run_staged
from evalquality_core.suite.load import (
    TOOL_PROBLEMS,
    Mutation,
    SuiteError,
    SuiteFiles,
    adapter_for,
    load_mutations,
    load_suite,
    problem_line,
    public_reference,
    read_suite_json,
    read_suite_settings,
    sibling_suite,
    system_dir_of,
    unlinked_folder,
)
from evalquality_core.suite.staging import refuse_links_outside_layers, system_digest


class GenerationError(SuiteError):
    """A probe failed one of the generator's checks; the message names suite, probe and reason."""


@dataclass
class Output:
    """Files the generator would write: path → bytes, in the order produced."""

    files: dict[Path, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Per generated suite folder: probe id → the qualification gate's refusal codes (empty: admitted).
    #: A ``probes-from`` suite has no entry (its probes are judged where they are generated).
    qualification: dict[Path, dict[str, tuple[str, ...]]] = field(default_factory=dict)


def pretty(value: Any) -> bytes:
    """The corpus's stored-JSON form: sorted keys, one-space indent, trailing newline (stable bytes)."""
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def designated_oracle(contract: Mapping[str, Any], probe: Mapping[str, Any]) -> dict[str, Any]:
    """The one oracle of the probe's behaviour; refuses a behaviour with none or several."""
    behaviours = [b for b in contract["behaviors"] if b["id"] == probe["behaviorId"]]
    if len(behaviours) != 1:
        raise GenerationError(f"behaviour {probe['behaviorId']} is not declared exactly once by the contract")
    oracle_ids = behaviours[0]["oracles"]
    if len(oracle_ids) != 1:
        raise GenerationError(
            f"behaviour {probe['behaviorId']} lists {len(oracle_ids)} oracles; a probe needs exactly one (AD-40 designated oracle)"
        )
    oracles = [o for o in contract["oracles"] if o["id"] == oracle_ids[0]]
    if len(oracles) != 1:
        raise GenerationError(f"oracle {oracle_ids[0]} of behaviour {probe['behaviorId']} is not declared exactly once")
    return oracles[0]


def resolve_oracles(contract: Mapping[str, Any], observations: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every oracle's root resolution over one arm's observations (our check resolution)."""
    plan = select_plan(contract, observations)
    out = {}
    for oracle in contract["oracles"]:
        context = resolution_context(contract, plan.bound, REGEX_STEP_BUDGET, f"EvalContract.oracles[id={oracle['id']}].check")
        out[oracle["id"]] = resolve_check(oracle["check"], context).resolution
    return out


def _home_operation(contract: Mapping[str, Any], signature: Mapping[str, Any]) -> Mapping[str, Any]:
    if "toolName" in signature:  # an mcp signature names its home operation by its tool
        for interface in contract["permittedInterfaces"]:
            for operation in interface["operations"]:
                if interface["kind"] == "mcp" and operation.get("toolName") == signature["toolName"]:
                    return operation
        raise GenerationError(f"the defect signature's tool {signature['toolName']!r} names no operation of the contract")
    if "invocation" not in signature:  # an api signature: the scorer's own identity rule (method + path)
        home = resolve_home_operation(contract, signature)
        if home is None:
            raise GenerationError(f"the defect signature's {signature.get('method')} {signature.get('pathTemplate')} names no operation of the contract")
        return home.operation
    wanted = [signature["invocation"]["executable"], *signature["invocation"]["subcommandPath"]]
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            if [operation["invocation"]["executable"], *operation["invocation"]["subcommandPath"]] == wanted:
                return operation
    raise GenerationError(f"the defect signature's invocation {' '.join(wanted)!r} names no operation of the contract")


def signature_matches(contract: Mapping[str, Any], signature: Mapping[str, Any], observations: Sequence[Mapping[str, Any]]) -> list[str]:
    """Ids of the exercised observations the signature matches: the evaluator's own calls (provenance
    ``evaluator-chosen``, AD-6/AD-7) of its home operation that its selector admits and its predicate holds on."""
    home = _home_operation(contract, signature)
    step = {"stepId": "observed", "inputBinding": signature["condition"]["selector"]["inputBinding"]}
    hits = []
    for observation in observations:
        if observation["operationId"] != home["operationId"] or observation["provenance"] != "evaluator-chosen":
            continue
        if not observation_satisfies_bindings(observation, step, home, {}):
            continue
        context = resolution_context(contract, {"observed": observation}, REGEX_STEP_BUDGET, "Probe.defectSignature.condition")
        if resolve_check(signature["condition"]["predicate"], context).resolution == "true":
            hits.append(observation["observationId"])
    return hits


def _naive(contract: Mapping[str, Any], check: Mapping[str, Any], observations: Sequence[Mapping[str, Any]]) -> str:
    plan = select_plan(contract, observations)
    context = resolution_context(contract, plan.bound, REGEX_STEP_BUDGET, "Mutation.naiveCheck")
    return resolve_check(check, context).resolution


def evidence_document(
    suite: SuiteFiles, probe: Mapping[str, Any], arm: str, mutation: Mutation | None, observations: list[dict[str, Any]],
    system_digest: str, oracle_id: str,
) -> dict[str, Any]:
    """One arm's qualification evidence: what ran, what came back, and what our evaluator made of it.

    It names no suite: a suite's folder name is where it lives, not what it is, so a copy or a renamed
    folder generates the same bytes (``generate --check`` holds on it).
    """
    resolutions = resolve_oracles(suite.contract, observations)
    signature = probe.get("defectSignature")
    naive = None
    if mutation is not None and mutation.naive_check is not None:
        naive = _naive(suite.contract, mutation.naive_check, observations)
    return {
        "about": "Qualification evidence produced by corpus.tools.generate: the interaction plan run through "
        "evalquality_core.adapters.command_line against a freshly staged system, and our check resolution over it.",
        "arm": arm,
        "designatedOracle": oracle_id,
        "designatedResolution": resolutions[oracle_id],
        "exitCodes": {o["observationId"]: o["exitCode"] for o in observations},
        "mutation": None if mutation is None else mutation.mutation_id,
        "naiveCheckResolution": naive,
        "observations": observations,
        "oracleResolutions": resolutions,
        "probeId": probe["probeId"],
        "signatureMatches": None if not signature else signature_matches(suite.contract, signature, observations),
        "systemDigest": system_digest,
    }


def operations_by_id(contract: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The contract's operations by ``operationId`` (the first declaration of an id wins)."""
    found: dict[str, Mapping[str, Any]] = {}
    for interface in contract["permittedInterfaces"]:
        for operation in interface["operations"]:
            found.setdefault(operation["operationId"], operation)
    return found


def stable_observations(contract: Mapping[str, Any], observations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each observation with its operation's volatile parts removed (``volatilePointers``, ``volatileHeaders``)."""
    operations = operations_by_id(contract)
    return [stable_observation(o, operations.get(o["operationId"])) for o in observations]


def settled_evidence(path: Path, document: Mapping[str, Any], contract: Mapping[str, Any]) -> bytes:
    """The bytes to write for an evidence document: the stored file's own bytes when it equals
    ``document`` once both leave out the operations' volatile parts (preflight/volatility.py), else
    the new document's.

    Why: a server that stamps a ``Date`` or mints ids answers differently on every run, so writing the
    new answer each time would make ``generate --check`` report the file (and the probe holding its
    digest) stale forever. Everything that is not declared volatile, the oracle resolutions included,
    must still be equal, so a moved answer or verdict is written (and ``--check`` reports it)."""
    fresh = pretty(document)
    try:
        stored = read_suite_json(path) if path.is_file() else None
    except SuiteError:  # unreadable: the new bytes replace it
        return fresh
    if not isinstance(stored, dict) or not isinstance(stored.get("observations"), list):
        return fresh
    try:
        alike = ({**stored, "observations": stable_observations(contract, stored["observations"])}
                 == {**document, "observations": stable_observations(contract, document["observations"])})
    except (KeyError, TypeError, AttributeError, ValueError):  # a hand-edited file of another shape
        return fresh
    return path.read_bytes() if alike else fresh


def determinism_problem(suite: SuiteFiles, clean: Sequence[Mapping[str, Any]], again: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the re-run clean arm is not the clean arm (volatile parts aside), naming step and field; or None."""
    step_ids = [step["stepId"] for step, _ in requests_for_plan(suite)]
    difference = first_difference(clean, again, operations_by_id(suite.contract), step_ids)
    if difference is None:
        return None
    return (
        f"the clean arm observed something different after the rollback (the system is not deterministic): "
        f"{difference.sentence()}; declare it in the operation's volatileHeaders or volatilePointers if it "
        "differs by nature"
    )


def _expect(condition: bool, reason: str) -> None:
    if not condition:
        raise GenerationError(reason)


def mutation_cycle(suite: SuiteFiles, mutation: Mutation, adapter: Any) -> tuple[list, list, str, str, bytes]:
    """The performed cycle in a disposable copy: clean, mutate, mutated, restore + compare, clean again.

    Returns (clean observations, mutated observations, clean system digest, mutated system digest,
    mutated target bytes). Raises :class:`GenerationError` when any step fails.
    """
    scratch = Path(tempfile.mkdtemp(prefix=f"eq-generate-{suite.name}-"))
    try:
        system = scratch / "system"
        # Links are copied as links, so only those staging keeps (confined to their layer) are refused
        # nowhere; any other is refused here, before a copy.
        refuse_links_outside_layers(suite.root)
        shutil.copytree(system_dir_of(suite.root), system, symlinks=True)
        original_digest = system_digest(suite.root, system)
        _, clean, clean_digest = run_staged(suite, None, adapter, system_source=system)
        target = scratch / mutation.target
        original = target.read_bytes()
        target.write_bytes(mutation.apply(original.decode("utf-8")).encode("utf-8"))
        mutated_bytes = target.read_bytes()
        mutated_digest = system_digest(suite.root, system)
        _expect(mutated_digest != original_digest, f"mutation {mutation.mutation_id} changed nothing")
        _, mutated, staged_mutated_digest = run_staged(suite, None, adapter, system_source=system)
        _expect(staged_mutated_digest == mutated_digest, "the mutated arm did not run the mutated system")
        target.write_bytes(original)
        _expect(system_digest(suite.root, system) == original_digest, f"restoring {mutation.target} did not restore the system's digest")
        _, again, again_digest = run_staged(suite, None, adapter, system_source=system)
        _expect(again_digest == clean_digest, "the re-run clean arm did not run the restored system")
        problem = determinism_problem(suite, clean, again)
        _expect(problem is None, problem or "")
        return clean, mutated, clean_digest, mutated_digest, mutated_bytes
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


#: Stands for a digest the generator has not computed yet (replaced before anything is written).
_PENDING_DIGEST = "sha256:" + "0" * 64
_PENDING_REFERENCE = {"storage": "public", "path": "pending", "privateRef": None, "digest": _PENDING_DIGEST}
#: The derived fields of each qualification route: what the generator writes, never the author.
DERIVED_QUALIFICATION_FIELDS: dict[str, dict[str, Any]] = {
    "controlled-mutation": {
        "mutationSource": "pending",
        "mutationOperator": "pending",
        "targetArtifact": _PENDING_REFERENCE,
        "baselinePassEvidence": _PENDING_REFERENCE,
        "mutatedFailEvidence": _PENDING_REFERENCE,
        "rollbackVerified": False,
    },
    "gameability": {
        "naiveOracleSatisfiedEvidence": _PENDING_REFERENCE,
        "disciplinedOracleRejectedEvidence": _PENDING_REFERENCE,
    },
    "clean-control": {"baselinePassEvidence": _PENDING_REFERENCE, "revisionCommitDigest": _PENDING_DIGEST},
}
#: The derived top-level fields of a probe (the lineage stamp defaults too, for a first generation).
DERIVED_PROBE_FIELDS: dict[str, Any] = {
    "systemId": "pending",
    "implementationDigest": _PENDING_DIGEST,
    "artifactDigest": _PENDING_DIGEST,
    "commitDigest": _PENDING_DIGEST,
}


def default_route(probe: Mapping[str, Any]) -> str:
    """The qualification route a suite probe takes: clean control, gameability, else controlled mutation."""
    if probe.get("expectedClean") is True:
        return "clean-control"
    return "gameability" if probe.get("probeClass") == "gameability" else "controlled-mutation"


def with_derived_placeholders(value: Any) -> Any:
    """A hand-written probe with every derived field it lacks filled by a placeholder.

    An author writes only the authored fields (README "Bring your own system"): ``probeId``,
    ``probeClass``, ``behaviorId``, ``expectedClean``, ``rationale``, ``defects`` (without
    ``oracleEvidence``), ``defectSignature`` and the qualification's prose (``expectedObservableFailure``,
    ``degenerateResponse`` or ``noKnownDefectStatement``). The stamp (``schemaVersion``, ``parentDigest``,
    ``revisionCount``), ``qualification.route`` and every derived field are filled here; the generator
    then computes the real values. A field the author did write is kept.
    """
    if not isinstance(value, dict):
        return value
    probe = {"schemaVersion": Probe.WRITTEN_SCHEMA_VERSION, "parentDigest": None, "revisionCount": 0,
             **DERIVED_PROBE_FIELDS, **value}
    qualification = probe.get("qualification")
    if qualification is None:
        qualification = {}
    if isinstance(qualification, dict):
        route = qualification.get("route", default_route(probe))
        probe["qualification"] = {"route": route, **DERIVED_QUALIFICATION_FIELDS.get(route, {}), **qualification}
    if isinstance(probe.get("defects"), list):
        probe["defects"] = [
            {"oracleEvidence": [], **defect} if isinstance(defect, dict) else defect for defect in probe["defects"]
        ]
    return probe


def check_authored_probe(probe: Any, path: Path) -> None:
    """Refuse a probe that does not read as a Probe, naming EVERY missing or wrong field (one line)."""
    from pydantic import ValidationError

    from evalquality_core.artifacts.base import error_path

    try:
        read_artifact(Probe, probe, "Probe")
    except (StructuralFailure, RuntimeFault) as fault:
        problems = [f"{fault.artifact_path}: {fault.detail}"]
        if fault.code == "schema-parse-failure":
            try:
                Probe.model_validate(probe, by_alias=True, by_name=False)
            except ValidationError as exc:
                problems = [f"{error_path('Probe', tuple(e['loc']), probe)}: {e['msg']}" for e in exc.errors()]
            except Exception:  # noqa: BLE001 — the first line is still the answer
                pass
        count = f" ({len(problems)} problems)" if len(problems) > 1 else ""
        raise GenerationError(f"{path}: {fault.code}: " + "; ".join(problems) + count) from None


def generate_probe(suite: SuiteFiles, probe_path: Path, mutations: Mapping[str, Mutation], adapter: Any, out: Output) -> None:
    """Check one probe, produce its evidence and its updated probe bytes into ``out``."""
    probe = with_derived_placeholders(read_suite_json(probe_path))
    check_authored_probe(probe, probe_path)
    probe_id = probe["probeId"]
    if probe_path.stem != probe_id:
        raise GenerationError(f"{probe_path.name} holds probe {probe_id}; one probe per file, named after its id")
    oracle = designated_oracle(suite.contract, probe)
    mutation = mutations.get(probe_id)
    settings = read_suite_settings(suite.root)
    system_dir = system_dir_of(suite.root)  # its own, or a sibling's (system-from): named system/ either way
    implementation_digest = system_digest(suite.root, system_dir)  # tree_digest's when no links
    commit_members = {
        f"{name}/{p.relative_to(base).as_posix()}": digest_bytes(p.read_bytes())
        # fixtures/ itself must not be a link either: it would digest (and stage) whatever it points at
        for name, base in (("system", system_dir), ("fixtures", unlinked_folder(suite.root, "fixtures")))
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }
    commit_digest = digest_directory(commit_members)
    evidence_dir = suite.root / "evidence" / probe_id
    qualification = dict(probe["qualification"])
    probe["systemId"] = settings["system-id"]
    probe["implementationDigest"] = implementation_digest
    probe["commitDigest"] = commit_digest

    if probe["expectedClean"]:
        _expect(mutation is None, f"clean control {probe_id} must not declare a mutation")
        _, observations, digest = run_staged(suite, None, adapter)
        baseline = evidence_document(suite, probe, "baseline", None, observations, digest, oracle["id"])
        # An expects-violation oracle's check states the failure: it holds when the check resolves false.
        violation = {o["id"] for o in suite.contract["oracles"] if o.get("polarity") == "expects-violation"}
        failing = sorted(k for k, v in baseline["oracleResolutions"].items() if v != ("false" if k in violation else "true"))
        _expect(not failing, f"clean control {probe_id}: oracles {', '.join(failing)} do not hold on the clean system")
        data = settled_evidence(evidence_dir / "baseline.json", baseline, suite.contract)
        out.files[evidence_dir / "baseline.json"] = data
        qualification["baselinePassEvidence"] = public_reference(evidence_dir / "baseline.json", suite.root, data)
        qualification["revisionCommitDigest"] = commit_digest
        probe["artifactDigest"] = implementation_digest
        out.notes.append(f"{suite.name} {probe_id}: clean control, every oracle holds")
    else:
        _expect(mutation is not None, f"{probe_id} plants a defect but no mutations/*.json names it")
        assert mutation is not None
        clean, mutated, clean_digest, mutated_digest, mutated_bytes = mutation_cycle(suite, mutation, adapter)
        arm = "degenerate" if probe["probeClass"] == "gameability" else "mutant"
        baseline = evidence_document(suite, probe, "baseline", None, clean, clean_digest, oracle["id"])
        failed = evidence_document(suite, probe, arm, mutation, mutated, mutated_digest, oracle["id"])
        _expect(baseline["designatedResolution"] == "true",
                f"{probe_id}: designated oracle {oracle['id']} resolves {baseline['designatedResolution']} on the baseline, not true")
        _expect(failed["designatedResolution"] == "false",
                f"{probe_id}: designated oracle {oracle['id']} resolves {failed['designatedResolution']} under the mutation, not false")
        _expect(baseline["signatureMatches"] == [], f"{probe_id}: the defect signature matches the baseline ({baseline['signatureMatches']})")
        _expect(bool(failed["signatureMatches"]), f"{probe_id}: the defect signature matches no observation of the mutated run")
        # Whether the exit code alone separates the arms on the observations the signature matched:
        # true for the reviewer (1 on the plant, 0 under the mutation), false for the tracer (0 on both).
        failed["exitCodeDiscriminates"] = any(
            baseline["exitCodes"][m] != failed["exitCodes"][m] for m in failed["signatureMatches"]
        )
        base_data = settled_evidence(evidence_dir / "baseline.json", baseline, suite.contract)
        failed_data = settled_evidence(evidence_dir / f"{arm}.json", failed, suite.contract)
        out.files[evidence_dir / "baseline.json"] = base_data
        out.files[evidence_dir / f"{arm}.json"] = failed_data
        target = suite.root / mutation.target
        mutation_ref = public_reference(mutation.source_path, suite.root)
        probe["artifactDigest"] = digest_bytes(mutated_bytes)
        if probe["probeClass"] == "gameability":
            _expect(mutation.naive_check is not None, f"gameability probe {probe_id}: its mutation states no naiveCheck")
            _expect(failed["naiveCheckResolution"] == "true",
                    f"{probe_id}: the naive check resolves {failed['naiveCheckResolution']} on the degenerate response, not true")
            qualification["naiveOracleSatisfiedEvidence"] = public_reference(evidence_dir / f"{arm}.json", suite.root, failed_data)
            qualification["disciplinedOracleRejectedEvidence"] = public_reference(evidence_dir / f"{arm}.json", suite.root, failed_data)
        else:
            _expect(all(d["source"] == "controlled-mutation" for d in probe["defects"]),
                    f"{probe_id}: every defect of a controlled mutation must have source controlled-mutation")
            qualification["mutationSource"] = mutation_ref["path"]
            qualification["mutationOperator"] = mutation.operator
            qualification["targetArtifact"] = public_reference(target, suite.root)
            qualification["baselinePassEvidence"] = public_reference(evidence_dir / "baseline.json", suite.root, base_data)
            qualification["mutatedFailEvidence"] = public_reference(evidence_dir / f"{arm}.json", suite.root, failed_data)
            # Earned: mutation_cycle raised unless clean → mutate → mutated → restore → clean all held.
            qualification["rollbackVerified"] = True
            probe["defects"] = [dict(d, oracleEvidence=[mutation_ref]) for d in probe["defects"]]
        out.notes.append(
            f"{suite.name} {probe_id}: {mutation.operator}; {oracle['id']} true -> false; signature matches "
            f"{', '.join(failed['signatureMatches'])}; the exit code "
            f"{'separates' if failed['exitCodeDiscriminates'] else 'does not separate'} the arms there"
        )
    probe["qualification"] = qualification
    read_artifact(Probe, probe, f"Probe[probeId={probe_id}]")
    # Report (not enforce) the AD-9 gate: a refused probe is recorded refused, never rewritten to pass.
    signature = probe.get("defectSignature")
    gate = qualify_probe(probe, None if not signature else resolve_home_operation(suite.contract, signature))
    codes = sorted({failure.code for failure in gate.failures})
    out.notes.append(
        f"{suite.name} {probe_id}: qualification " + ("admits it" if gate.qualified else "refuses it: " + ", ".join(codes))
    )
    out.qualification.setdefault(suite.root, {})[probe_id] = () if gate.qualified else tuple(codes)
    out.files[probe_path] = pretty(probe)


def _check_borrowed(suite: SuiteFiles, source: str, out: Output) -> None:
    """A suite that declares ``probes-from = "<sibling suite>"`` (a deliberately weak contract over another
    suite's probes): its probe and mutation files must equal the sibling's byte for byte. Their evidence
    was earned against the sibling's contract; this contract may be too weak to earn it, which is what
    such a suite exists to show, so the mutation cycle is not run again here.
    """
    origin = sibling_suite(suite.root, "probes-from", source)  # a plain sibling folder, never a link
    for folder in ("probes", "mutations", "evidence"):
        mine = {p.relative_to(suite.root).as_posix(): p.read_bytes()
                for p in sorted(unlinked_folder(suite.root, folder).rglob("*.json"))}
        theirs = {p.relative_to(origin).as_posix(): p.read_bytes() for p in sorted(unlinked_folder(origin, folder).rglob("*.json"))}
        if not theirs or mine != theirs:
            differing = sorted(n for n in set(mine) | set(theirs) if mine.get(n) != theirs.get(n)) or ["(none found)"]
            raise GenerationError(
                f"{suite.name}: {folder}/ must equal {origin}'s (probes-from), but differs in {', '.join(differing)}"
            )
    out.notes.append(f"{suite.name}: probes, mutations and evidence are {source}'s, byte for byte (probes-from)")


def generate_suite(name: str | Path, out: Output, jobs: int | None = None) -> None:
    """Check and generate every probe of one suite into ``out`` (``jobs`` probes at a time; default: CPUs)."""
    from evalquality_core.compile.pipeline import compile_contract

    suite = load_suite(name, probes=False)
    try:
        compile_contract(suite.contract)
    except (StructuralFailure, RuntimeFault) as failure:
        raise GenerationError(f"{name}: the contract does not compile: {problem_line(failure)}") from failure
    source = read_suite_settings(suite.root).get("probes-from")
    if source is not None:
        _check_borrowed(suite, str(source), out)
        return
    mutations = load_mutations(suite.root)
    unknown = sorted(set(mutations) - set(suite.probes))
    if unknown:
        raise GenerationError(f"{name}: mutations name probes that do not exist: {', '.join(unknown)}")
    adapter = adapter_for(suite)
    probe_paths = sorted((suite.root / "probes").glob("P-*.json"))
    outputs = [Output() for _ in probe_paths]

    def one(index: int) -> None:
        generate_probe(suite, probe_paths[index], mutations, adapter, outputs[index])

    # Probes are independent (each stages its own workspaces), so they run side by side; results
    # are merged in probe order, and the first failure in probe order is the one reported.
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, index) for index in range(len(probe_paths))]
    gate = out.qualification.setdefault(suite.root, {})
    for probe_path, future, produced in zip(probe_paths, futures, outputs, strict=True):
        problem = future.exception()
        if isinstance(problem, (GenerationError, *TOOL_PROBLEMS)):
            raise GenerationError(f"{name} {probe_path.stem}: {problem_line(problem)}") from problem
        if problem is not None:
            raise problem
        out.files.update(produced.files)
        out.notes.extend(produced.notes)
        gate.update(produced.qualification.get(suite.root, {}))


def unqualified_suites(out: Output) -> list[str]:
    """One line per generated suite of ``out`` whose every probe the qualification gate (AD-9) refused:
    such a suite measures nothing (each probe would score Invalid). The line names the suite folder and
    counts the refusal codes. A suite with no probe at all is named too; some probes refused while one
    qualifies is not a problem (the notes report each refusal)."""
    lines = []
    for root, gate in out.qualification.items():
        if any(not codes for codes in gate.values()):
            continue
        counted = Counter(code for codes in gate.values() for code in codes)
        refused = ", ".join(f"{code} x{count}" for code, count in sorted(counted.items()))
        why = f"qualification refused all {len(gate)} probe(s) ({refused})" if gate else "it has no probe"
        lines.append(f"{root}: no probe qualifies, so the suite measures nothing: {why}")
    return lines



def stale_files(out: Output) -> list[Path]:
    """The files of ``out`` that are missing or differ from what the generator would write."""
    return [path for path, data in out.files.items() if not path.is_file() or path.read_bytes() != data]


def write_files(out: Output) -> list[Path]:
    """Write every stale file of ``out``; returns the files written.

    Probe files hold authored fields too: each is written beside and renamed, so an interrupted run
    leaves each file whole (old or new), never cut short.
    """
    written = []
    for path in stale_files(out):
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_bytes(out.files[path])
        os.replace(partial, path)
        written.append(path)
    return written
