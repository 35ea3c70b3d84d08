"""``sha256:<hex>`` digests (artifacts.md §1.3): artifact, bytes, raw JSON, composite, directory.

A composite or directory digest is the artifact digest of a tagged object, never a concatenation of
strings, so two different field sets can never collide by juxtaposition.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from evalquality_core.canonical.json import MAX_SAFE_INTEGER, canonical_bytes, nesting_too_deep, scan_json
from evalquality_core.registries import COMPOSITE_PROTOCOL, DIGEST_PATTERN, DIRECTORY_PROTOCOL

_DIGEST_RE = re.compile(DIGEST_PATTERN)


def digest_bytes(data: bytes) -> str:
    """``sha256:`` + hex of the raw bytes, with no canonicalization."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_artifact(value: Any) -> str:
    """The artifact digest: SHA-256 over the RFC 8785 bytes of ``value`` (no trailing newline)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", by_alias=True)
    return digest_bytes(canonical_bytes(value))


def digest_json(data: bytes | str) -> str:
    """Scan raw JSON strictly (duplicate keys refused) and digest the parsed value."""
    return digest_artifact(scan_json(data))


class NotBound(ValueError):
    """Bytes that :func:`parse_bound` will not vouch for; the caller takes its strict path."""


def _refuse_constant(literal: str) -> Any:
    raise NotBound(f"{literal} is not JSON")


def _finite_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise NotBound(f"{literal} overflows")
    return number


def _safe_int(literal: str) -> int:
    number = int(literal) if len(literal) <= 17 else MAX_SAFE_INTEGER + 1
    if abs(number) > MAX_SAFE_INTEGER:
        raise NotBound(f"integer {literal[:20]} is beyond ±(2^53−1)")
    return number


def parse_bound(data: bytes, digest: str) -> Any:
    """The JSON value of ``data`` when ``digest`` is ``sha256:`` + the SHA-256 of exactly these bytes.

    For a store that wrote ``canonical_bytes(value)`` beside ``digest_artifact(value)``: the digest of the
    bytes as stored *is* the artifact digest, so checking it binds the parsed value to the recorded digest
    without re-encoding the value canonically (the slow part of a strict read). Raises :class:`NotBound`
    on a mismatch, a NaN/Infinity literal, an overflowing number or unsafe integer, a surrogate escape
    (canonical text never writes one; a lone surrogate would fail later, not here), nesting past the
    limit or bad syntax: the caller then reads strictly (``scan_json`` and ``digest_artifact``), which
    names what is wrong. Duplicate keys are not looked for (the strict path's costliest check):
    canonical text has none, and ``json.loads`` reads the bound bytes one way only (the last wins).
    The digest binds bytes; like the strict path, it is no defence against a writer who recomputes it.
    """
    if digest_bytes(data) != digest:
        raise NotBound("the digest does not match these bytes")
    if nesting_too_deep(data):
        raise NotBound("nested too deep")
    if b"\\ud" in data or b"\\uD" in data:
        raise NotBound("a surrogate escape")
    try:
        return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_safe_int)
    except (ValueError, RecursionError) as exc:
        raise NotBound(str(exc)[:80]) from None


def digest_composite(fields: Mapping[str, Any]) -> str:
    """Digest of ``{"protocol": "eval-quality/composite/v1", **fields}``; fields non-empty, no ``protocol``."""
    if not fields:
        raise ValueError("a composite digest needs at least one field")
    if "protocol" in fields:
        raise ValueError("a composite digest's fields must not contain 'protocol'")
    return digest_artifact({"protocol": COMPOSITE_PROTOCOL, **fields})


def _check_member_path(path: str) -> None:
    if not path or path.startswith("/") or "\\" in path:
        raise ValueError(f"directory member path {path!r} must be relative and '/'-separated")
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        raise ValueError(f"directory member path {path!r} has an empty, '.' or '..' segment")


def digest_directory(members: Mapping[str, str]) -> str:
    """Digest of ``{"protocol": "eval-quality/directory/v1", "members": {path: digest}}``.

    At least one member; each path relative, '/'-separated, without empty/'.'/'..' segments; each
    value a ``sha256:`` digest. Member order is the JCS key order, so insertion order never matters.
    """
    if not members:
        raise ValueError("a directory digest needs at least one member")
    for path, digest in members.items():
        _check_member_path(path)
        if not isinstance(digest, str) or not _DIGEST_RE.match(digest):
            raise ValueError(f"directory member {path!r} is not a sha256 digest")
    return digest_artifact({"protocol": DIRECTORY_PROTOCOL, "members": dict(members)})
