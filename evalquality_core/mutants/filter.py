"""The static filter: what is never run.

* **Invalid** — the mutated file does not compile (``compile()``), or the mutation changes nothing;
* **Duplicate** — the mutated file is byte-identical to one an earlier mutant (in source order) produced.

Both are reported with their reason and never staged.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalquality_core.canonical import digest_bytes


@dataclass(frozen=True)
class Rejection:
    """Why a candidate is not run: ``status`` Invalid or Duplicate, and one line of reason."""

    status: str
    reason: str


def compile_problem(text: str, filename: str) -> str | None:
    """Why ``text`` does not compile as Python (one line), or None when it does."""
    try:
        compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as problem:
        return f"does not compile: {problem.msg} at line {problem.lineno}"
    except ValueError as problem:  # e.g. a NUL byte in the source
        return f"does not compile: {problem}"
    return None


class StaticFilter:
    """Remembers the mutated sources it has seen (per target file) to name duplicates."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}

    def check(self, mutant_id: str, target: str, original: str, mutated: str) -> Rejection | None:
        """The rejection of one candidate, or None when it is to be run. Call in source order."""
        if mutated == original:
            return Rejection("Invalid", "the mutation changes nothing")
        problem = compile_problem(mutated, target)
        if problem is not None:
            return Rejection("Invalid", problem)
        key = (target, digest_bytes(mutated.encode("utf-8")))
        first = self._seen.get(key)
        if first is not None:
            return Rejection("Duplicate", f"the same source as {first}")
        self._seen[key] = mutant_id
        return None
