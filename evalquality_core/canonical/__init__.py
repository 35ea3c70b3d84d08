"""Canonical JSON (RFC 8785) and ``sha256:`` digests (artifacts.md §1)."""

from evalquality_core.canonical.digest import (
    digest_artifact,
    digest_bytes,
    digest_composite,
    digest_directory,
    digest_json,
)
from evalquality_core.canonical.json import (
    MAX_NESTING_DEPTH,
    MAX_SAFE_INTEGER,
    canonical_bytes,
    check_value_domain,
    scan_json,
    serialize_artifact,
)

__all__ = [
    "MAX_NESTING_DEPTH",
    "MAX_SAFE_INTEGER",
    "canonical_bytes",
    "check_value_domain",
    "digest_artifact",
    "digest_bytes",
    "digest_composite",
    "digest_directory",
    "digest_json",
    "scan_json",
    "serialize_artifact",
]
