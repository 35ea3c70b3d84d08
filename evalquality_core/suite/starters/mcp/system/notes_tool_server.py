"""A notes store served as MCP tools over stdio (the ``mcp`` SDK): ``search_notes`` and ``create_note``.

The store is ``notes.json`` in the working directory. Deterministic: a note's id is derived from its
title, and ``filedAt`` from a logical clock kept in the store (no wall clock, no randomness), so the
same calls on the same store answer byte for byte alike. A call with an argument of the wrong type is
refused: the tool answers ``{"ok": false}`` with ``isError`` set.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

STORE = "notes.json"
server = MCPServer("notes-tools")


def load() -> dict[str, Any]:
    with open(STORE, encoding="utf-8") as handle:
        return json.load(handle)


def save(store: dict[str, Any]) -> None:
    scratch = STORE + ".tmp"
    with open(scratch, "w", encoding="utf-8") as handle:
        json.dump(store, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(scratch, STORE)


def refused() -> CallToolResult:
    """A refusal: ``{"ok": false}`` as the structured result, with the tool's error flag set."""
    return CallToolResult(content=[], structured_content={"ok": False}, is_error=True)


def answer(value: dict[str, Any]) -> CallToolResult:
    """A success: the structured result (and its JSON text for clients that read only content)."""
    text = TextContent(type="text", text=json.dumps(value, sort_keys=True))
    return CallToolResult(content=[text], structured_content=value, is_error=False)


def matches_of(store: dict[str, Any], query: str) -> list[dict[str, Any]]:
    needle = query.lower()
    return [
        note for note in sorted(store["notes"], key=lambda n: n["id"])
        if note["id"] == query or needle in note["title"].lower() or needle in note["body"].lower()
    ]


@server.tool()
def search_notes(query: Any, limit: Any = 20) -> CallToolResult:
    """Search the notes by id, or by text in their title or body; at most ``limit`` matches."""
    if not isinstance(query, str) or isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        return refused()
    found = matches_of(load(), query)
    result: dict[str, Any] = {
        "ok": True,
        "matches": [{"noteId": note["id"], "title": note["title"]} for note in found[:limit]],
        "totalCount": len(found),
    }
    if found:
        top = found[0]
        result["topMatch"] = {"noteId": top["id"], "title": top["title"], "body": top["body"]}
    return answer(result)


def note_id_for(store: dict[str, Any], title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "untitled"
    taken = {note["id"] for note in store["notes"]}
    candidate, n = f"n-{slug}", 1
    while candidate in taken:
        n += 1
        candidate = f"n-{slug}-{n}"
    return candidate


@server.tool()
def create_note(title: Any, body: Any = "") -> CallToolResult:
    """File a new note and answer with the id it was filed under."""
    if not isinstance(title, str) or not title.strip() or not isinstance(body, str):
        return refused()
    store = load()
    store["clock"] += 1
    note = {"id": note_id_for(store, title), "title": title, "body": body, "filedAt": f"2026-01-01T00:00:{store['clock']:02d}Z"}
    store["notes"].append(note)
    save(store)
    # The receipt counts the notes as the store now holds them on disk (read back, not remembered).
    return answer({"ok": True, "noteId": note["id"], "filedAt": note["filedAt"], "noteCount": len(load()["notes"])})


if __name__ == "__main__":
    server.run("stdio")
