"""Staging the notes-api suite's HTTP service for the adapter tests, without the suite tools.

``stage(tmp, fixture="three-notes", mutation=None)`` builds a workspace as the suite staging does:
``<ws>/system/`` (the service, with at most one declared mutation of ``mutations/`` applied) and
``<ws>/work/`` (the fixture set's state files). ``service_adapter()`` is the suite's registry as a
``ServiceAdapter``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from evalquality_core.adapters.http_service import ServiceAdapter
from evalquality_core.probe.targets import parse_targets

SUITE = Path(__file__).resolve().parents[2] / "corpus" / "suites" / "notes-api"


def stage(tmp: Path, fixture: str = "three-notes", mutation: str | None = None) -> Path:
    """A fresh workspace for the notes-api service under ``tmp``."""
    workspace = tmp / f"ws-{fixture}-{mutation or 'clean'}"
    shutil.copytree(SUITE / "system", workspace / "system")
    shutil.copytree(SUITE / "fixtures" / fixture, workspace / "work")
    if mutation is not None:
        declared = json.loads((SUITE / "mutations" / f"{mutation}.json").read_text(encoding="utf-8"))
        target = workspace / declared["target"]
        text = target.read_text(encoding="utf-8")
        assert text.count(declared["find"]) == 1, mutation
        target.write_text(text.replace(declared["find"], declared["replace"]), encoding="utf-8")
    return workspace


def service_adapter(**overrides: Any) -> ServiceAdapter:
    """The suite's registry as a service adapter (``{python}`` is this interpreter)."""
    registry = parse_targets((SUITE / "targets.toml").read_text(encoding="utf-8"), str(SUITE / "targets.toml"))
    return ServiceAdapter(registry, {"python": sys.executable, **overrides})


def api_request(method: str, path_template: str, *, probe_id: str = "leg-1", operation: str = "call",
                path: dict[str, Any] | None = None, body: Any = None) -> dict[str, Any]:
    """A wire api request to the notes-api interface."""
    return {
        "kind": "api", "probeId": probe_id, "interfaceId": "notes-api", "operationId": operation,
        "method": method, "pathTemplate": path_template,
        "channels": {"path": path or {}, "query": {}, "header": {},
                     "body": {"kind": "absent"} if body is None else {"kind": "json", "value": body}},
    }


def processes_working_in(workspace: Path) -> list[int]:
    """Pids of live processes whose working directory is ``workspace`` or below it (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = Path(os.readlink(entry / "cwd"))
            except OSError:
                continue
            if cwd == workspace or workspace in cwd.parents:
                found.append(int(entry.name))
    return found
