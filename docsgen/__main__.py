"""``python -m docsgen``: rewrite every generated reference page under docs/ (``--check``: exit 1 when stale)."""

from __future__ import annotations

import sys

from docsgen.environment import render_environment
from docsgen.pages import DOCS, PAGES


def generated_pages() -> dict[str, str]:
    """Page path under docs/ → its freshly generated text."""
    return {**{path: render() for path, render in PAGES.items()}, "reference/environment.md": render_environment()}


def main(argv: list[str]) -> int:
    """Write the pages, or with ``--check`` name each stale one and exit 1."""
    stale = []
    for path, text in generated_pages().items():
        target = DOCS / path
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if "--check" not in argv:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"docs/{path}: {'stale' if '--check' in argv else 'rewritten'}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
