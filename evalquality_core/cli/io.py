"""Reading inputs and writing artifacts for the CLI (preflight-adapter.md §7.3).

Inputs: a path, or ``-`` for stdin (at most one input per invocation may be ``-``). Outputs: canonical
JSON plus one newline, to stdout when ``--out`` is absent, to the file when ``--out`` ends in ``.json``
(any case), else to ``<dir>/<kind>.json``. ``--out`` may never resolve to an input.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from evalquality_core.canonical.json import scan_json, serialize_artifact
from evalquality_core.faults import RuntimeFault


class UsageError(click.UsageError):
    """A usage error: exits 64 with ``eval-quality: usage: <msg>``."""


class PathError(UsageError):
    """A filesystem path error on an input or output (ENOENT, EACCES, EISDIR, …): exits 64."""


def check_single_stdin(inputs: Mapping[str, str | None]) -> None:
    """Refuse more than one input naming ``-`` (stdin)."""
    dashes = [flag for flag, value in inputs.items() if value == "-"]
    if len(dashes) > 1:
        raise UsageError(f'only one input may read stdin, but --{dashes[0]} and --{dashes[1]} both name "-"')


def read_bytes(flag: str, value: str | None) -> bytes:
    """The raw bytes of an input: stdin for ``-`` or ``None``, else the file."""
    if value is None or value == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(value).read_bytes()
    except OSError as exc:
        code = _errno_name(exc)
        raise PathError(f'open "{value}": {code}') from None


def read_json(flag: str, value: str | None, schema_name: str) -> Any:
    """Read and strictly parse a JSON input; a parse error is ``schema-parse-failure`` naming the flag."""
    data = read_bytes(flag, value)
    try:
        return scan_json(data, schema_name)
    except RuntimeFault as fault:
        if fault.code == "schema-parse-failure":
            where = "" if value in (None, "-") else f" ({value})"
            raise RuntimeFault(
                "schema-parse-failure", schema_name, f"--{flag}{where} is not JSON: {fault.detail}"
            ) from None
        raise


def _errno_name(exc: OSError) -> str:
    import errno

    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


def out_path(out: str | None, kind: str) -> Path | None:
    """Where ``--out`` sends an artifact of ``kind`` (e.g. ``eval-contract``); ``None`` for stdout."""
    if out is None:
        return None
    if out.lower().endswith(".json"):
        return Path(out)
    return Path(out) / f"{kind}.json"


def check_out_not_input(out: Path | None, inputs: Mapping[str, str | None]) -> None:
    """Refuse an ``--out`` that resolves to any input file (same path, or same device and inode)."""
    if out is None:
        return
    resolved = out.resolve()
    for flag, value in inputs.items():
        if value in (None, "-"):
            continue
        candidate = Path(value)
        same = candidate.resolve() == resolved
        if not same and out.exists() and candidate.exists():
            a, b = os.stat(out), os.stat(candidate)
            same = (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
        if same:
            raise UsageError(f'--out resolves to "{resolved}", which is also --{flag} "{value}"')


def write_artifact(value: Any, out: Path | None) -> None:
    """Write the artifact as canonical JSON plus one newline, to ``out`` or stdout."""
    data = serialize_artifact(value)
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, out)  # atomic: a reader never sees half an artifact
    except OSError as exc:
        raise PathError(f'write "{out}": {_errno_name(exc)}') from None
