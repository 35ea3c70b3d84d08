"""The nightly contract_strength run as a Prefect deployment (prefect.md §6).

Two ways to run it, both against a Prefect server (``prefect server start``; the ephemeral server
has no scheduler, so a schedule never fires without one):

* ``python -m deployments.nightly serve`` — registers the deployment ``contract-strength/nightly``
  and serves it from this process (simplest; stopping the process pauses the deployment).
* ``python -m deployments.nightly deploy --pool nightly-pool`` — registers the same deployment on a
  process work pool from this directory (``flow.from_source(<project dir>)``, no git, no network);
  runs need ``prefect worker start --pool nightly-pool``, one or more, which is how it scales out.

The cron is ``0 2 * * *`` in an explicit time zone (``UTC`` unless ``--timezone`` or
``EVALQUALITY_NIGHTLY_TIMEZONE`` says otherwise): without one Prefect silently uses UTC, and the
person reading the schedule should not have to know that.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.schedules import Cron, Schedule

from flows.contract_strength import contract_strength
from flows.lifecycle import FlowArgumentParser, crash_exit

DEPLOYMENT_NAME = "nightly"
NIGHTLY_CRON = "0 2 * * *"
DEFAULT_TIMEZONE = "UTC"
TIMEZONE_VARIABLE = "EVALQUALITY_NIGHTLY_TIMEZONE"
#: The flow as a work-pool worker loads it from the project directory.
FILE_ENTRYPOINT = "flows/contract_strength.py:contract_strength"
PROJECT_DIR = Path(__file__).resolve().parent.parent
TAGS = ["eval-quality", "nightly"]
#: A night whose gate is not 0 ends its flow run Failed (after writing and publishing everything), so
#: the UI and any notification on failed runs show it.
#: A night runs its trials live (the evaluator command of every suite); CI runs the stored replays.
NIGHTLY_PARAMETERS: dict[str, Any] = {"fail_on_movement": True, "trials": "live"}


def nightly_timezone(explicit: str | None = None) -> str:
    """The schedule's time zone: the argument, else ``$EVALQUALITY_NIGHTLY_TIMEZONE``, else UTC."""
    return explicit or os.environ.get(TIMEZONE_VARIABLE) or DEFAULT_TIMEZONE


def nightly_schedule(cron: str = NIGHTLY_CRON, timezone: str | None = None) -> Schedule:
    """The nightly cron schedule, always with an explicit time zone."""
    return Cron(cron, timezone=nightly_timezone(timezone))


def build_deployment(
    cron: str = NIGHTLY_CRON, timezone: str | None = None, parameters: dict[str, Any] | None = None
) -> RunnerDeployment:
    """The nightly deployment object, built without touching a server.

    The entry point is the flow's module path (``flows.contract_strength.contract_strength``), so it
    does not depend on the directory the serve command is started from.
    """
    return contract_strength.to_deployment(
        name=DEPLOYMENT_NAME,
        schedules=[nightly_schedule(cron, timezone)],
        parameters={**NIGHTLY_PARAMETERS, **(parameters or {})},
        tags=TAGS,
        description="Nightly contract strength: live pre-flight, score stored trials, gate on the baseline.",
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


def serve(cron: str = NIGHTLY_CRON, timezone: str | None = None) -> None:
    """Register the nightly deployment and serve it from this process until interrupted."""
    from prefect import serve as prefect_serve

    prefect_serve(build_deployment(cron, timezone))


def deploy_to_pool(pool: str, cron: str = NIGHTLY_CRON, timezone: str | None = None) -> None:
    """Register the nightly deployment on a process work pool, loading the flow from this directory."""
    flow = contract_strength.from_source(source=str(PROJECT_DIR), entrypoint=FILE_ENTRYPOINT)
    flow.deploy(
        name=DEPLOYMENT_NAME,
        work_pool_name=pool,
        schedules=[nightly_schedule(cron, timezone)],
        parameters=NIGHTLY_PARAMETERS,
        tags=TAGS,
        build=False,
        push=False,
    )


@crash_exit("python -m deployments.nightly")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m deployments.nightly {serve|deploy --pool P} [--cron C] [--timezone TZ]``."""
    parser = FlowArgumentParser(prog="python -m deployments.nightly", description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("serve", "deploy"), nargs="?", default="serve")
    parser.add_argument("--cron", default=NIGHTLY_CRON, help=f"cron expression (default {NIGHTLY_CRON!r})")
    parser.add_argument("--timezone", default=None, help=f"IANA zone (default ${TIMEZONE_VARIABLE} or UTC)")
    parser.add_argument("--pool", default="nightly-pool", help="process work pool for 'deploy'")
    args = parser.parse_args(argv)
    if args.mode == "serve":
        serve(args.cron, args.timezone)
    else:
        deploy_to_pool(args.pool, args.cron, args.timezone)
    return 0


if __name__ == "__main__":
    sys.exit(main())
