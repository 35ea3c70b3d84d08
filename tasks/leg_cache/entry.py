"""A leg cache entry: the key of a leg request, and the canonical, digest-bound text a store keeps.

Nothing read back is trusted: ``decode_entry`` verifies the format, the key binding, both digests and
that the record holds a valid probe observation (tasks/leg_cache/__init__.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from evalquality_core.artifacts.port_messages import (
    ApiProbeObservation,
    CliProbeObservation,
    McpProbeObservation,
    read_probe_observation,
)
from evalquality_core.canonical.digest import NotBound, digest_artifact, digest_composite, parse_bound
from evalquality_core.canonical.json import canonical_bytes, scan_json
from evalquality_core.faults import EvalQualityFault

#: The format tag of an entry; bumped if the entry shape changes (older entries then fail verification).
ENTRY_FORMAT = "eval-quality/leg-cache-entry/v1"


def persisted_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request as persisted: environment channel values replaced by their key names (A.6)."""
    channels = request.get("channels") or {}
    if "environment" not in channels:
        return dict(request)
    names = sorted(channels["environment"])
    return {**request, "channels": {**channels, "environment": names}}


def leg_cache_key(
    request: Mapping[str, Any],
    target_entry: Mapping[str, Any],
    staged_digest: str,
    tool_version: str,
    runtime: Mapping[str, str] | None = None,
) -> str:
    """The cache key of a leg (module docstring); the hex of a composite digest.

    ``target_entry`` is the registry entry with its placeholders as authored (``{python}``, never this
    machine's interpreter path) and ``runtime`` what each placeholder it uses stands for, by identity
    (``{"python": "cpython-3.12.3"}``), so machines with the project at different paths share a key and
    a different interpreter never does. The ``runtime`` member is always part of the composite, so a
    key made before it existed (which held the interpreter's path) can never equal one made now: such
    old entries simply miss.
    """
    blank = {**request, "probeId": ""}
    return digest_composite(
        {
            "request": blank,
            "target": dict(target_entry),
            "staged": staged_digest,
            "tool": tool_version,
            "runtime": dict(runtime or {}),
        }
    ).removeprefix("sha256:")


def _key_digest(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def encode_entry(key: str, record: Mapping[str, Any]) -> str:
    """The stored text of one entry: canonical JSON carrying the digests of its key and its record."""
    body = dict(record)
    entry = {
        "format": ENTRY_FORMAT,
        "key": key,
        "keyDigest": _key_digest(key),
        "record": body,
        "recordDigest": digest_artifact(body),
    }
    return canonical_bytes(entry).decode("utf-8")


#: The tail of an entry as ``encode_entry`` writes it: ``,"recordDigest":"sha256:<64 hex>"}``.
_TAIL_HEAD = ',"recordDigest":"'
_TAIL_LENGTH = len(_TAIL_HEAD) + len("sha256:") + 64 + len('"}')


def _bound_record(key: str, text: str) -> dict[str, Any] | None:
    """The record of an entry laid out exactly as ``encode_entry`` writes it, when its bytes are bound to
    the recorded digest (``parse_bound``: no canonical re-encoding to check it); None sends the entry to
    the strict reader of ``decode_entry``, which names what is wrong with it."""
    head = (
        '{"format":' + json.dumps(ENTRY_FORMAT) + ',"key":' + json.dumps(key)
        + ',"keyDigest":' + json.dumps(_key_digest(key)) + ',"record":'
    )
    tail = text[-_TAIL_LENGTH:]
    if not text.startswith(head) or not tail.startswith(_TAIL_HEAD) or not tail.endswith('"}'):
        return None
    try:
        record = parse_bound(text[len(head):-_TAIL_LENGTH].encode("utf-8"), tail[len(_TAIL_HEAD):-2])
    except (NotBound, UnicodeEncodeError):
        return None
    return record if isinstance(record, dict) else None


class EntryRejected(ValueError):
    """A stored entry failed verification; ``str()`` says why (one short clause)."""


def decode_entry(key: str, text: Any) -> dict[str, Any]:
    """The verified record of a stored entry, or ``EntryRejected`` naming the first check it fails."""
    if not isinstance(text, str):
        raise EntryRejected(f"it is stored as {type(text).__name__}, not JSON text")
    record = _bound_record(key, text)
    if record is not None:
        return _checked_record(key, record)
    try:
        entry = scan_json(text, "LegCacheEntry")
    except EvalQualityFault as fault:
        raise EntryRejected(f"it is not strict JSON ({fault.detail})") from None
    if not isinstance(entry, dict) or set(entry) != {"format", "key", "keyDigest", "record", "recordDigest"}:
        raise EntryRejected("it does not have the entry shape")
    if entry["format"] != ENTRY_FORMAT:
        raise EntryRejected(f"its format {str(entry['format'])[:40]!r} is not {ENTRY_FORMAT!r}")
    if entry["key"] != key:
        raise EntryRejected("it names another key than the one it is stored under")
    if entry["keyDigest"] != _key_digest(key):
        raise EntryRejected("its key digest does not match")
    record = entry["record"]
    if not isinstance(record, dict):
        raise EntryRejected("its record is not an object")
    if entry["recordDigest"] != digest_artifact(record):
        raise EntryRejected("its record digest does not match (the record was altered or cut)")
    return _checked_record(key, record)


def _checked_record(key: str, record: dict[str, Any]) -> dict[str, Any]:
    """The record, once it names its key and holds a valid cli, api or mcp observation."""
    if record.get("key") != key:
        raise EntryRejected("its record names another key")
    stored = record.get("observation")
    # A multi-call leg's observation carries its calls' under "calls" (evalquality_core/adapters/leg_calls.py):
    # each must be a valid observation too.
    calls = stored.get("calls", []) if isinstance(stored, dict) else []
    own = {k: v for k, v in stored.items() if k != "calls"} if isinstance(stored, dict) else stored
    if not isinstance(calls, list):
        raise EntryRejected("its observation's calls are not a list")
    for one in [own, *calls]:
        try:
            observation = read_probe_observation(one)
        except EvalQualityFault as fault:
            raise EntryRejected(f"its observation is not a valid ProbeObservation ({fault.detail[:120]})") from None
        if not isinstance(observation, CliProbeObservation | ApiProbeObservation | McpProbeObservation):
            raise EntryRejected("its observation is not a cli, api or mcp observation")
    return record


