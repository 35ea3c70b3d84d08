"""Hostile targets and hostile suite names, through a real ``python -m flows.preflight`` run.

Three suites copied from corpus/suites under hostile folder names, each system made hostile:

* a tool server (notes-tools) that writes terminal escapes to stderr and exits during initialize;
* an HTTP service (notes-api) that does the same before accepting connections;
* a command target (notes) that writes them to stdout and stderr and exits 0.

Nothing the targets wrote, nor the names, may reach the console, Prefect's logs, state messages or
artifacts raw (evalquality_core/printable.py); what the targets wrote must still be *shown*, escaped.
A suite named like a Markdown link and an HTML tag must show as that literal name in the Markdown
artifact: no link, no tag, no extra table cell.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.prefect_db import seed_prefect_home

PROJECT_ROOT = Path(__file__).resolve().parents[3]
CORPUS = PROJECT_ROOT / "corpus" / "suites"

# Its module fixture runs the flows once: one worker builds it (--dist loadgroup), not each worker it lands on.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hostile-display")]

#: What every hostile target writes: set the window title, clear the screen, move up a line, erase
#: backwards, return the carriage, an 8-bit CSI (U+009B) and DEL, and a right-to-left override.
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[1A\x08\x08\rFAKE all passed\u009b31m\x7f\u202e"
#: Raw bytes none of the run's output may hold (UTF-8 of U+009B and U+202E included).
RAW = (b"\x1b", b"\x07", b"\x08", b"\r", b"\x7f", "\u009b".encode(), "\u202e".encode())
#: The same text as it must be shown, written from the rule in evalquality_core/printable.py.
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[1A\\x08\\x08\\rFAKE all passed\\x9b31m\\x7f\\u202e"

#: A suite folder named like a Markdown link, an HTML tag, a code span and a table cell break.
MARKDOWN_NAME = "[x](javascript:alert(1)) <img src=x onerror=alert(2)> a|b `c` *d*"
#: That name as Markdown that renders it literally (every ASCII punctuation backslash-escaped).
MARKDOWN_SHOWN = (
    "\\[x\\]\\(javascript\\:alert\\(1\\)\\) \\<img src\\=x onerror\\=alert\\(2\\)\\> a\\|b \\`c\\` \\*d\\*"
)
#: A suite folder whose name itself holds an escape sequence and a newline.
ESCAPE_NAME = "api\x1b[31m\nred"


def _hostile_prelude(streams: tuple[str, ...], exit_code: int | None) -> str:
    writes = "".join(f"_hostile_sys.{s}.write({HOSTILE!r} + '\\n'); _hostile_sys.{s}.flush()\n" for s in streams)
    leave = f"_hostile_sys.exit({exit_code})\n" if exit_code is not None else ""
    return f"import sys as _hostile_sys\n{writes}{leave}"


def _make_hostile(script: Path, streams: tuple[str, ...], exit_code: int | None) -> None:
    """Put the hostile writes at the top of the system's script (after a ``from __future__`` line)."""
    lines = script.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    if lines[at].startswith("from __future__"):
        at += 1
    lines.insert(at, _hostile_prelude(streams, exit_code))
    script.write_text("".join(lines), encoding="utf-8")


def _copy_suite(source: str, suites: Path, name: str, keep_probes: int) -> Path:
    target = suites / name
    shutil.copytree(CORPUS / source, target, ignore=shutil.ignore_patterns("trials", "evidence"))
    for extra in sorted((target / "probes").glob("*.json"))[keep_probes:]:
        extra.unlink()
    return target


def _environment(home: Path, migrated: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    seed_prefect_home(home / "prefect", migrated)
    return {
        **env, "EVALQUALITY_HOME": str(home), "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120", "EVALQUALITY_PROGRESS_SECONDS": "0",
    }


def _rows(database: Path, query: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        db.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
        return db.execute(query).fetchall()


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory, migrated_prefect_db: Path) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("hostile")
    suites, out, home = root / "suites", root / "out", root / "home"
    tools = _copy_suite("notes-tools", suites, MARKDOWN_NAME, keep_probes=1)
    _make_hostile(tools / "system" / "notes_tool_server.py", ("stderr",), 3)
    api = _copy_suite("notes-api", suites, ESCAPE_NAME, keep_probes=1)
    _make_hostile(api / "system" / "notes_api.py", ("stderr",), 3)
    command = _copy_suite("notes", suites, "notes-command", keep_probes=1)
    _make_hostile(command / "system" / "notes.py", ("stdout", "stderr"), None)
    done = subprocess.run(
        [sys.executable, "-m", "flows.preflight", "--suites", str(suites), "--out", str(out),
         "--baseline", str(root / "expected-preflight.json"), "--concurrency", "2"],
        cwd=PROJECT_ROOT, env=_environment(home, migrated_prefect_db), capture_output=True, timeout=600,
    )
    (root / "output.txt").write_bytes(done.stdout + b"\n----\n" + done.stderr)  # for whoever debugs a failure
    return {"done": done, "database": home / "prefect" / "prefect.db", "out": out, "template": migrated_prefect_db}


def test_the_console_shows_what_targets_wrote_escaped_and_nothing_raw(hostile_run: dict[str, Any]) -> None:
    done = hostile_run["done"]
    output = done.stdout + done.stderr
    assert done.returncode in (0, 1, 2), output.decode("utf-8", "replace")[-3000:]
    assert b"Traceback" not in output
    for raw in RAW:
        assert raw not in output, (raw, output.decode("utf-8", "replace")[-3000:])
    text = output.decode("utf-8")
    # The tool server's stderr is quoted whole in its port-failure fault, the service's as a tail on one
    # line (its CR made a space): shown, escaped.
    assert SHOWN in text, text[-3000:]
    assert SHOWN.replace("\\r", " ") in text
    assert "api\\x1b[31m\\nred" in text  # the hostile suite name too


def test_prefect_logs_states_and_artifacts_hold_nothing_raw(hostile_run: dict[str, Any]) -> None:
    database = hostile_run["database"]
    logs = [message for (message,) in _rows(database, "SELECT message FROM log")]
    states = [m for (m,) in _rows(database, "SELECT message FROM task_run_state UNION ALL SELECT message FROM flow_run_state")
              if m]
    artifacts = [value for row in _rows(database, "SELECT data, description FROM artifact") for value in row if value]
    assert logs and artifacts
    for text in (*logs, *states, *artifacts):
        for raw in RAW:
            assert raw.decode() not in text, (raw, text)
    # What the targets wrote is in the Logs tab, escaped (the leg faults are WARNING lines).
    assert any(SHOWN in message for message in logs), logs
    assert any(SHOWN in state for state in states), states


def test_a_hostile_suite_name_is_literal_in_the_markdown_artifact(hostile_run: dict[str, Any]) -> None:
    # The seeded database is a copy of this test process's own, which may already hold other runs' reports:
    # only this run's flow runs count.
    earlier = {flow_run for (flow_run,) in _rows(hostile_run["template"], "SELECT id FROM flow_run")}
    (markdown,) = [data for (key, data, flow_run) in
                   _rows(hostile_run["database"], "SELECT key, data, flow_run_id FROM artifact")
                   if key == "preflight-report" and flow_run not in earlier]
    markdown = json.loads(markdown)  # stored as JSON text
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    named = [row for row in rows if MARKDOWN_SHOWN in row]
    assert named, markdown
    for row in rows:
        # Every row has the table's seven cells: no name or message adds a cell (an unescaped "|").
        assert len(re.findall(r"(?<!\\)(?:\\\\)*\|", row)) == 8, row
    # No Markdown link or HTML tag can form: every [, ], (, ), <, > and ` is backslash-escaped.
    for row in named:
        assert re.search(r"(?<!\\)(?:\\\\)*[\[\]()<>`]", row) is None, row
    assert re.search(r"(?<!\\)<img", markdown) is None and "](javascript" not in markdown
    assert "api\\\\x1b\\[31m\\\\nred" in markdown  # the escaped name, its backslashes Markdown-escaped
