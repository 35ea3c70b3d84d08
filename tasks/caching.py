"""The only home of cache settings (style.md §5, prefect.md §3): where state lives and how stage keys are made.

``StageDigest`` is a small ``CachePolicy`` keyed on OUR input digests, the stage (task) name and the
code version, never on Prefect's default policy (whose RUN_ID defeats resume, prefect.md §3). Faults
are never cached: a task that raises ends Failed, and Prefect persists only Completed results. Results
go to an absolute directory under the eval-quality home, so a relative path never resolves against
whatever the working directory happens to be.

Every path here lives under the eval-quality home (tasks/home.py).

**A stored result is never trusted.** Prefect picks the deserializer a result file *names* (a file
saying ``pickle`` is unpickled, whatever the task was configured with), so a writable results
directory would run code in the flow. Every digest-cached stage is therefore wrapped by
``verified_stage``: its results are written by ``VerifiedJsonSerializer`` (canonical JSON of a
tagged value plus its digest; only our own models and dataclasses are rebuilt, by name, nothing is
imported or called from the file) into ``VerifiedResultStorage``, which writes atomically and, on
every read, refuses a file that is not a regular file, is too large, is not strict JSON, or names any
serializer but ours. The serializer then checks the digest. A refused file makes Prefect's cache
lookup miss, so the stage runs again and overwrites it; one warning line names the file and why.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib
import json
import os
import stat
import sys
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from prefect.cache_policies import CachePolicy
from prefect.filesystems import LocalFileSystem
from prefect.serializers import Serializer
from pydantic import BaseModel, Field

from evalquality_core.canonical.digest import NotBound, digest_artifact, digest_composite, parse_bound
from evalquality_core.canonical.json import canonical_bytes, scan_json
from evalquality_core.evaluate.pointers import as_wire
from evalquality_core.faults import EvalQualityFault
from tasks.home import evalquality_home

#: Bumped when a stage's semantics change, so old cached results stop answering (prefect.md §3 pitfalls).
CODE_VERSION = "preflight-v1"


def results_dir() -> Path:
    """Absolute result storage of the digest-cached stages."""
    return evalquality_home() / "results"


def leg_cache_dir() -> Path:
    """The leg cache (diskcache) directory."""
    return evalquality_home() / "leg-cache"


def workspaces_dir() -> Path:
    """Where staged per-leg workspaces are made (and reclaimed after a kill)."""
    return evalquality_home() / "workspaces"


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _jsonable(value: Any) -> Any:
    """A derived product (a frozen dataclass such as a plan) as plain JSON, models as their wire form.

    Exact builtin types are tested first by ``type``: the ``Mapping`` and dataclass checks are slow
    on every leaf, and a plan's leaves are thousands of strings (a reduce key digests its plan)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {str(key): _jsonable(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [_jsonable(item) for item in value]
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return as_wire(value)


def input_digest(value: Any) -> str:
    """Our digest of one task input: the artifact digest of its wire JSON (lists digest item by item).

    A frozen model or frozen dataclass (a compiled contract, handed to every probe's plan; a plan,
    handed to its reduce) is digested as the stage-result encoding of it (``encode_result``), once per
    object: artifacts are never changed in place. A stage result written or read a moment ago already
    carries that digest (``VerifiedJsonSerializer`` remembers it), so a reduce key never walks its
    plan again (benchmarks/bench_scale.py: most of a cached stage's key)."""
    if isinstance(value, (list, tuple)):
        return digest_artifact([input_digest(item) for item in value])
    if _is_frozen(value):
        remembered = _FROZEN_DIGESTS.get(value)
        if remembered is not None:
            return remembered
        digest = digest_artifact(encode_result(value))
        _FROZEN_DIGESTS.put(value, digest)
        return digest
    if type(value) is dict:
        try:  # exact plain JSON (an observation) digests as it is: no copy through ``_jsonable``
            return digest_artifact(value)
        except (EvalQualityFault, TypeError, ValueError):
            pass  # a tuple, model or other value inside: made plain first
    return digest_artifact(_jsonable(value))


def _is_frozen(value: Any) -> bool:
    """Whether ``value`` is an immutable artifact: a frozen pydantic model or a frozen dataclass instance."""
    if isinstance(value, BaseModel):
        return bool(value.model_config.get("frozen"))
    params = getattr(type(value), "__dataclass_params__", None)
    return params is not None and bool(params.frozen) and not isinstance(value, type)


class _IdentityDigests:
    """Digests of immutable values by identity, each forgotten when its value is collected (a weak
    reference's callback), so the memo holds nothing alive and an id is never read for another object."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], str]] = {}

    def get(self, value: Any) -> str | None:
        """The digest remembered for this very object, or None."""
        entry = self._entries.get(id(value))
        if entry is not None and entry[0]() is value:
            return entry[1]
        return None

    def put(self, value: Any, digest: str) -> None:
        """Remember ``digest`` for ``value`` while it lives (a value that takes no weak reference: not at all)."""
        key, entries = id(value), self._entries

        def forget(ref: weakref.ref[Any]) -> None:
            entry = entries.get(key)
            if entry is not None and entry[0] is ref:
                entries.pop(key, None)

        try:
            entries[key] = (weakref.ref(value, forget), digest)
        except TypeError:
            pass

    def __len__(self) -> int:
        return len(self._entries)


#: Input digests of frozen artifacts (``input_digest``); single dict operations, atomic under the GIL.
_FROZEN_DIGESTS = _IdentityDigests()


@dataclass
class StageDigest(CachePolicy):
    """Cache key = ``<task name>-<code version>-<digest of the named inputs' digests>``; nothing else."""

    inputs: Sequence[str] = field(default_factory=tuple)
    version: str = CODE_VERSION

    def compute_key(
        self, task_ctx: Any, inputs: dict[str, Any], flow_parameters: dict[str, Any], **kwargs: Any
    ) -> str | None:
        """Namespaced by stage so two stages with equal inputs never share a result (prefect.md §3)."""
        return self.key_for(task_ctx.task.name, inputs)

    def key_for(self, stage: str, inputs: Mapping[str, Any]) -> str:
        """The key of stage ``stage`` given its (resolved) inputs: what ``compute_key`` returns in a task run."""
        parts = {name: input_digest(inputs[name]) for name in self.inputs}
        parts["stage"] = stage
        parts["version"] = self.version
        return f"{stage}-{self.version}-{digest_composite(parts).removeprefix('sha256:')}"


def stage_cache(*inputs: str) -> dict[str, Any]:
    """The decorator keywords every digest-cached stage uses: the policy, absolute storage, the verified
    serializer (apply ``verified_stage`` above the decorator too, for the verified storage)."""
    return {
        "cache_policy": StageDigest(inputs=tuple(inputs)),
        "result_storage": results_dir(),
        "result_serializer": VerifiedJsonSerializer(),
        "persist_result": True,
    }


# --- verified stage results (module docstring) -------------------------------------------------------

#: The serializer's name in a result file; a file naming any other serializer is refused unread.
SERIALIZER_TYPE = "evalquality-verified-json"
RESULT_FORMAT = "eval-quality/stage-result/v1"
#: A stored result larger than this is refused before it is parsed (a stage result is kilobytes).
MAX_RESULT_BYTES = 64 * 1024 * 1024
#: Only classes defined in these packages are rebuilt from a result file.
_TRUSTED_PACKAGES = ("evalquality_core.", "tasks.", "flows.")


class StageResultRejected(ValueError):
    """A stored stage result failed verification; ``str()`` says why."""


_WARNED: set[str] = set()
_WARNED_GUARD = threading.Lock()


def _warn_once(where: str, why: str) -> None:
    with _WARNED_GUARD:
        if where in _WARNED:
            return
        _WARNED.add(where)
    line = f"stage cache: discarded {where}: {why}; the stage runs again"
    sys.stderr.write("eval-quality: warning: " + " ".join(line.split()) + "\n")
    sys.stderr.flush()


def _qualified(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _trusted_class(name: Any) -> type:
    """The class a tag names, only if it is one of ours (a model, dataclass or enum); nothing else
    is imported: the module must be one of our packages, the attribute a class of the right kind.
    A name once resolved is remembered (a refusal is not: it raises every time)."""
    if type(name) is str:
        known = _TRUSTED.get(name)
        if known is not None:
            return known
    target = _resolve_trusted_class(name)
    _TRUSTED[name] = target
    return target


#: Tag names already resolved to one of our classes (``_trusted_class``).
_TRUSTED: dict[str, type] = {}


def _resolve_trusted_class(name: Any) -> type:
    if not isinstance(name, str) or ":" not in name:
        raise StageResultRejected(f"type tag {str(name)[:60]!r} is malformed")
    module_name, _, qualname = name.partition(":")
    if not module_name.startswith(_TRUSTED_PACKAGES) or not all(p.isidentifier() for p in qualname.split(".")):
        raise StageResultRejected(f"type {name[:80]!r} is not one of ours")
    try:
        target: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError):
        raise StageResultRejected(f"type {name[:80]!r} does not exist") from None
    if not isinstance(target, type) or not (
        issubclass(target, BaseModel) or is_dataclass(target) or issubclass(target, enum.Enum)
    ):
        raise StageResultRejected(f"{name[:80]!r} is not a model, dataclass or enum")
    return target


def encode_result(value: Any) -> Any:
    """A stage result as tagged JSON: models by wire form, dataclasses by field, tuples and mappings tagged."""
    if isinstance(value, BaseModel):
        return {"$model": _qualified(type(value)), "wire": value.model_dump(mode="json", by_alias=True)}
    if is_dataclass(value) and not isinstance(value, type):
        return {"$dataclass": _qualified(type(value)), "fields": {f.name: encode_result(getattr(value, f.name)) for f in fields(value)}}
    if isinstance(value, enum.Enum):
        return {"$enum": _qualified(type(value)), "value": value.value}
    if isinstance(value, tuple):
        return {"$tuple": [encode_result(item) for item in value]}
    if isinstance(value, Mapping):
        if type(value) is dict and _plain_json(value):
            # Plain JSON (a leg's request, a reference set) is stored as is and read back without a
            # walk: a plan is mostly such mappings, and a cached re-run rebuilds every plan (bench_scale).
            return {"$json": value}
        return {"$map": {str(key): encode_result(item) for key, item in value.items()}}
    if isinstance(value, list):
        return [encode_result(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a stage result may not hold {type(value).__name__}")


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain_json(value: Any) -> bool:
    """Whether ``value`` is built only of ``dict`` (string keys), ``list`` and JSON scalars, exactly
    (no tuple, model or subclass): what ``json.loads`` gives back unchanged."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return True
    if kind is dict:
        return all(type(key) is str and _plain_json(item) for key, item in value.items())
    if kind is list:
        return all(_plain_json(item) for item in value)
    return False


def decode_result(value: Any) -> Any:
    """The inverse of ``encode_result``; any other tag or class refuses the whole result.

    Tags are told apart by size and membership rather than by building a key set per object: a plan
    holds thousands of tagged objects, and a cached re-run rebuilds every stage result (bench_scale)."""
    kind = type(value)
    if kind is list:
        return [decode_result(item) for item in value]
    if kind is not dict:
        return value
    size = len(value)
    if size == 1:
        if "$tuple" in value and type(value["$tuple"]) is list:
            return tuple(decode_result(item) for item in value["$tuple"])
        if "$map" in value and type(value["$map"]) is dict:
            return {key: decode_result(item) for key, item in value["$map"].items()}
        if "$json" in value and type(value["$json"]) is dict:
            return value["$json"]  # parsed JSON, bound to the digest: nothing in it is rebuilt
    elif size == 2:
        if "$dataclass" in value and "fields" in value and type(value["fields"]) is dict:
            return _decode_dataclass(value["$dataclass"], value["fields"])
        if "$model" in value and "wire" in value:
            return _decode_model(value["$model"], value["wire"])
        if "$enum" in value and "value" in value:
            return _decode_enum(value["$enum"], value["value"])
    raise StageResultRejected("it holds an object that is not a tagged value")


def _decode_model(name: Any, wire: Any) -> Any:
    cls = _trusted_class(name)
    if not issubclass(cls, BaseModel):
        raise StageResultRejected(f"{name!r} is not a model")
    try:
        # Plain JSON text suffices to validate (the envelope was scanned strictly and its digest
        # checked); the canonical form's second value-domain walk bought nothing here.
        text = json.dumps(wire, ensure_ascii=False, allow_nan=False)
        return cls.model_validate_json(text, by_alias=True, by_name=False)
    except (ValueError, EvalQualityFault) as exc:
        raise StageResultRejected(f"its {cls.__name__} does not validate: {str(exc)[:120]}") from None


def _decode_dataclass(name: Any, values: dict[str, Any]) -> Any:
    cls = _trusted_class(name)
    if not is_dataclass(cls):
        raise StageResultRejected(f"{name!r} is not a dataclass")
    try:
        return cls(**{field_name: decode_result(item) for field_name, item in values.items()})
    except TypeError as exc:
        raise StageResultRejected(f"its {cls.__name__} fields do not fit: {exc}") from None


def _decode_enum(name: Any, raw: Any) -> Any:
    cls = _trusted_class(name)
    if not issubclass(cls, enum.Enum):
        raise StageResultRejected(f"{name!r} is not an enum")
    try:
        return cls(raw)
    except ValueError as exc:
        raise StageResultRejected(str(exc)) from None


class VerifiedJsonSerializer(Serializer):  # type: ignore[type-arg]
    """Canonical JSON ``{"format", "value", "digest"}`` of a tagged result; ``loads`` verifies the
    digest before rebuilding anything, and raises ``StageResultRejected`` on any mismatch."""

    type: str = Field(default=SERIALIZER_TYPE, frozen=True)

    def dumps(self, obj: Any) -> bytes:
        """The canonical bytes of the result's envelope."""
        encoded = encode_result(obj)
        digest = digest_artifact(encoded)
        if _is_frozen(obj):  # the input digest a later stage keyed on this result needs (``input_digest``)
            _FROZEN_DIGESTS.put(obj, digest)
        return canonical_bytes({"format": RESULT_FORMAT, "value": encoded, "digest": digest})

    def loads(self, blob: bytes) -> Any:
        """The result, after the envelope's format and digest are verified.

        Bytes that ``VerifiedResultStorage`` verified and rebuilt a moment ago (Prefect reads a result
        through the storage, then hands the same text to this method) are not verified and rebuilt a
        second time: the rebuilt value is taken, once, from ``_JUST_VERIFIED`` by the SHA-256 of the
        exact bytes. A cached re-run paid both passes for every stage result (benchmarks/bench_scale.py).
        """
        rebuilt = _take_verified(blob)
        if rebuilt is not _MISSING:
            return rebuilt
        return self._verify(blob)

    def _verify(self, blob: bytes) -> Any:
        """The full check of ``loads``: strict JSON, the envelope's shape, format and digest, then rebuild.

        An envelope laid out exactly as ``dumps`` writes it (canonical key order: digest, format, value)
        is checked on its bytes: the SHA-256 of the value's own bytes must be the recorded digest, which
        is what the artifact digest of the canonical value is, and only then is the value parsed. That
        binds the rebuilt value to the digest as the slow path does, without re-encoding the value
        canonically to digest it (most of a cached stage's read, benchmarks/bench_scale.py). Any other
        layout takes the slow path, which scans strictly and refuses what it must."""
        fast, recorded = _fast_value(blob)
        if fast is not _MISSING:
            return _remembered(decode_result(fast), recorded)
        try:
            envelope = scan_json(blob, "StageResult")
        except EvalQualityFault as fault:
            raise StageResultRejected(f"its result is not strict JSON ({fault.detail})") from None
        if not isinstance(envelope, dict) or set(envelope) != {"format", "value", "digest"}:
            raise StageResultRejected("its result does not have the envelope shape")
        if envelope["format"] != RESULT_FORMAT:
            raise StageResultRejected(f"its result format is not {RESULT_FORMAT!r}")
        if envelope["digest"] != digest_artifact(envelope["value"]):
            raise StageResultRejected("its result digest does not match (the result was altered or cut)")
        return _remembered(decode_result(envelope["value"]), envelope["digest"])


def _remembered(value: Any, digest: str) -> Any:
    """``value``, rebuilt from an encoding whose digest was just checked to be ``digest``: a frozen one
    is remembered with it, which is its ``input_digest`` (a stage keyed on it never re-encodes it)."""
    if _is_frozen(value):
        _FROZEN_DIGESTS.put(value, digest)
    return value


_MISSING = object()
_ENVELOPE_HEAD = b'{"digest":"'
_ENVELOPE_MIDDLE = ('","format":' + json.dumps(RESULT_FORMAT) + ',"value":').encode("ascii")
_DIGEST_LENGTH = len("sha256:") + 64


def _fast_value(blob: bytes) -> tuple[Any, str]:
    """The envelope's value and recorded digest when ``blob`` has exactly ``dumps``'s layout and its
    value's bytes are bound to that digest (``parse_bound``); ``(_MISSING, "")`` otherwise (the caller
    takes the strict path)."""
    head = len(_ENVELOPE_HEAD)
    middle = head + _DIGEST_LENGTH
    if not blob.startswith(_ENVELOPE_HEAD) or not blob.endswith(b"}"):
        return _MISSING, ""
    if blob[middle:middle + len(_ENVELOPE_MIDDLE)] != _ENVELOPE_MIDDLE:
        return _MISSING, ""
    try:
        recorded = blob[head:middle].decode("ascii")
        return parse_bound(blob[middle + len(_ENVELOPE_MIDDLE):-1], recorded), recorded
    except (NotBound, UnicodeDecodeError):
        return _MISSING, ""  # altered, cut, or not canonical: the strict path says which


#: Rebuilt stage results by the SHA-256 of the exact bytes just verified, each taken at most once;
#: bounded, so a result Prefect never asks for again is dropped rather than held.
_JUST_VERIFIED: OrderedDict[bytes, Any] = OrderedDict()
_JUST_VERIFIED_LIMIT = 64
_JUST_VERIFIED_GUARD = threading.Lock()


#: Outcomes of whole result files just checked (``VerifiedResultStorage._checked``), by the SHA-256 of
#: the file's bytes, each taken at most once; bounded like ``_JUST_VERIFIED``.
_CHECKED_FILES: OrderedDict[bytes, tuple[bytes, Any]] = OrderedDict()


def _keep_verified(blob: bytes, value: Any) -> None:
    """Remember the value verified from ``blob`` for the ``loads`` that follows."""
    fingerprint = hashlib.sha256(blob).digest()
    with _JUST_VERIFIED_GUARD:
        _JUST_VERIFIED[fingerprint] = value
        while len(_JUST_VERIFIED) > _JUST_VERIFIED_LIMIT:
            _JUST_VERIFIED.popitem(last=False)


def _take_verified(blob: bytes) -> Any:
    """The value verified from exactly these bytes, once; ``_MISSING`` when there is none."""
    fingerprint = hashlib.sha256(blob).digest()
    with _JUST_VERIFIED_GUARD:
        return _JUST_VERIFIED.pop(fingerprint, _MISSING)


def _read_regular_file(path: Path, cap: int) -> bytes:
    """The bytes of ``path``: never through a symlink, never a FIFO or device, at most ``cap`` bytes."""
    flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ValueError(f"Path {path} does not exist.") from None
    except OSError as exc:
        raise StageResultRejected(f"it cannot be opened safely ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StageResultRejected("it is not a regular file")
        if info.st_size > cap:
            raise StageResultRejected(f"it is larger than {cap} bytes")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise StageResultRejected(f"it is larger than {cap} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=64)
def _resolved_base(basepath: str) -> Path:
    """A storage's base directory, resolved once per process: Prefect resolves a result's path twice per
    task run, and resolving walks every component with a system call (bench_scale: a third of a
    millisecond per run). Re-resolving bought nothing: the open that follows crosses the same parents."""
    return Path(basepath).expanduser().resolve()


class VerifiedResultStorage(LocalFileSystem):
    """Result storage that writes atomically and reads back only what ``VerifiedJsonSerializer`` wrote."""

    _block_type_name = "EvalQuality Verified Result Storage"

    def _resolve_path(self, path: str) -> Path:  # type: ignore[override]
        """The path of a key under the base, lexically: a symlink planted at a result's name is never
        followed (Prefect's own resolution follows it, then refuses the target as outside the base)."""
        base = _resolved_base(str(self.basepath or "."))
        if path is None:
            return base
        candidate = Path(os.path.normpath(path if Path(path).is_absolute() else base / path))
        if candidate != base and base not in candidate.parents:
            raise ValueError(f"Provided path {candidate} is outside of the base path {base}.")
        return candidate

    def _checked(self, path: str) -> bytes:
        """The verified bytes of a result Prefect reads next; Prefect's own ``loads`` of its result text
        then takes the value rebuilt here (``_keep_verified``) instead of verifying and rebuilding again.

        Prefect reads a cached stage's file twice in a row (``ResultStore.exists``, then ``read``): when
        the second read finds exactly the bytes the first one verified, it takes that check's outcome
        (once, by the SHA-256 of the whole file) instead of repeating it. Other bytes, such as a file
        replaced in between, are checked in full."""
        resolved, content = self._read(path)
        fingerprint = hashlib.sha256(content).digest()
        with _JUST_VERIFIED_GUARD:
            checked = _CHECKED_FILES.pop(fingerprint, None)
        if checked is None:
            checked = self._verified_content(resolved, content)
            with _JUST_VERIFIED_GUARD:
                _CHECKED_FILES[fingerprint] = checked
                while len(_CHECKED_FILES) > _JUST_VERIFIED_LIMIT:
                    _CHECKED_FILES.popitem(last=False)
        blob, value = checked
        _keep_verified(blob, value)
        return content

    def verified(self, path: str) -> tuple[bytes, Any]:
        """The stored record's bytes and its rebuilt value, after every check (class docstring)."""
        content, _, value = self._verified(path)
        return content, value

    def _verified(self, path: str) -> tuple[bytes, bytes, Any]:
        """``verified``, plus the result's own bytes (what Prefect hands its serializer)."""
        resolved, content = self._read(path)
        return (content, *self._verified_content(resolved, content))

    def _read(self, path: str) -> tuple[Path, bytes]:
        """Where a key's result lives and its bytes, read safely (a refusal is warned once and raised)."""
        resolved = self._resolve_path(path)
        try:
            return resolved, _read_regular_file(resolved, MAX_RESULT_BYTES)
        except StageResultRejected as why:
            _warn_once(str(resolved), str(why))
            raise

    def _verified_content(self, resolved: Path, content: bytes) -> tuple[bytes, Any]:
        """The result bytes and the rebuilt value of the stored record ``content`` read from ``resolved``."""
        try:
            record = scan_json(content, "StageResultRecord")
            serializer = record.get("metadata", {}).get("serializer", {}) if isinstance(record, dict) else {}
            named = serializer.get("type") if isinstance(serializer, dict) else None
            if named != SERIALIZER_TYPE:
                raise StageResultRejected(f"it names serializer {str(named)[:40]!r}, not {SERIALIZER_TYPE!r}")
            expiration = record.get("metadata", {}).get("expiration")
            if expiration is not None:
                raise StageResultRejected("it carries an expiration (our stages never expire)")
            result = record.get("result")
            if not isinstance(result, str):
                raise StageResultRejected("its result is not stored as JSON text")
            # Digest and rebuild before Prefect does (a failure here is a cache miss, not a crash).
            blob = result.encode("utf-8")
            value = VerifiedJsonSerializer()._verify(blob)
        except EvalQualityFault as fault:
            _warn_once(str(resolved), f"it is not strict JSON ({fault.detail})")
            raise StageResultRejected(fault.detail) from None
        except (StageResultRejected, AttributeError) as why:
            _warn_once(str(resolved), str(why))
            raise StageResultRejected(str(why)) from None
        return blob, value

    def read_path(self, path: str, _sync: bool | None = None) -> bytes:  # type: ignore[override]
        """The verified bytes of a stored result (``StageResultRejected`` when it fails a check)."""
        return self._checked(path)

    async def aread_path(self, path: str) -> bytes:
        """``read_path`` for Prefect's async engine."""
        return self._checked(path)

    def _write(self, path: str, content: bytes) -> str:
        resolved = self._resolve_path(path)
        resolved.parent.mkdir(parents=True, exist_ok=True)
        temp = resolved.with_name(f".{resolved.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            with open(temp, "xb") as handle:
                handle.write(content)
            os.replace(temp, resolved)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return str(resolved)

    def write_path(self, path: str, content: bytes, _sync: bool | None = None) -> str:  # type: ignore[override]
        """Write through a temp file and one rename, so a kill never leaves half a result."""
        return self._write(path, content)

    async def awrite_path(self, path: str, content: bytes) -> str:
        """``write_path`` for Prefect's async engine."""
        return self._write(path, content)


TaskT = TypeVar("TaskT")


def verified_stage(task: TaskT) -> TaskT:
    """Store a digest-cached stage's results verified (module docstring). Apply above ``@task``:
    Prefect refuses an unsaved storage block as a decorator argument, so it is set on the task."""
    task.result_storage = VerifiedResultStorage(basepath=str(results_dir()))  # type: ignore[attr-defined]
    task.result_serializer = VerifiedJsonSerializer()  # type: ignore[attr-defined]
    # ``with_options`` (task-run names) builds a new Task from these fields and would refuse the unsaved
    # block: hand it the plain path, then verify the copy the same way.
    task.with_options = functools.partial(_verified_with_options, task)  # type: ignore[attr-defined]
    return task


def unpersisted_results(task: TaskT) -> TaskT:
    """For a task whose results stay in memory (``persist_result=False``, such as ``spawn-leg``): hand
    Prefect our result storage anyway. Prefect still resolves a storage path for every result it
    records (twice, through the default ``LocalFileSystem``, which resolves symlinks with a system call
    per component: most of a no-op task's own cost, bench_scale); ours resolves lexically under a base
    resolved once. Nothing is written: the task never persists."""
    task.result_storage = VerifiedResultStorage(basepath=str(results_dir()))  # type: ignore[attr-defined]
    return task


def _verified_with_options(task: Any, **options: Any) -> Any:
    """``Task.with_options`` for a verified stage: the copy stores its results verified too."""
    from prefect import Task

    options.setdefault("result_storage", str(results_dir()))
    return verified_stage(Task.with_options(task, **options))


def stored_result(task: Any, **inputs: Any) -> tuple[bool, Any]:
    """Flow-side lookup of a verified stage's answer: ``(True, value)`` when the result the task would be
    answered from (same ``StageDigest`` key, same verified storage and checks) is stored, else ``(False, None)``.

    A flow asks this before submitting a stage, so a night with nothing changed creates no task run for
    what is already answered (a cached task run still costs Prefect's per-run orchestration: API calls,
    events, tag concurrency). A refused or missing file is a miss: the task runs and overwrites it.
    ``inputs`` are the task's resolved parameters by name (at least those its key names).
    """
    policy, storage = task.cache_policy, task.result_storage
    if not isinstance(policy, StageDigest) or not isinstance(storage, VerifiedResultStorage):
        raise TypeError(f"{task.name}: not a verified digest-cached stage")
    key = policy.key_for(task.name, inputs)
    try:  # the task's own storage (fixed when it was defined), exactly where Prefect would look
        return True, storage.verified(key)[1]
    except (StageResultRejected, ValueError, OSError):
        return False, None
