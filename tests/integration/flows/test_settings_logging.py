"""``flows/settings.py``: the embedded Prefect server's own process keeps SQLAlchemy's errors off the console.

The server is a uvicorn child that inherits the flow's environment and stderr but never imports
``flows.settings``; the only way in is Prefect's logging file. The child here does what that server
does at start (build the app with the factory uvicorn is given, which configures logging) and then
logs the error SQLAlchemy's pool logs when a rollback is cancelled at shutdown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tasks.home import PROJECT_ROOT

_ENV_OF_A_FLOW = (
    "import json, os, flows.settings; print(json.dumps({k: v for k, v in os.environ.items() if k.startswith(('PREFECT_', 'EVALQUALITY_'))}))"
)
_SERVER_LIKE = (
    "import logging; from prefect.server.api.server import create_app; create_app(); "
    "logging.getLogger('sqlalchemy.pool.impl.AsyncAdaptedQueuePool').error('Exception during reset or similar'); "
    "logging.getLogger('somebody.else').error('other libraries still speak')"
)


def _clean_env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    env["EVALQUALITY_HOME"] = str(tmp_path / "home")
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    return env


def _flow_env(tmp_path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**_clean_env(tmp_path), **(extra or {})}
    out = subprocess.run([sys.executable, "-c", _ENV_OF_A_FLOW], env=env, capture_output=True, text=True, timeout=300, check=True)
    return {**env, **json.loads(out.stdout)}


def _server_stderr(env: dict[str, str]) -> str:
    # A generous timeout: the child imports Prefect's whole server (3-5 s alone, over a minute once on a
    # CI host at load average 8); it is a guard against a hang, not a measure.
    return subprocess.run([sys.executable, "-c", _SERVER_LIKE], env=env, capture_output=True, text=True, timeout=300, check=True).stderr


def test_the_embedded_servers_process_drops_sqlalchemy_errors_but_not_others(tmp_path):
    env = _flow_env(tmp_path)
    # With the root at WARNING (embedded mode sets CRITICAL) another library's error still shows: the file
    # only adds SQLAlchemy's logger, the rest of Prefect's configuration is unchanged.
    stderr = _server_stderr({**env, "PREFECT_LOGGING_ROOT_LEVEL": "WARNING"})
    assert "other libraries still speak" in stderr
    assert "Exception during reset" not in stderr


def test_without_the_logging_file_the_server_would_print_it(tmp_path):
    """The control: the same child with Prefect's stock logging.yml prints SQLAlchemy's error."""
    env = _flow_env(tmp_path)
    del env["PREFECT_LOGGING_SETTINGS_PATH"]
    assert "Exception during reset" in _server_stderr({**env, "PREFECT_LOGGING_ROOT_LEVEL": "WARNING"})


def test_a_users_logging_choice_is_left_alone(tmp_path):
    own = tmp_path / "mine.yml"
    own.write_text("version: 1\n")
    assert _flow_env(tmp_path, {"PREFECT_LOGGING_SETTINGS_PATH": str(own)})["PREFECT_LOGGING_SETTINGS_PATH"] == str(own)
    prefect_home = tmp_path / "ph"
    prefect_home.mkdir()
    (prefect_home / "logging.yml").write_text("version: 1\n")
    env = _flow_env(tmp_path, {"PREFECT_HOME": str(prefect_home)})
    assert "PREFECT_LOGGING_SETTINGS_PATH" not in env
    assert not (prefect_home / "evalquality-logging.yml").exists()


def test_a_run_with_another_home_writes_its_own_file_not_its_parents(tmp_path):
    """A child flow inherits the parent's variable (pointing into the parent's home, which may be gone by
    then); that is ours, not a user's choice, so the child writes and uses the file of its own home."""
    parent = _flow_env(tmp_path)
    own_home = tmp_path / "child-prefect"
    env = _flow_env(tmp_path, {"PREFECT_LOGGING_SETTINGS_PATH": parent["PREFECT_LOGGING_SETTINGS_PATH"],
                               "PREFECT_HOME": str(own_home)})
    assert env["PREFECT_LOGGING_SETTINGS_PATH"] == str(own_home / "evalquality-logging.yml")
    assert "sqlalchemy" in (own_home / "evalquality-logging.yml").read_text()


def test_a_home_that_cannot_be_written_keeps_prefects_defaults_without_a_traceback(tmp_path):
    home = tmp_path / "read-only"
    home.mkdir()
    home.chmod(0o500)
    try:
        if os.access(home, os.W_OK):  # root ignores the mode bits: make the file a directory instead
            (home / "evalquality-logging.yml").mkdir()
        env = _flow_env(tmp_path, {"PREFECT_HOME": str(home)})
    finally:
        home.chmod(0o700)
    assert "PREFECT_LOGGING_SETTINGS_PATH" not in env


def test_a_server_of_ones_own_gets_no_logging_file(tmp_path):
    env = _flow_env(tmp_path, {"PREFECT_API_URL": "http://127.0.0.1:9/api"})
    assert "PREFECT_LOGGING_SETTINGS_PATH" not in env
