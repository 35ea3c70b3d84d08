"""Every input error of the flows is one line and a documented exit code, with nothing run or left behind:
``--out`` naming a file, a missing ``--suites`` folder (64), an unreachable or refusing ``PREFECT_API_URL`` (69), an
unusable leg cache (74); and a full disk (a real write limit on a real process) leaves no temp file."""

from __future__ import annotations

import http.server
import os
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def _run(flow: str, args: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "EVALQUALITY_HOME": str(home), **env}
    return subprocess.run(
        [sys.executable, "-m", flow, *args], cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=180
    )


def _one_line(result: subprocess.CompletedProcess[str], code: int, says: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("flow", ["flows.preflight", "flows.contract_strength"])
def test_out_naming_a_file_and_missing_suites_are_usage_errors(tmp_path, flow):
    home, afile = tmp_path / "home", tmp_path / "a-file"
    afile.write_text("x")
    _one_line(_run(flow, ["--out", str(afile)], home), 64, f"--out {afile} is a file, not a directory")
    _one_line(_run(flow, ["--suites", str(tmp_path / "nowhere")], home), 64, "does not exist")
    assert not (home / "leg-cache").exists() and afile.read_text() == "x"


@pytest.mark.parametrize("flow", ["flows.preflight", "flows.contract_strength", "flows.mutants"])
def test_an_unreachable_postgresql_leg_cache_is_one_line_and_74_before_anything_runs(tmp_path, flow):
    # Nothing listens on port 9 of the loopback: the connection is refused at once.
    home = tmp_path / "home"
    result = _run(flow, [], home, EVALQUALITY_LEG_CACHE="postgresql://nobody@127.0.0.1:9/legs")
    _one_line(result, 74, "leg cache postgresql://127.0.0.1:9/legs: could not create the table: connection failed")
    assert "check EVALQUALITY_LEG_CACHE and that the server is up" in result.stderr
    assert not (home / "prefect").exists(), "no Prefect server was started"


def test_an_unreachable_prefect_api_is_one_line_and_69(tmp_path):
    result = _run("flows.preflight", [], tmp_path / "home", PREFECT_API_URL="http://127.0.0.1:9/api")
    _one_line(result, 69, "PREFECT_API_URL=http://127.0.0.1:9/api is not reachable")


class _Refusing(http.server.BaseHTTPRequestHandler):
    """A "Prefect server" that answers /health and refuses every API call, as one wanting credentials does."""

    #: What every API call other than /health gets.
    status, refusal = 401, b'{"detail": "Unauthorized"}'

    def _answer(self) -> None:
        ok = self.path.endswith("/health")
        body = b"true" if ok else self.refusal
        self.send_response(200 if ok else self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("flow", ["flows.preflight", "flows.contract_strength"])
def test_a_refusing_prefect_api_is_one_line_and_69(tmp_path, flow):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        result = _run(flow, ["--suites", str(PROJECT_ROOT / "corpus/suites/notes")], tmp_path / "home", PREFECT_API_URL=url)
    finally:
        server.shutdown()
        server.server_close()
    _one_line(result, 69, f"PREFECT_API_URL={url} answered 401 Unauthorized for GET /api/")
    assert "PREFECT_API_KEY" in result.stderr and "unset PREFECT_API_URL" in result.stderr


class _Failing(_Refusing):
    """An embedded server that gave way: /health answers, every API call is a 500."""

    status, refusal = 500, b'{"exception_message": "Internal Server Error"}'


def test_a_500_from_the_embedded_server_is_one_line_and_69(tmp_path):
    """The URL the flow process marked as its own embedded server (EVALQUALITY_EMBEDDED_API_URL, as a
    flow's Dask workers inherit it) answers 500: one line naming the embedded server and the fix (run
    again), not the credentials advice for a user's server, and no traceback."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        result = _run("flows.preflight", ["--suites", str(PROJECT_ROOT / "corpus/suites/notes")], tmp_path / "home",
                      PREFECT_API_URL=url, EVALQUALITY_EMBEDDED_API_URL=url)
    finally:
        server.shutdown()
        server.server_close()
    _one_line(result, 69, f"the embedded Prefect server ({url}) answered 500 Internal Server Error for ")
    assert "run again" in result.stderr and "PREFECT_API_KEY" not in result.stderr


def test_an_unusable_leg_cache_is_one_line_and_74(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "leg-cache").write_text("not a directory")  # the cache directory cannot exist
    _one_line(_run("flows.preflight", [], home), 74, f"leg cache {home / 'leg-cache'}")


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))  # any file past 200 bytes: EFBIG
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_a_full_disk_leaves_no_temp_file_behind(tmp_path):
    """A write limit the kernel enforces (EFBIG, as a full disk gives ENOSPC) on the flows' writer."""
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1])\n"
        "from tasks.output import write_atomically\n"
        "try:\n"
        "    write_atomically(Path(sys.argv[2]) / 'verdict.json', b'x' * 5000)\n"
        "except OSError as error:\n"
        "    print(error.errno)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(PROJECT_ROOT), str(tmp_path)],
        capture_output=True, text=True, timeout=60, preexec_fn=_limit_file_size,
    )
    assert result.stdout.strip().isdigit(), result.stderr
    assert list(tmp_path.iterdir()) == []  # neither the file nor a .tmp- file


def test_cli_compile_on_a_full_disk_is_one_line_exit_5_and_no_temp_file(tmp_path, conformance):
    contract = conformance / "corpus-dev" / "compile-seal-example" / "contract.json"
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-c", "from evalquality_core.cli.main import main; main()", "compile", "--in", str(contract), "--out", str(out)],
        capture_output=True, text=True, timeout=60, preexec_fn=_limit_file_size, cwd=PROJECT_ROOT,
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 5 and len(lines) == 1 and lines[0].startswith("eval-quality: EFBIG: "), result.stderr
    assert list(out.iterdir()) == []


def test_a_suite_that_cannot_run_is_named_on_one_line_however_long_its_path(tmp_path):
    # Rich breaks a printed line at the console's width (120 columns when piped): this one is longer.
    suites = tmp_path / ("a-rather-long-folder-name-" * 4) / "suites"
    (suites / "x").mkdir(parents=True)
    contract = suites / "x" / "contract.json"
    contract.write_text("{bad")
    result = _run("flows.preflight", ["--suites", str(suites), "--out", str(tmp_path / "out")], tmp_path / "home")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("suite x could not run: ")]
    assert lines, result.stderr
    assert len(lines[0]) > 120 and str(contract) in lines[0] and lines[0].endswith("line 1 column 2 (char 1)"), lines
    assert "Traceback" not in result.stderr
