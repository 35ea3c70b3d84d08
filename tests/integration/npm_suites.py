"""Suites over real npm packages, built the way a user builds one: the suite's own files (contract,
probes, mutations of the package's JS, fixtures) live in ``tests/integration/suites/<name>/``; the
system is the installed package, with the file the mutations plant defects in copied out of
``node_modules/`` (a shared read-only dependency layer, which a mutation may not touch)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.npm_memory import ENTRY

SUITES = Path(__file__).resolve().parent / "suites"
NODE = shutil.which("node") or "node"
#: npm's ``.bin`` links are left out: the suites start the package's own entry with ``node``, and a link in a
#: system is refused outside a layer (``suite check``'s generate step).
NO_BIN = shutil.ignore_patterns(".bin")


def json_server_suite(root: Path, modules: Path) -> Path:
    """The json-server suite under ``root``: ``system/node_modules`` (its dependencies, a layer) and
    ``system/json-server`` (the package itself, where the mutations apply), served on ``{port}``."""
    suite = root / "json-server"
    shutil.copytree(SUITES / "json-server", suite)
    shutil.copytree(modules, suite / "system" / "node_modules", symlinks=True, ignore=NO_BIN)
    shutil.copytree(modules / "json-server", suite / "system" / "json-server", symlinks=True)
    (suite / "targets.toml").write_text(
        "[service]\n"
        f'command = [{json.dumps(NODE)}, "../system/json-server/lib/cli/bin.js", "db.json", "--host", "127.0.0.1",'
        ' "--port", "{port}", "--quiet"]\n'
        'cwd = "work"\n'
        'port_placeholder = "port"\n'
        "ready_timeout_ms = 30000\n\n"
        "[[target]]\n"
        'kind = "api"\n'
        'interface_id = "posts"\n'
        'scheme = "http"\n'
        'host = "127.0.0.1"\n'
        'port = "{port}"\n'
        'addresses = ["127.0.0.1"]\n'
        'methods = ["GET", "PATCH", "DELETE"]\n'
        'safe_methods = ["GET"]\n'
        "max_redirects = 0\n"
        "max_elapsed_ms = 20000\n"
        "max_request_bytes = 65536\n"
        "max_response_bytes = 1048576\n"
    )
    return suite


def memory_server_suite(root: Path, modules: Path) -> Path:
    """The server-memory suite under ``root``: ``system/node_modules`` (a layer) and
    ``system/server-memory`` (the package itself, where the mutation applies); the graph is kept in the
    leg's ``work/memory.jsonl``."""
    suite = root / "server-memory"
    shutil.copytree(SUITES / "server-memory", suite)
    shutil.copytree(modules, suite / "system" / "node_modules", symlinks=True, ignore=NO_BIN)
    package = modules / "@modelcontextprotocol" / "server-memory"
    shutil.copytree(package, suite / "system" / "server-memory", symlinks=True)
    entry = "../system/server-memory/" + ENTRY.split("server-memory/", 1)[1]
    (suite / "targets.toml").write_text(
        "[[target]]\n"
        'kind = "mcp"\n'
        'interface_id = "memory"\n'
        f"target = {json.dumps(NODE)}\n"
        f'target_args = ["--preserve-symlinks", "--preserve-symlinks-main", "{entry}"]\n'
        'tools = ["create_entities", "read_graph"]\n'
        'cwd = "work"\n'
        'server_environment = { MEMORY_FILE_PATH = "{workspace}/work/memory.jsonl" }\n'
        "max_elapsed_ms = 60000\n"
        "max_output_bytes = 1048576\n"
    )
    return suite
