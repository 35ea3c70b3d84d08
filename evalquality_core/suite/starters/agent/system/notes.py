#!/usr/bin/env python3
"""A command-line notes store: the system under test of the `notes` suite.

Subcommands `get --id <id>`, `patch --id <id>` (a JSON object on stdin), and `list [--limit N]`.
State lives in `notes.json` in the working directory. Every answer is one JSON object on stdout
carrying `ok`; a validation error exits 2 and an unknown note exits 1, both with `ok: false` and an
`error` diagnostic. Standard library only, so it runs under any Python 3 interpreter.
"""

import json
import sys

STORE = "notes.json"
PATCHABLE = {"title": str, "body": str, "tags": list}


def load():
    with open(STORE, encoding="utf-8") as handle:
        return json.load(handle)


def save(store):
    with open(STORE, "w", encoding="utf-8") as handle:
        json.dump(store, handle, sort_keys=True, indent=1)
        handle.write("\n")


def answer(payload, code=0):
    sys.stdout.write(json.dumps(payload, sort_keys=True) + "\n")
    return code


def refuse(message, code=2):
    return answer({"ok": False, "error": message}, code)


def find(store, note_id):
    for note in store["notes"]:
        if note["id"] == note_id:
            return note
    return None


def read_options(argv, allowed):
    options = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        if not token.startswith("--") or token[2:] not in allowed or index + 1 >= len(argv):
            raise ValueError(f"unexpected argument {token!r}")
        options[token[2:]] = argv[index + 1]
        index += 2
    return options


def validate_patch(changes):
    if not isinstance(changes, dict) or not changes:
        return "the patch must be a non-empty JSON object"
    for key, value in changes.items():
        if key not in PATCHABLE:
            return f"unknown field {key!r}"
        if not isinstance(value, PATCHABLE[key]):
            return f"field {key!r} must be of type {PATCHABLE[key].__name__}"
        if key == "tags" and not all(isinstance(tag, str) for tag in value):
            return "every tag must be a string"
    return None


def command_get(argv):
    options = read_options(argv, {"id"})
    if "id" not in options:
        return refuse("--id is required")
    note = find(load(), options["id"])
    if note is None:
        return refuse(f"no note {options['id']!r}", 1)
    return answer({"ok": True, "note": note})


def command_patch(argv):
    options = read_options(argv, {"id"})
    if "id" not in options:
        return refuse("--id is required")
    try:
        changes = json.loads(sys.stdin.read() or "null")
    except json.JSONDecodeError:
        return refuse("stdin is not JSON")
    problem = validate_patch(changes)
    if problem is not None:
        return refuse(problem)
    store = load()
    note = find(store, options["id"])
    if note is None:
        return refuse(f"no note {options['id']!r}", 1)
    store["clock"] += 1
    note.update(changes)
    note["updatedAt"] = f"2026-01-01T00:00:{store['clock']:02d}Z"
    save(store)
    return answer({"ok": True, "note": note})


def command_list(argv):
    options = read_options(argv, {"limit"})
    notes = load()["notes"]
    if "limit" in options:
        if not options["limit"].isdigit():
            return refuse("--limit must be a non-negative integer")
        notes = notes[: int(options["limit"])]
    return answer({"ok": True, "notes": notes})


COMMANDS = {"get": command_get, "patch": command_patch, "list": command_list}


def main(argv):
    if not argv or argv[0] not in COMMANDS:
        return refuse("usage: notes.py get|patch|list [--option value ...]")
    try:
        return COMMANDS[argv[0]](argv[1:])
    except ValueError as problem:
        return refuse(str(problem))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
