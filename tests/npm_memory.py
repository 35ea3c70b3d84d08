"""The real npm package ``@modelcontextprotocol/server-memory`` (a third-party MCP tool server whose
``node_modules/`` is ~29 MB in ~4,000 files, npm ``.bin`` links included), installed once into a folder
the caller owns, with npm's cache in a temp folder too (never the user's home)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

PACKAGE = "@modelcontextprotocol/server-memory"
#: The server's entry point, relative to the system folder holding ``node_modules/``.
ENTRY = "node_modules/@modelcontextprotocol/server-memory/dist/index.js"


class NpmInstallFailed(RuntimeError):
    """``npm install`` could not run or failed (the registry unreachable, no npm)."""


def install_memory_server(prefix: Path) -> Path:
    """``npm install --no-audit --no-fund --prefix <prefix>`` of :data:`PACKAGE`; return its ``node_modules``."""
    npm = shutil.which("npm")
    if npm is None:
        raise NpmInstallFailed("npm is not installed (node v20 and npm are needed for the real MCP server suite)")
    cache = prefix / "npm-cache"
    environment = {**os.environ, "npm_config_cache": str(cache), "npm_config_update_notifier": "false",
                   "HOME": str(prefix / "home")}
    command = [npm, "install", "--no-audit", "--no-fund", "--cache", str(cache), "--prefix", str(prefix / "install"), PACKAGE]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NpmInstallFailed(f"{' '.join(command)} took more than 600 s (is the npm registry reachable?)") from None
    modules = prefix / "install" / "node_modules"
    if done.returncode != 0 or not (modules.parent / ENTRY).is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise NpmInstallFailed(f"{' '.join(command)} exited {done.returncode} (is the npm registry reachable?): "
                               + " | ".join(tail))
    return modules
