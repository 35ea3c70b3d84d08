"""Stored stage results are verified, never trusted: a real Prefect flow runs a digest-cached stage, a separate
process tampers with its result file (altered value, truncated file, a planted pickle naming Prefect's
pickle serializer, a symlink to elsewhere), and the next lookup recomputes the stage instead of serving
or unpickling the file. The stage body counts its runs in a marker file."""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from prefect import flow, task

from evalquality_core.preflight.plan import PreflightPlan
from tasks.caching import (
    SERIALIZER_TYPE,
    StageResultRejected,
    VerifiedJsonSerializer,
    decode_result,
    results_dir,
    stage_cache,
    verified_stage,
)

pytestmark = pytest.mark.slow

_MARKER = Path(os.environ["EVALQUALITY_HOME"]) / "stage-body-runs"


@verified_stage
@task(name="t-verified-echo", **stage_cache("run_id"))
def echo_stage(run_id: str) -> PreflightPlan:
    """A digest-cached stage whose body leaves a line per run."""
    _MARKER.parent.mkdir(parents=True, exist_ok=True)
    with open(_MARKER, "a") as handle:
        handle.write("run\n")
    return PreflightPlan(run_id=run_id, legs=(), checks=(), reference_sets={"k": [1, "two"]})


class _Boom:
    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):  # what a planted pickle would run on load
        return (os.system, (f"touch {self.target}",))


def _runs() -> int:
    return len(_MARKER.read_text().splitlines()) if _MARKER.exists() else 0


def _tamper(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_tampered_result_is_recomputed_never_trusted(tmp_path, capfd):
    pwned = tmp_path / "pwned"

    @flow(name="t-stage-results")
    def run_once(run_id: str) -> PreflightPlan:
        return echo_stage(run_id)

    first = run_once("r-1")
    assert _runs() == 1 and first.run_id == "r-1"
    assert run_once("r-1").reference_sets == {"k": [1, "two"]} and _runs() == 1  # served from the cache
    (stored,) = [p for p in results_dir().iterdir() if p.name.startswith("t-verified-echo-")]
    record = json.loads(stored.read_text())
    assert record["metadata"]["serializer"]["type"] == SERIALIZER_TYPE and "$dataclass" in record["result"]

    # 1. The value altered in place (digest left as it was).
    _tamper(
        "import json, sys\n"
        f"path = {str(stored)!r}\n"
        "record = json.load(open(path))\n"
        "record['result'] = record['result'].replace('r-1', 'r-9')\n"
        "open(path, 'w').write(json.dumps(record))\n"
    )
    capfd.readouterr()
    assert run_once("r-1").run_id == "r-1" and _runs() == 2
    assert "result digest does not match" in capfd.readouterr().err

    # 2. Truncated.
    _tamper(f"import os; os.truncate({str(stored)!r}, 40)")
    assert run_once("r-1").run_id == "r-1" and _runs() == 3

    # 3. A planted record naming Prefect's pickle serializer: refused unread, never unpickled.
    planted = json.loads(stored.read_text())
    planted["metadata"]["serializer"] = {"type": "pickle", "picklelib": "pickle"}
    planted["result"] = base64.b64encode(pickle.dumps(_Boom(pwned))).decode()
    _tamper(f"open({str(stored)!r}, 'w').write({json.dumps(planted)!r})")
    assert run_once("r-1").run_id == "r-1" and _runs() == 4
    assert not pwned.exists()

    # 4. A symlink to a file elsewhere (a valid record of another run) is not followed.
    other = tmp_path / "elsewhere.json"
    other.write_text(stored.read_text())
    _tamper(f"import os; os.unlink({str(stored)!r}); os.symlink({str(other)!r}, {str(stored)!r})")
    assert run_once("r-1").run_id == "r-1" and _runs() == 5
    assert not stored.is_symlink()  # the recomputed result replaced the link


def test_the_codec_rebuilds_only_our_own_classes():
    serializer = VerifiedJsonSerializer()
    value = serializer.loads(serializer.dumps({"plan": PreflightPlan("r", (), ())}))
    assert value["plan"].run_id == "r"
    for tag in ({"$dataclass": "os:system", "fields": {}}, {"$model": "subprocess:Popen", "wire": {}},
                {"$dataclass": "builtins:object", "fields": {}}, {"$weird": 1}):
        with pytest.raises(StageResultRejected):
            decode_result(tag)
