"""Reading inputs and writing artifacts for the CLI (preflight-adapter.md §7.3).

Inputs: a path, or ``-`` for stdin (at most one input per invocation may be ``-``). Outputs: canonical
JSON plus one newline, to stdout when ``--out`` is absent, to the file when ``--out`` ends in ``.json``
(any case), else to ``<dir>/<kind>.json``. ``--out`` may never resolve to an input.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from evalquality_core.canonical.json import scan_json, serialize_artifact
from evalquality_core.faults import RuntimeFault
from evalquality_core.suite.load import DEFAULT_MAX_INPUT_BYTES as _SUITE_INPUT_CAP
from evalquality_core.suite.load import input_cap


class UsageError(click.UsageError):
    """A usage error: exits 64 with ``eval-quality: usage: <msg>``."""


class PathError(UsageError):
    """A filesystem path error on an input or output (ENOENT, EACCES, EISDIR, …): exits 64."""


def check_single_stdin(inputs: Mapping[str, str | None]) -> None:
    """Refuse more than one input naming ``-`` (stdin)."""
    dashes = [flag for flag, value in inputs.items() if value == "-"]
    if len(dashes) > 1:
        raise UsageError(f'only one input may read stdin, but --{dashes[0]} and --{dashes[1]} both name "-"')


#: Inputs larger than this are refused before they are parsed (``--in /dev/zero`` must not take
#: gigabytes); ``EVALQUALITY_MAX_INPUT_BYTES`` overrides it. Real artifacts are kilobytes. The flows'
#: suite reader applies the same cap (``evalquality_core.suite.load.input_cap``).
DEFAULT_MAX_INPUT_BYTES = _SUITE_INPUT_CAP


def max_input_bytes() -> int:
    """The input size cap in force (``EVALQUALITY_MAX_INPUT_BYTES``, else 64 MiB)."""
    try:
        return input_cap()
    except ValueError as problem:
        raise UsageError(str(problem)) from None


def read_bytes(flag: str, value: str | None, schema_name: str = "input") -> bytes:
    """The raw bytes of an input: stdin for ``-`` or ``None``, else the file; at most the size cap
    (one byte more is read to know it is exceeded: ``budget-exhausted``, exit 5)."""
    cap = max_input_bytes()
    if value is None or value == "-":
        data = sys.stdin.buffer.read(cap + 1)
    else:
        try:
            with open(value, "rb") as handle:
                data = handle.read(cap + 1)
        except OSError as exc:
            code = _errno_name(exc)
            raise PathError(f'open "{value}": {code}') from None
    if len(data) > cap:
        where = "stdin" if value in (None, "-") else f'"{value}"'
        raise RuntimeFault(
            "budget-exhausted",
            schema_name,
            f"--{flag} ({where}) is larger than {cap} bytes; nothing was parsed (raise EVALQUALITY_MAX_INPUT_BYTES to allow it)",
        )
    return data


def read_json(flag: str, value: str | None, schema_name: str) -> Any:
    """Read and strictly parse a JSON input; a parse error is ``schema-parse-failure`` naming the flag."""
    data = read_bytes(flag, value, schema_name)
    try:
        return scan_json(data, schema_name)
    except RuntimeFault as fault:
        if fault.code == "schema-parse-failure":
            # §7.3: only the repeatable inputs (--record, --evidence) name the file in the message.
            where = f" ({value})" if flag in ("record", "evidence") and value not in (None, "-") else ""
            raise RuntimeFault(
                "schema-parse-failure", schema_name, f"--{flag}{where} is not JSON: {fault.detail}"
            ) from None
        raise


_PATH_ERRNOS = frozenset(
    {errno.ENOENT, errno.EACCES, errno.EISDIR, errno.ENOTDIR, errno.EPERM, errno.ELOOP, errno.ENAMETOOLONG}
)


def _errno_name(exc: OSError) -> str:
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
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, out)  # atomic: a reader never sees half an artifact
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # a full disk never leaves a temp file behind
        if exc.errno in _PATH_ERRNOS:
            raise PathError(f'write "{out}": {_errno_name(exc)}') from None
        exc.filename = str(out)
        raise  # ENOSPC, EFBIG, EIO: one line and exit 5 (§7.3), from main
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
