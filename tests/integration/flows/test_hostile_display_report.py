"""Hostile suite names and a hostile tool server, through a real ``python -m flows.contract_strength`` run:
the HTML report, the Markdown summary and the table artifacts show them literally and escaped.

Two copies of corpus/suites/notes-tools: one under a folder named like a ``javascript:`` URL, an HTML
tag and a Markdown link (its server clean, so its probes are scored and the report links their
evidence files); one whose server writes terminal escapes to stderr and dies during initialize (its
probes Invalid, the fault quoted in the pre-flight outcome and the basis).
"""

from __future__ import annotations

import contextlib
import html
import json
import shutil
import sqlite3
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.integration.flows.test_hostile_display import CORPUS, RAW, SHOWN, _environment, _make_hostile

PROJECT_ROOT = Path(__file__).resolve().parents[3]

# Its module fixture runs the strength flow once: one worker builds it (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hostile-display-report")]

#: A folder name that is a javascript: URL, an HTML tag with a handler, and a Markdown link at once.
NAME = "javascript:alert(1) <img src=x onerror=alert(2)> [x](y) a|b"
#: That name in Markdown that renders it literally, written from the rule (ASCII punctuation escaped).
NAME_MARKDOWN = "javascript\\:alert\\(1\\) \\<img src\\=x onerror\\=alert\\(2\\)\\> \\[x\\]\\(y\\) a\\|b"
ESCAPING = "escaping-server"


def _value(data: str) -> Any:
    """An artifact's data as stored: JSON, whose value may itself be JSON text (a table's rows)."""
    value = json.loads(data)
    return json.loads(value) if isinstance(value, str) and value.startswith("[") else value


class _Page(HTMLParser):
    """Every start tag with its attributes, and the page's text, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def strength_run(tmp_path_factory: pytest.TempPathFactory, migrated_prefect_db: Path) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("hostile-report")
    suites, out, home = root / "suites", root / "out", root / "home"
    shutil.copytree(CORPUS / "notes-tools", suites / NAME)
    shutil.copytree(CORPUS / "notes-tools", suites / ESCAPING)
    _make_hostile(suites / ESCAPING / "system" / "notes_tool_server.py", ("stderr",), 3)
    shutil.copy(CORPUS.parent / "scoring-policy.json", root / "scoring-policy.json")
    done = subprocess.run(
        [sys.executable, "-m", "flows.contract_strength", "--suites", str(suites), "--out", str(out),
         "--baseline", str(root / "expected-strength.json"), "--concurrency", "2"],
        cwd=PROJECT_ROOT, env=_environment(home, migrated_prefect_db), capture_output=True, timeout=900,
    )
    (root / "output.txt").write_bytes(done.stdout + b"\n----\n" + done.stderr)  # for whoever debugs a failure
    return {"done": done, "report": out / "strength-report.html", "database": home / "prefect" / "prefect.db",
            "template": migrated_prefect_db}


def test_the_html_report_shows_names_and_target_text_literally(strength_run: dict[str, Any]) -> None:
    done = strength_run["done"]
    assert done.returncode in (0, 1, 2), done.stderr.decode("utf-8", "replace")[-3000:]
    for raw in RAW:
        assert raw not in done.stdout + done.stderr
    data = strength_run["report"].read_bytes()
    for raw in RAW:
        assert raw not in data, raw
    page = _Page()
    page.feed(data.decode("utf-8"))
    tags = {tag for tag, _ in page.tags}
    assert "img" not in tags and "script" not in tags
    hrefs = [attrs.get("href") or "" for tag, attrs in page.tags if tag == "a"]
    evidence = [href for href in hrefs if href.endswith(".json")]
    assert evidence, hrefs  # the clean suite's probes were scored: their evidence is linked
    # A link to a file beside the report is a relative path: the suite's name is never the URL's scheme.
    assert all(href.startswith("./") and ":" not in href for href in evidence), evidence
    assert not any(href.strip().lower().startswith("javascript") for href in hrefs)
    text = "".join(page.text)
    assert NAME in text  # shown as the literal name
    assert SHOWN in text  # what the server wrote, escaped


def test_the_markdown_summary_and_table_artifacts_hold_the_literal_name(strength_run: dict[str, Any]) -> None:
    with contextlib.closing(sqlite3.connect(f"file:{strength_run['database']}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT key, type, data, description, flow_run_id FROM artifact").fetchall()
    # The seeded database is a copy of this test process's own, which may already hold other runs'
    # artifacts: only this run's flow runs count.
    with contextlib.closing(sqlite3.connect(f"file:{strength_run['template']}?mode=ro", uri=True)) as db:
        earlier = {flow_run for (flow_run,) in db.execute("SELECT id FROM flow_run")}
    rows = [row[:4] for row in rows if row[4] not in earlier]
    for row in rows:
        for value in row:
            for raw in RAW:
                assert value is None or raw.decode() not in value, (raw, row)
    (summary,) = [data for key, _, data, _ in rows if key == "contract-strength-summary"]
    assert f"| {NAME_MARKDOWN} |" in _value(summary), summary
    tables = [(key, data, description) for key, kind, data, description in rows if kind == "table"]
    assert len(tables) == 2
    (escaping,) = [_value(data) for key, data, _ in tables if ESCAPING in key]
    assert escaping and all(SHOWN in row["pre-flight"] for row in escaping), escaping
    described = [description for _, _, description in tables if NAME_MARKDOWN in description]
    assert described and "<img" not in html.unescape(described[0]).replace("\\<img", "")
