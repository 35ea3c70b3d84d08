"""A toy Notes HTTP API (the worked example's system under test): GET /notes/{id}, GET /notes, PATCH /notes/{id}.

Run as ``python notes_api.py --port N`` from the working directory that holds the state:

* ``notes.json``: ``{"notes": [note...], "unlisted": [id...], "revision": n}``; a note is an object with ``id``, ``title``,
  ``body``, ``tags`` and ``updatedAt`` (plus any field a PATCH added). ``unlisted`` ids are left out of
  the collection view (GET /notes) and nothing else; ``revision`` counts the writes, and every PATCH
  answer carries it as ``X-Store-Revision``.
* ``clock.json``: ``{"base": "<RFC 3339 UTC minute>", "ticks": n}``; the deterministic updatedAt clock.
  Every accepted PATCH advances it one minute, whether or not the write is stored.

State lives in those files only, so a server started afresh for every call sees what earlier calls
wrote. The server binds 127.0.0.1 and answers JSON (``{"ok": ..., ...}``) on every route.
"""

import datetime
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


def load():
    with open("notes.json", encoding="utf-8") as handle:
        return json.load(handle)


def save(store):
    store["revision"] = store.get("revision", 0) + 1
    with open("notes.json.tmp", "w", encoding="utf-8") as handle:
        json.dump(store, handle, sort_keys=True, indent=1)
    os.replace("notes.json.tmp", "notes.json")


def tick():
    with open("clock.json", encoding="utf-8") as handle:
        clock = json.load(handle)
    clock["ticks"] += 1
    with open("clock.json", "w", encoding="utf-8") as handle:
        json.dump(clock, handle, sort_keys=True)
    base = datetime.datetime.strptime(clock["base"], "%Y-%m-%dT%H:%M:%SZ")
    return (base + datetime.timedelta(minutes=clock["ticks"])).strftime("%Y-%m-%dT%H:%M:%SZ")


def problem(patch):
    """Why a PATCH body is malformed, or None."""
    if not isinstance(patch, dict):
        return "the body must be a JSON object"
    for key in ("title", "body"):
        if key in patch and not isinstance(patch[key], str):
            return f"{key} must be a string"
    if "tags" in patch and (not isinstance(patch["tags"], list) or not all(isinstance(t, str) for t in patch["tags"])):
        return "tags must be an array of strings"
    if "id" in patch or "updatedAt" in patch:
        return "id and updatedAt are not writable"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        return

    def answer(self, status, payload, content_type="application/json"):
        data = json.dumps(payload, sort_keys=True).encode("utf-8")
        self.send_response_only(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if self.command == "PATCH":  # which store revision the answer left behind (0: never written)
            self.send_header("X-Store-Revision", str(load().get("revision", 0)))
        self.end_headers()
        self.wfile.write(data)

    def find(self, store):
        note_id = self.path.split("?", 1)[0][len("/notes/"):]
        for note in store["notes"]:
            if note["id"] == note_id:
                return note
        return None

    def do_GET(self):
        store = load()
        path = self.path.split("?", 1)[0]
        if path == "/notes":
            listed = [note for note in store["notes"] if note["id"] not in store.get("unlisted", [])]
            return self.answer(200, {"ok": True, "notes": listed})
        if path.startswith("/notes/"):
            note = self.find(store)
            if note is None:
                return self.answer(404, {"ok": False, "error": "no such note"})
            return self.answer(200, {"ok": True, "note": note})
        return self.answer(404, {"ok": False, "error": "no such route"})

    def do_PATCH(self):
        if not self.path.startswith("/notes/"):
            return self.answer(404, {"ok": False, "error": "no such route"})
        length = int(self.headers.get("Content-Length") or 0)
        try:
            patch = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            return self.answer(400, {"ok": False, "error": "the body is not JSON"})
        store = load()
        note = self.find(store)
        if note is None:
            return self.answer(404, {"ok": False, "error": "no such note"})
        why = problem(patch)
        if why is not None:
            return self.answer(400, {"ok": False, "error": why})
        updated = dict(note, **patch)
        updated["updatedAt"] = tick()
        store["notes"] = [updated if each["id"] == note["id"] else each for each in store["notes"]]
        save(store)
        return self.answer(200, {"ok": True, "note": updated})


def main():
    port = int(sys.argv[sys.argv.index("--port") + 1])
    server = HTTPServer(("127.0.0.1", port), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
