"""Reading a suite: its folder, declarations, mutations, settings, and the references it stores.

A suite is any folder holding ``contract.json`` (harness.md A.1–A.3): ``suite.toml`` (the system id and
where each fixture set lands under ``work/``), ``system/``, ``fixtures/``, ``targets.toml`` (the target
registry), ``evaluator.json`` (the reference evaluator's choices), ``probes/P-*.json``, ``mutations/*.json``
and, once generated, ``evidence/`` and ``trials/``. Optionally ``scoring-policy.json`` (the suite's own; a
corpus-wide file beside the suites folder is the fallback) and a ``[floors]`` table in ``suite.toml``
(per-class strength floors).

**Every reference a suite stores is a '/'-separated path relative to the suite folder itself**
(:func:`suite_relative`, :func:`public_reference`), so a suite can be moved, copied or kept in another
repository and still verify: resolve a stored path against the folder the suite is in now.

Every problem is a :class:`SuiteError` (or a subclass) whose message is one line naming the file and why.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalquality_core.adapters.command_line import CommandLineAdapter
from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.adapters.routing import ProbeRouter
from evalquality_core.artifacts.base import read_artifact
from evalquality_core.artifacts.contract import EvalContract
from evalquality_core.artifacts.probe import Probe
from evalquality_core.canonical import digest_bytes, digest_directory
from evalquality_core.canonical.nesting import TooDeep, json_too_deep, load_toml
from evalquality_core.faults import RuntimeFault, StructuralFailure
from evalquality_core.probe.targets import parse_targets

#: The file every suite folder holds; a folder without it is not a suite.
CONTRACT_FILE = "contract.json"
#: A suite's own scoring policy; the corpus-wide fallback is the same name beside the suites folder.
POLICY_FILE = "scoring-policy.json"
#: What belongs to a suite's evaluation corpus: digested into its corpus digest (:func:`corpus_digest`).
CORPUS_MEMBERS: tuple[str, ...] = ("contract.json", "probes", "mutations", "trials")


class SuiteError(Exception):
    """A suite that cannot be read, staged, generated or run faithfully; one line naming the file and why."""


class StagingError(SuiteError):
    """A suite or mutation that cannot be staged faithfully; the message names the file and why."""


class EvaluatorError(SuiteError):
    """The reference evaluator could not run a trial faithfully; the message names the suite, step or file."""


#: The keys of ``mutations/<name>.json``: every one required except ``naiveCheck`` (gameability only)
#: and ``generated`` (the marker and provenance of a machine-made mutant, evalquality_core/mutants).
MUTATION_KEYS: frozenset[str] = frozenset({"probeId", "operator", "target", "description", "find", "replace"})
MUTATION_OPTIONAL_KEYS: frozenset[str] = frozenset({"naiveCheck", "generated"})
#: The keys of ``suite.toml``.
SUITE_SETTINGS_KEYS: frozenset[str] = frozenset({"system-id", "fixtures"})
#: Optional keys of ``suite.toml``: ``[floors]`` (per-class strength floors, read by the contract-strength
#: flow), ``probes-from`` (a sibling suite whose probes this one reuses byte for byte; see generate.py),
#: ``system-from`` (a sibling suite whose ``system/`` this one stages instead of holding a copy; see
#: :func:`system_dir_of`), ``[evaluator]`` (the evaluator command of live trials; see evaluator_protocol.py)
#: ``[mutants]`` (the nightly opt-in of generated mutants; see suite/mutants.py) and ``layers`` (read-only
#: dependency folders of the system, staged once and linked into each leg; see suite/layers.py).
SUITE_OPTIONAL_KEYS: frozenset[str] = frozenset(
    {"floors", "probes-from", "system-from", "evaluator", "mutants", "layers"}
)
#: The keys of a suite's ``evaluator.json`` (``about`` is optional prose).
EVALUATOR_SETTINGS_KEYS: frozenset[str] = frozenset({"baselineSteps", "choices"})
#: What the suite tools report as one line: bad suite files, refused artifacts, faults of a run and
#: I/O errors. Anything else is a bug and keeps its traceback.
TOOL_PROBLEMS: tuple[type[BaseException], ...] = (SuiteError, StructuralFailure, RuntimeFault, OSError)


def problem_line(problem: BaseException) -> str:
    """One line for a :data:`TOOL_PROBLEMS` problem: a fault as ``<code>: <artifactPath>: <detail>``, an
    I/O error as ``<file>: <reason>``, anything else as its message."""
    if isinstance(problem, (StructuralFailure, RuntimeFault)):
        return " ".join(f"{problem.code}: {problem.artifact_path}: {problem.detail}".split())
    if isinstance(problem, OSError) and problem.filename is not None:
        return f"{problem.filename}: {problem.strerror or problem}"
    return " ".join(str(problem).split())  # one line, whatever the message held


#: SuiteFiles files and artifacts larger than this are refused before they are parsed (a probe pointing at a
#: multi-gigabyte file must not take the memory); ``EVALQUALITY_MAX_INPUT_BYTES`` overrides it. The CLI
#: caps its inputs with the same rule (``evalquality_core.cli.io.max_input_bytes``).
DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024
#: The environment variable that overrides :data:`DEFAULT_MAX_INPUT_BYTES`.
MAX_INPUT_ENV = "EVALQUALITY_MAX_INPUT_BYTES"


def input_cap() -> int:
    """The input size cap in force (``EVALQUALITY_MAX_INPUT_BYTES``, else 64 MiB); ``ValueError`` (one
    line) when the variable is set to anything but a positive whole number."""
    raw = os.environ.get(MAX_INPUT_ENV, "")
    if raw.strip().isdigit() and int(raw) > 0:
        return int(raw)
    if raw:
        raise ValueError(f"{MAX_INPUT_ENV}={raw!r} is not a positive whole number")
    return DEFAULT_MAX_INPUT_BYTES


def _open_suite_file(path: Path) -> tuple[int, os.stat_result]:
    """An open descriptor of a suite file and its status, refused unless it is a regular file (opened
    without blocking on a FIFO); every refusal is a one-line ``StagingError`` naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise StagingError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise StagingError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise StagingError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        # O_RDONLY opens a directory without EISDIR on Linux: name it as such rather than as "not regular".
        if stat.S_ISDIR(status.st_mode):
            raise StagingError(f"{path}: is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise StagingError(f"{path}: is not a regular file")
    except OSError as exc:
        os.close(fd)
        raise StagingError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except BaseException:
        os.close(fd)
        raise
    return fd, status


def _read_capped(fd: int, path: Path) -> bytes:
    """At most :func:`input_cap` bytes of an open suite file; over the cap is refused after reading one
    byte past it, before anything parses it. Closes ``fd``."""
    try:
        try:
            cap = input_cap()
        except ValueError as problem:
            raise StagingError(str(problem)) from None
        chunks, total = [], 0
        while total <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise StagingError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if total > cap:
        raise StagingError(
            f"{path}: larger than {cap} bytes; nothing was parsed (raise {MAX_INPUT_ENV} to allow it)"
        )
    return b"".join(chunks)


def read_suite_bytes(path: Path) -> bytes:
    """The bytes of a suite file or stored artifact, at most :func:`input_cap` of them.

    Read without blocking on a FIFO and refused unless it is a regular file; a file over the cap is
    refused after reading one byte past it, before anything parses it. Every refusal is a
    ``StagingError`` whose message is one line naming the file (and the cap, and how to raise it).
    """
    try:
        input_cap()  # a bad cap setting is named before the file is opened
    except ValueError as problem:
        raise StagingError(str(problem)) from None
    fd, _ = _open_suite_file(path)
    return _read_capped(fd, path)


def _decoded(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StagingError(f"{path}: not UTF-8 at byte {exc.start}") from None


def read_suite_text(path: Path) -> str:
    """The UTF-8 text of a suite file (:func:`read_suite_bytes`); a missing, unreadable, oversized or
    undecodable file is a StagingError naming it."""
    return _decoded(read_suite_bytes(path), path)


def read_suite_json(path: Path) -> Any:
    """The JSON value of a suite file (:func:`read_suite_text`); malformed JSON names the file, line and
    column, and JSON nested deeper than ``MAX_NESTING_DEPTH`` (canonical/nesting.py) is refused by a
    linear scan before the parser could recurse that deep."""
    text = read_suite_text(path)
    if json_too_deep(text):
        raise StagingError(f"{path}: {TooDeep()}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StagingError(f"{path}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


#: Parsed TOML suite files of this process: path → (the bytes parsed, the document), the newest read
#: only, so a long-lived worker keeps one document per suite file (see :func:`read_suite_toml`).
#: Documents are shared: callers read them and never change them.
_PARSED_TOML: dict[str, tuple[bytes, dict[str, Any]]] = {}
_PARSED_TOML_LOCK = threading.Lock()


def read_suite_toml(path: Path) -> dict[str, Any]:
    """The TOML document of a suite file (``suite.toml``), parsed at most once per content of the file in
    this process, however many times a run asks: a suite is read by every step, trial and leg, and a
    large file parsed for each of them was most of a run's time.

    The file is read (under the cap) on every call and its bytes compared with those last parsed: a
    comparison costs a fraction of a parse, and unlike size and mtime (a timestamp is only as fine as the
    kernel's clock tick) it cannot mistake a rewritten file for the old one. The document returned is
    shared: never change it. Refusals are one-line ``StagingError``s naming the file: unreadable, over the
    input cap, not UTF-8, not TOML, or nested deeper than ``MAX_NESTING_DEPTH`` (checked before the parser
    could recurse)."""
    data = read_suite_bytes(path)
    where = os.fspath(Path(path).absolute())
    # One lock for the whole parse: the generator's probes ask from several threads at once, and the
    # point is that only one of them parses.
    with _PARSED_TOML_LOCK:
        cached = _PARSED_TOML.get(where)
        if cached is not None and cached[0] == data:
            return cached[1]
        text = _decoded(data, path)
        try:
            document = load_toml(text)
        except TooDeep as problem:
            raise StagingError(f"{path}: {problem}") from None
        except tomllib.TOMLDecodeError as problem:
            raise StagingError(f"{path}: not TOML: {problem}") from None
        except ValueError:  # an integer past Python's int-from-text limit
            raise StagingError(
                f"{path}: holds an integer of more than {sys.get_int_max_str_digits()} digits, which no key accepts"
            ) from None
        _PARSED_TOML[where] = (data, document)
        return document


def check_keys(path: Path, value: Any, required: frozenset[str], optional: frozenset[str] = frozenset()) -> None:
    """Refuse a suite declaration that is not an object, lacks a required key or has an unknown one.

    Unknown keys are refused rather than ignored because a misspelt key (``naivecheck``) would
    otherwise silently change what the tools do.
    """
    if not isinstance(value, dict):
        raise StagingError(f"{path}: expected an object, got {type(value).__name__}")
    missing = sorted(required - set(value))
    if missing:
        raise StagingError(f"{path}: missing key(s) {', '.join(missing)}")
    unknown = sorted(set(value) - required - optional)
    if unknown:
        raise StagingError(f"{path}: unknown key(s) {', '.join(unknown)}")


@dataclass(frozen=True)
class Mutation:
    """One controlled mutation declared as data in ``mutations/<name>.json``.

    ``find`` must occur exactly once in the target file; applying the mutation replaces it with
    ``replace``. ``naive_check`` is set on gameability variants only: the naive oracle (an
    Expression) the degenerate response satisfies.
    """

    mutation_id: str
    probe_id: str
    operator: str
    target: str
    description: str
    find: str
    replace: str
    naive_check: dict[str, Any] | None
    source_path: Path

    def apply(self, text: str) -> str:
        """The target file's text with this mutation applied; refuses a find that is absent or repeated."""
        count = text.count(self.find)
        if count != 1:
            raise StagingError(
                f"{self.source_path}: the text to replace occurs {count} times in {self.target}, not exactly once"
            )
        return text.replace(self.find, self.replace)


def is_suite(path: Path) -> bool:
    """Whether ``path`` is a suite folder (it holds ``contract.json``)."""
    return (Path(path) / CONTRACT_FILE).is_file()


def suite_dir(suite: str | Path) -> Path:
    """The folder of a suite given its path (absolute, or relative to the working directory)."""
    path = Path(suite)
    if not is_suite(path):
        raise StagingError(f"{path}: not a suite (no {CONTRACT_FILE})")
    return path


def find_suites(root: Path) -> list[Path]:
    """Every suite folder directly under ``root``, sorted by name; ``root`` may itself be one suite."""
    root = Path(root)
    if is_suite(root):
        return [root]
    if not root.is_dir():
        return []
    return sorted(path for path in root.iterdir() if is_suite(path))


def suite_names(root: Path) -> list[str]:
    """The names of every suite directly under ``root``, sorted."""
    return [path.name for path in find_suites(root) if path != Path(root)]


def read_suite_settings(suite: str | Path) -> dict[str, Any]:
    """The suite's ``suite.toml``: ``system-id`` and the ``fixtures`` table (fixture set → path under work/)."""
    path = suite_dir(suite) / "suite.toml"
    settings = read_suite_toml(path)  # parsed once per run (see there); the checks below are cheap
    check_keys(path, settings, SUITE_SETTINGS_KEYS, SUITE_OPTIONAL_KEYS)
    # The [evaluator] table is checked where the file is read (its wall clock is a time budget), so an
    # authoring check names a bad one, not the first live trial.
    from evalquality_core.suite.evaluator_protocol import (
        evaluator_command_of,  # lazy: it imports the adapters
    )

    try:
        evaluator_command_of(settings, str(path))
    except ValueError as problem:
        raise StagingError(str(problem)) from None
    if not isinstance(settings["system-id"], str) or not settings["system-id"]:
        raise StagingError(f"{path}: system-id must be a non-empty string")
    if not isinstance(settings["fixtures"], dict) or not settings["fixtures"]:
        raise StagingError(f"{path}: a [fixtures] table naming at least one fixture set is required")
    for fixture_set, place in settings["fixtures"].items():
        if not isinstance(place, str):
            raise StagingError(f"{path}: fixtures.{fixture_set} must be a path under work/ (a string)")
        if not stays_inside(place):
            raise StagingError(f"{path}: fixtures.{fixture_set} = {place!r} leaves work/ (absolute, or a '..' segment)")
        if "/" in fixture_set or "\\" in fixture_set or fixture_set in ("", ".", ".."):
            raise StagingError(f"{path}: fixture set {fixture_set!r} must be the name of a folder under fixtures/")
    for key in SIBLING_KEYS:
        origin = settings.get(key)
        if origin is not None and (
            not isinstance(origin, str) or "/" in origin or "\\" in origin or origin in ("", ".", "..")
            or ":" in origin
        ):
            raise StagingError(f"{path}: {key} must be the name of a sibling suite folder (a plain name), not {origin!r}")
    return settings


#: ``suite.toml`` keys that name a sibling suite (a folder beside this one in the same suites folder).
SIBLING_KEYS: tuple[str, ...] = ("system-from", "probes-from")


def sibling_suite(root: Path, key: str, name: str) -> Path:
    """The sibling suite ``suite.toml``'s ``key`` (:data:`SIBLING_KEYS`) names: ``name`` is a plain folder
    name (:func:`read_suite_settings` refuses a path), and the folder beside the suite must be a real
    folder holding ``contract.json``, never a symlink, which could lead anywhere on the host. Each refusal
    is a one-line ``StagingError`` naming ``suite.toml`` and the key."""
    path = Path(root) / "suite.toml"
    sibling = Path(root).parent / name
    if sibling.is_symlink():
        raise StagingError(f"{path}: {key} = {name!r}: {sibling} is a symlink; name a suite folder beside this one")
    if not is_suite(sibling):
        raise StagingError(f"{path}: {key} = {name!r}: {sibling} is not a suite (no {CONTRACT_FILE})")
    return sibling


def unlinked_folder(root: Path, *parts: str) -> Path:
    """``root/<parts...>``, refused (one-line ``StagingError``) when any step below ``root`` is a symlink:
    a suite's ``system/`` or ``fixtures/`` folder that is itself a link would stage whatever it points at
    on the host, past the per-file link checks of what is copied."""
    path = Path(root)
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise StagingError(f"{path}: a symlink; a suite's system and fixtures must be plain files and folders")
    return path


def system_dir_of(suite: str | Path) -> Path:
    """The folder staged as the suite's system under test: its own ``system/``, or, when ``suite.toml``
    says ``system-from = "<sibling>"``, the ``system/`` of that sibling suite (the folder beside it), so
    two contracts over one system (a deliberately weak one, say) share it instead of holding copies.

    One level only, and never both: the suite must not hold a ``system/`` of its own, and the sibling
    must hold one (not borrow it in turn). Each refusal is a ``StagingError`` naming ``suite.toml``.
    Mutations still name ``system/<file>``: the staged workspace's ``system/`` is the same either way.
    """
    root = suite_dir(suite)
    origin = read_suite_settings(root).get("system-from")
    if origin is None:
        return unlinked_folder(root, "system")
    path = root / "suite.toml"
    if (root / "system").exists() or (root / "system").is_symlink():
        raise StagingError(f"{path}: system-from = {origin!r} but the suite holds a system/ of its own; keep one")
    sibling = sibling_suite(root, "system-from", origin)
    if read_suite_settings(sibling).get("system-from") is not None:
        raise StagingError(f"{path}: system-from = {origin!r} borrows its system too; name the suite that holds it")
    system = unlinked_folder(sibling, "system")
    if not system.is_dir():
        raise StagingError(f"{path}: system-from = {origin!r}: {system} is not a directory")
    return system


def stays_inside(relative: str) -> bool:
    """Whether a '/'-separated path from a suite file stays inside the folder it is joined to (a suite is
    hostile input too: ``../../x`` or ``/etc`` would let staging write or read outside the workspace)."""
    parts = relative.replace("\\", "/").split("/")
    return not relative.startswith(("/", "\\")) and ".." not in parts and ":" not in parts[0]


def load_mutations(suite: str | Path) -> dict[str, Mutation]:
    """Every mutation of the suite, keyed by the probe id it serves (one mutation per probe)."""
    mutations: dict[str, Mutation] = {}
    for path in sorted((suite_dir(suite) / "mutations").glob("*.json")):
        data = read_suite_json(path)
        check_keys(path, data, MUTATION_KEYS, MUTATION_OPTIONAL_KEYS)
        texts = sorted(key for key in MUTATION_KEYS if not isinstance(data[key], str))
        if texts:
            raise StagingError(f"{path}: {', '.join(texts)} must be string(s)")
        if data.get("naiveCheck") is not None and not isinstance(data["naiveCheck"], dict):
            raise StagingError(f"{path}: naiveCheck must be an Expression object or null")
        if "generated" in data and not isinstance(data["generated"], dict):
            raise StagingError(f"{path}: generated must be an object (the generator's marker)")
        mutation = Mutation(
            mutation_id=path.stem,
            probe_id=data["probeId"],
            operator=data["operator"],
            target=data["target"],
            description=data["description"],
            find=data["find"],
            replace=data["replace"],
            naive_check=data.get("naiveCheck"),
            source_path=path,
        )
        if not mutation.target.startswith("system/") or not stays_inside(mutation.target):
            raise StagingError(f"{path}: a mutation's target must be a file under system/ (no '..' segment)")
        if mutation.probe_id in mutations:
            raise StagingError(f"{path}: probe {mutation.probe_id} already has a mutation")
        mutations[mutation.probe_id] = mutation
    return mutations


def mutation_for_probe(suite: str | Path, probe_id: str) -> Mutation | None:
    """The mutation a probe plants, or None (a clean control plants nothing)."""
    return load_mutations(suite).get(probe_id)


# ------------------------------------------------------------------ references relative to the suite


def suite_relative(path: Path, root: Path) -> str:
    """``path`` as the '/'-separated path relative to ``root`` (a suite folder) that stored references hold."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        raise SuiteError(f"{path}: lies outside the suite folder {root}, and stored references are relative to it") from None


def referenced_file(root: Path, relative: str) -> Path:
    """The file a stored '/'-separated reference relative to the suite folder ``root`` names. A reference
    under ``system/`` names the suite's system source, which :func:`system_dir_of` finds (its own
    ``system/``, or the ``system-from`` sibling's), so borrowed probes' ``targetArtifact`` still verify."""
    if relative.startswith("system/"):
        return system_dir_of(root) / relative.removeprefix("system/")
    return Path(root) / relative


def public_reference(path: Path, root: Path, data: bytes | None = None) -> dict[str, Any]:
    """A public ArtifactReference: ``path`` relative to ``root`` (the suite folder) and the digest of
    ``data``, the file's bytes (read from ``path`` when not given: a file not yet written is referenced
    by the bytes it will hold)."""
    raw = Path(path).read_bytes() if data is None else data
    return {"storage": "public", "path": suite_relative(path, root), "privateRef": None, "digest": digest_bytes(raw)}


def tree_digest(directory: Path) -> str:
    """Directory digest of every file under ``directory`` (relative '/' paths → raw-bytes digests)."""
    members = {
        path.relative_to(directory).as_posix(): digest_bytes(path.read_bytes())
        for path in sorted(Path(directory).rglob("*"))
        if path.is_file()
    }
    if not members:
        raise StagingError(f"{directory}: nothing to digest")
    return digest_directory(members)


def corpus_digest(directory: Path) -> str:
    """The corpus digest of one suite: the directory digest of its :data:`CORPUS_MEMBERS` (contract,
    probes, mutations, trials), paths relative to the suite folder — what ``score --corpus-digest`` and
    the strength flow record, and what ``eval-quality suite digest DIR`` prints."""
    directory = Path(directory)
    members: dict[str, str] = {}
    for name in CORPUS_MEMBERS:
        root = directory / name
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
        for path in files:
            members[path.relative_to(directory).as_posix()] = digest_bytes(path.read_bytes())
    return digest_directory(members)


def suite_file_or_fallback(suite: Path, name: str, fallback_dir: Path | None) -> Path | None:
    """The suite's own ``name`` file, else ``fallback_dir/name`` (the corpus-wide one), else None."""
    for path in (Path(suite) / name, None if fallback_dir is None else Path(fallback_dir) / name):
        if path is not None and path.is_file():
            return path
    return None


# ------------------------------------------------------------------ the whole suite, as the tools read it


@dataclass(frozen=True)
class SuiteFiles:
    """One suite's files as the reference evaluator and the generator read them."""

    name: str
    root: Path
    contract: dict[str, Any]
    probes: dict[str, dict[str, Any]]
    choices: dict[str, Any]
    baseline_steps: frozenset[str]
    targets_text: str


def read_evaluator_settings(root: Path) -> tuple[dict[str, Any], frozenset[str]]:
    """``evaluator.json``: the choices (step id → channel → key → value) and the baseline step ids."""
    settings_path = root / "evaluator.json"
    settings = read_suite_json(settings_path)
    check_keys(settings_path, settings, EVALUATOR_SETTINGS_KEYS, frozenset({"about"}))
    if not isinstance(settings["choices"], dict):
        raise EvaluatorError(f"{settings_path}: choices must be an object (step id -> channel values)")
    steps = settings["baselineSteps"]
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise EvaluatorError(f"{settings_path}: baselineSteps must be a list of step ids")
    return settings["choices"], frozenset(steps)


def load_suite(suite: str | Path, *, probes: bool = True) -> SuiteFiles:
    """Read a suite's contract, probes, evaluator choices and target registry.

    ``probes=False`` reads the probe files as plain JSON (the generator reads probes that still lack
    their derived fields and checks them itself).
    """
    root = suite_dir(suite)
    choices, baseline_steps = read_evaluator_settings(root)
    # Every artifact is read (stamp and shape) before anything runs, so a bad file is reported by
    # name up front instead of part-way through a regeneration.
    contract = read_suite_artifact(EvalContract, root / CONTRACT_FILE)
    found = {}
    for path in sorted((root / "probes").glob("P-*.json")):
        probe = read_suite_artifact(Probe, path) if probes else read_suite_json(path)
        if not isinstance(probe, dict) or not isinstance(probe.get("probeId"), str):
            raise EvaluatorError(f"{path}: a probe must be an object with a probeId")
        found[probe["probeId"]] = probe
    return SuiteFiles(
        name=root.resolve().name,
        root=root,
        contract=contract,
        probes=found,
        choices=choices,
        baseline_steps=baseline_steps,
        targets_text=read_suite_text(root / "targets.toml"),
    )


def read_suite_artifact(model: Any, path: Path) -> dict[str, Any]:
    """A suite file read as ``model`` (its JSON value, unchanged); a refusal names the file."""
    value = read_suite_json(path)
    try:
        read_artifact(model, value, model.__name__)
    except (StructuralFailure, RuntimeFault) as fault:
        raise EvaluatorError(f"{path}: {problem_line(fault)}") from None
    return value


def adapter_for(suite: SuiteFiles, values: dict[str, str] | None = None, *, budget_scale: int = 1) -> ProbeRouter:
    """Our adapters under the suite's target registry, the interpreter filled in: the command-line
    adapter for cli requests, the stdio MCP adapter for the registry's tool servers (mcp requests),
    and — when the registry declares a ``[service]`` — the service adapter for api requests (a fresh
    server per call in the staged workspace). ``budget_scale`` multiplies every target's
    ``max_elapsed_ms`` (the traced coverage runs of suite/line_coverage.py)."""
    registry = parse_targets(suite.targets_text, str(suite.root / "targets.toml"))
    if budget_scale != 1:
        registry = registry.with_budgets_scaled(budget_scale)
    # ``values`` fills the registry's placeholders otherwise ({python}: this interpreter); the mutants'
    # line-coverage recording fills {python} with a tracing wrapper (suite/line_coverage.py).
    values = values or {"python": sys.executable}
    adapters: dict[str, Any] = {
        "cli": CommandLineAdapter(registry.to_policy(values)),
        "mcp": McpStdioAdapter(registry.to_mcp_policy(values)),
    }
    if registry.service is not None:
        from evalquality_core.adapters.http_service import ServiceAdapter

        adapters["api"] = ServiceAdapter(registry, values)
    return ProbeRouter(adapters)
