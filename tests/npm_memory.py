"""Real third-party npm packages installed once into a folder the caller owns, with npm's cache in a
temp folder too (never the user's home):

* ``@modelcontextprotocol/server-memory``: an MCP tool server whose ``node_modules/`` is ~29 MB in
  ~4,000 files, npm ``.bin`` links included;
* ``json-server``: a REST server over a JSON file (``GET/POST/PATCH/DELETE /<collection>/<id>``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

PACKAGE = "@modelcontextprotocol/server-memory"
#: The server's entry point, relative to the system folder holding ``node_modules/``.
ENTRY = "node_modules/@modelcontextprotocol/server-memory/dist/index.js"

#: json-server pinned (its 1.x line is a beta with another CLI).
JSON_SERVER = "json-server@0.17.4"
#: json-server's command line, relative to the system folder holding ``node_modules/``.
JSON_SERVER_ENTRY = "node_modules/json-server/lib/cli/bin.js"


class NpmInstallFailed(RuntimeError):
    """``npm install`` could not run or failed (the registry unreachable, no npm)."""


def install_npm_package(prefix: Path, package: str, entry: str) -> Path:
    """``npm install --no-audit --no-fund --prefix <prefix>/install <package>``; return its ``node_modules``.

    ``entry`` (relative to the install folder) must exist afterwards."""
    npm = shutil.which("npm")
    if npm is None:
        raise NpmInstallFailed("npm is not installed (node v20 and npm are needed for the real npm system suites)")
    cache = prefix / "npm-cache"
    environment = {**os.environ, "npm_config_cache": str(cache), "npm_config_update_notifier": "false",
                   "HOME": str(prefix / "home")}
    command = [npm, "install", "--no-audit", "--no-fund", "--cache", str(cache), "--prefix", str(prefix / "install"), package]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NpmInstallFailed(f"{' '.join(command)} took more than 600 s (is the npm registry reachable?)") from None
    modules = prefix / "install" / "node_modules"
    if done.returncode != 0 or not (modules.parent / entry).is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise NpmInstallFailed(f"{' '.join(command)} exited {done.returncode} (is the npm registry reachable?): "
                               + " | ".join(tail))
    return modules


def install_memory_server(prefix: Path) -> Path:
    """Install :data:`PACKAGE`; return its ``node_modules``."""
    return install_npm_package(prefix, PACKAGE, ENTRY)


def install_json_server(prefix: Path) -> Path:
    """Install :data:`JSON_SERVER`; return its ``node_modules``."""
    return install_npm_package(prefix, JSON_SERVER, JSON_SERVER_ENTRY)


def memory_suite(root: Path, modules: Path, *, memory_file: str | None, tools: tuple[str, ...] = ("create_entities", "read_graph")) -> Path:
    """A suite whose system is the installed memory server: ``system/node_modules`` and nothing else of ours.

    With ``memory_file`` the server keeps its graph there (node runs with ``--preserve-symlinks`` so a
    relative path resolves from the workspace's ``system/``, not from the layer store); without it the
    package's default applies: a ``memory.jsonl`` beside its own ``dist/index.js``, inside the layer."""
    node = shutil.which("node") or "node"
    suite = root / "memory"
    (suite / "fixtures" / "empty").mkdir(parents=True)
    (suite / "fixtures" / "empty" / "README").write_text("an empty working directory\n")
    (suite / "contract.json").write_text("{}\n")
    (suite / "suite.toml").write_text('system-id = "server-memory"\n[fixtures]\nempty = "."\n')
    shutil.copytree(modules, suite / "system" / "node_modules", symlinks=True)
    environment = "{}" if memory_file is None else json.dumps({"MEMORY_FILE_PATH": memory_file}).replace(":", " =")
    (suite / "targets.toml").write_text(
        "[[target]]\n"
        'kind = "mcp"\n'
        'interface_id = "memory"\n'
        f"target = {json.dumps(node)}\n"
        f'target_args = ["--preserve-symlinks", "--preserve-symlinks-main", "../system/{ENTRY}"]\n'
        f"tools = {json.dumps(list(tools))}\n"
        'cwd = "work"\n'
        f"server_environment = {environment}\n"
        "max_elapsed_ms = 60000\n"
        "max_output_bytes = 1048576\n"
    )
    return suite
