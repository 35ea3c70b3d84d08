"""The local corpus adapter: resolves a private reference to bytes under a corpus root (preflight-adapter.md §6).

Rules, in order: (1) lexical precheck, no I/O — the POSIX-normalized reference must be relative and
contain no ``..`` segment; (2) exactly one read of the whole file; (3) after the read, the real path
of the target must be the root or lie inside it (a symlink escaping the root is refused). Every
failure is a ``port-failure``. The adapter never checks digests: recomputing them is the core's job.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from evalquality_core.faults import RuntimeFault

_REQUEST = "CorpusResolveRequest"


class LocalCorpusAdapter:
    """A corpus port over a directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def resolve(self, private_ref: str) -> bytes:
        """The bytes of ``<root>/<private_ref>``; ``port-failure`` when it is unsafe or unreadable."""
        normalized = posixpath.normpath(private_ref)
        if posixpath.isabs(normalized):
            raise RuntimeFault("port-failure", _REQUEST, f'the private reference "{private_ref}" is absolute')
        if ".." in normalized.split("/"):
            raise RuntimeFault(
                "port-failure", _REQUEST, f'the private reference "{private_ref}" still contains a ".." segment after normalizing'
            )
        target = self.root / normalized
        try:
            data = target.read_bytes()
        except OSError as exc:
            raise RuntimeFault(
                "port-failure", "CorpusResolveResponse", f'the private reference "{private_ref}" could not be read: {exc.strerror}'
            ) from None
        try:
            real_root = os.path.realpath(self.root, strict=True)
            real_target = os.path.realpath(target, strict=True)
        except OSError:
            raise RuntimeFault(
                "port-failure", _REQUEST, f'the private reference "{private_ref}" could not be resolved to a real path inside the root'
            ) from None
        if real_target != real_root and not real_target.startswith(real_root + os.sep):
            raise RuntimeFault("port-failure", _REQUEST, f'the private reference "{private_ref}" resolves outside the corpus root')
        return data
