"""tests/integration/conftest.py: the worker's Prefect server, and ``own_prefect_server`` opting out of it."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

import pytest
from prefect.settings import get_current_settings

from tests.prefect_db import SHARED_SERVER_VARIABLES, shared_server

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: What a flow process decides from its environment (flows/settings.py).
DECIDES = ("import os; from flows.settings import user_api_url, is_embedded_api; "
           "print(user_api_url(), is_embedded_api(os.environ.get('PREFECT_API_URL')))")


def _flow_process_says(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", DECIDES], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True).stdout.strip()


def test_an_unmarked_test_and_its_flow_processes_use_the_worker_server_as_embedded(worker_prefect_server: str) -> None:
    assert [os.environ[name] for name in SHARED_SERVER_VARIABLES] == [worker_prefect_server] * 2
    assert get_current_settings().api.url == worker_prefect_server  # this process's client follows
    with urllib.request.urlopen(f"{worker_prefect_server}/health", timeout=30) as answer:
        assert answer.status == 200
    # A child inheriting the environment runs as on a server it started: no user server named.
    assert _flow_process_says(dict(os.environ)) == "None True"
    # One built without this process's PREFECT_* variables gets the server back from shared_server().
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "EVALQUALITY_"))}
    assert shared_server() == dict.fromkeys(SHARED_SERVER_VARIABLES, worker_prefect_server)
    assert _flow_process_says({**clean, **shared_server()}) == "None True"


@pytest.mark.own_prefect_server
def test_a_marked_test_has_no_worker_server(worker_prefect_server: str) -> None:
    assert not [name for name in SHARED_SERVER_VARIABLES if name in os.environ]
    assert get_current_settings().api.url is None and shared_server() == {}
    assert _flow_process_says(dict(os.environ)) == "None True"  # its flows start their own


def test_after_a_marked_test_the_worker_server_is_back(worker_prefect_server: str) -> None:
    """(Runs after the marked test on the same worker: the file is one xdist group.)"""
    assert get_current_settings().api.url == worker_prefect_server == os.environ["EVALQUALITY_EMBEDDED_API_URL"]


pytestmark = pytest.mark.xdist_group("worker-server")
