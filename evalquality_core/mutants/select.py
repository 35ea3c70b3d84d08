"""Which valid mutants run: at most one per line (``--per-line 1``) and a seeded sample (``--sample N --seed X``).

Both choices are made by a digest order — ``sha256(seed, mutant id)`` — instead of a random generator,
so a sample is the same on every machine and every Python version, and a stage stays pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def draw_order(seed: int, mutant_id: str) -> str:
    """The sort key that orders mutants for a seeded choice."""
    return hashlib.sha256(f"{seed}\0{mutant_id}".encode()).hexdigest()


def per_line(items: Sequence[T], line_of: Callable[[T], tuple[str, int]], id_of: Callable[[T], str], limit: int, seed: int) -> list[T]:
    """At most ``limit`` items per (file, line), chosen by the seeded order; source order kept."""
    by_line: dict[tuple[str, int], list[T]] = {}
    for item in items:
        by_line.setdefault(line_of(item), []).append(item)
    kept = {id(item) for group in by_line.values() for item in sorted(group, key=lambda i: draw_order(seed, id_of(i)))[:limit]}
    return [item for item in items if id(item) in kept]


def sample(items: Sequence[T], id_of: Callable[[T], str], size: int | None, seed: int) -> list[T]:
    """``size`` items chosen by the seeded order (all when ``size`` is None or not smaller); source order kept."""
    if size is None or size >= len(items):
        return list(items)
    chosen = {id(item) for item in sorted(items, key=lambda i: draw_order(seed, id_of(i)))[:size]}
    return [item for item in items if id(item) in chosen]
