"""The environment variables the product reads, as data; the page is rendered from these rows.

``tests/test_docs_generated.py`` scans the product's sources (evalquality_core, flows, tasks, deployments,
corpus) for ``EVALQUALITY_*`` names and holds that set equal to ``EVALQUALITY_VARIABLES``'s, so a new
variable cannot ship undocumented and a removed one cannot linger here.
"""

from __future__ import annotations

from typing import NamedTuple


class Variable(NamedTuple):
    """One environment variable: its name, default, and what it changes (where it is read)."""

    name: str
    default: str
    meaning: str


EVALQUALITY_VARIABLES: tuple[Variable, ...] = (
    Variable("EVALQUALITY_HOME", "`<project>/.evalquality` in a checkout, else `~/.cache/eval-quality`; "
             "beside a suites folder other than the checkout's: `<suites>/../.evalquality`",
             "where state lives: `leg-cache/`, `results/`, `workspaces/`, default outputs and, unless "
             "`PREFECT_HOME` is set, Prefect's `prefect/` (`tasks/home.py`, `flows/settings.py`)"),
    Variable("EVALQUALITY_SUITES", "`corpus/suites` of the checkout",
             "the flows' folder of suites; `--suites DIR` sets it (`flows/settings.py`)"),
    Variable("EVALQUALITY_OUT", "`<home>/preflight` (contract strength: `<home>/contract-strength`)",
             "where a flow writes its documents; `--out DIR` wins"),
    Variable("EVALQUALITY_CONCURRENCY", "`8`", "legs (and score tasks) in flight at once; `--concurrency N` "
             "wins; not a whole number ≥ 1 is a usage error (exit 64)"),
    Variable("EVALQUALITY_BASELINE", "`<suites>/../expected-preflight.json`",
             "the pre-flight flow's baseline; `--baseline FILE` wins"),
    Variable("EVALQUALITY_STRENGTH_BASELINE", "`<suites>/../expected-strength.json`",
             "the contract-strength flow's baseline (`flows/contract_strength.py`); `--baseline FILE` wins"),
    Variable("EVALQUALITY_LEG_CACHE", "unset: one SQLite file under `<home>/leg-cache`",
             "`postgresql://user@host:port/database`: the [shared leg cache](../how-to/shared-leg-cache.md) "
             "of several machines; a malformed URL is exit 64, an unreachable server exit 74"),
    Variable("EVALQUALITY_MAX_INPUT_BYTES", "64 MiB",
             "the input size cap of the CLI's inputs, suite files and baselines (`cli/io.py`, `suite/load.py`)"),
    Variable("EVALQUALITY_PROGRESS_SECONDS", "`30`",
             "on a console that is not a terminal, one progress line this often; `0` turns it off "
             "(`flows/watch.py`)"),
    Variable("EVALQUALITY_NIGHT_SECONDS", "unset (no limit)",
             "a wall-clock budget for one strength night; legs not started when it is spent are left for the "
             "next run, which resumes from the leg cache; exit 69 (`flows/night.py`, `--night-seconds` wins)"),
    Variable("EVALQUALITY_NIGHT_COST", "unset (no limit)",
             "a cost budget for one strength night, charged per attempt at each target's `cost_per_leg` "
             "(`flows/night.py`, `--night-cost` wins)"),
    Variable("EVALQUALITY_ATTEMPT", "set by the harness",
             "given to an agent target whose registry entry permits the key: the attempt number of a retried "
             "leg (`tasks/agent_legs.py`)"),
    Variable("EVALQUALITY_NIGHTLY_TIMEZONE", "`UTC`",
             "the time zone of the nightly deployment's cron schedule; `--timezone` wins (`deployments/nightly.py`)"),
    Variable("EVALQUALITY_EMBEDDED_API_URL", "set by the flows",
             "internal: the API address of the embedded server a flow process started, handed to its child "
             "processes (Dask workers) so they treat the run as embedded; do not set it yourself"),
)

#: Other tools' variables that change what the product does (not scanned: they are Prefect's and libpq's).
OTHER_VARIABLES: tuple[Variable, ...] = (
    Variable("PREFECT_HOME", "`<eval-quality home>/prefect`",
             "Prefect's own state (its SQLite database, the embedded server's logging file)"),
    Variable("PREFECT_API_URL", "unset: the flows start an embedded server",
             "run on that Prefect server instead (its UI shows the runs); `/health` must answer, else exit 69"),
    Variable("PREFECT_LOGGING_SETTINGS_PATH", "`<PREFECT_HOME>/evalquality-logging.yml` when embedded",
             "your own logging configuration for Prefect"),
    Variable("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "`120` here",
             "how long the embedded server may take to answer `/health` (exit 69 after)"),
    Variable("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "off on the embedded server",
             "flow-run heartbeats; chosen or with `PREFECT_API_URL` set they stay as configured"),
    Variable("PGPASSWORD", "unset", "the shared leg cache's PostgreSQL password (or the URL, or `~/.pgpass`)"),
)


def render_environment() -> str:
    """The page: both tables."""
    from docsgen.pages import GENERATED_NOTE

    lines = ["# Environment variables", "", GENERATED_NOTE, "",
             "Flags win over variables. Every `EVALQUALITY_*` name the product reads is in the first table "
             "(a test scans the sources).", "",
             "## `EVALQUALITY_*`", "", "| variable | default | what it does |", "|---|---|---|"]
    lines += [f"| `{v.name}` | {v.default} | {v.meaning} |" for v in EVALQUALITY_VARIABLES]
    lines += ["", "## Prefect's and PostgreSQL's", "", "| variable | default | what it does |", "|---|---|---|"]
    lines += [f"| `{v.name}` | {v.default} | {v.meaning} |" for v in OTHER_VARIABLES]
    return "\n".join(lines) + "\n"
