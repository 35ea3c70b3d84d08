"""Benchmark: one tool call through the stdio MCP adapter against the same call through the ``mcp``
SDK's own stdio client (``stdio_client`` + ``ClientSession``: spawn, initialize, call, close).

Both sides open a fresh session per call, as the adapter must (one session per probe), against the
same server process image: the SDK fixture server (``tests/fixtures/mcp/tool_server.py``, whose
start-up dominates both sides) and the standard-library one (``plain_server.py``, which starts in
milliseconds, so the per-session overhead of each client shows). Calls alternate between the sides
so host drift affects both alike. Prints the medians and the ratio adapter / SDK (aim: ≤ 1.0 — the
adapter does less: no anyio task group, no pydantic models per message).

Run: python benchmarks/bench_mcp_adapter.py [calls]   (default 15 with the SDK server, 4x that with the plain one)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from results import record

from evalquality_core.adapters.mcp_stdio import McpStdioAdapter
from evalquality_core.probe.mcp_policy import parse_mcp_target_policy

#: What this run measured, for ``record`` (benchmarks/results/bench_mcp_adapter.json).
RATIOS: dict[str, float] = {}
FIGURES: dict[str, float | int | str] = {}

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "mcp"
ARGUMENTS = {"value": "a note about benchmarks\nwith two lines"}
REQUEST = {
    "kind": "mcp", "probeId": "bench-leg", "interfaceId": "bench", "operationId": "call", "toolName": "echo",
    "channels": {"arguments": ARGUMENTS},
}


def _adapter(server: Path, workdir: str) -> McpStdioAdapter:
    return McpStdioAdapter(parse_mcp_target_policy({"authorizations": [{
        "interfaceId": "bench", "target": sys.executable, "targetArgs": [str(server)], "tools": ["echo"],
        "cwd": workdir, "serverEnvironment": {}, "maxElapsedMs": 120000, "maxOutputBytes": 8 << 20,
    }]}))


async def _sdk_call(server: Path, workdir: str) -> object:
    params = StdioServerParameters(command=sys.executable, args=[str(server)], cwd=workdir,
                                   env={"PATH": os.environ.get("PATH", "")})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("echo", ARGUMENTS)
    return result.structured_content


def compare(label: str, server: Path, calls: int) -> float:
    """Median seconds per call for both sides; prints them and returns the ratio adapter / SDK."""
    with tempfile.TemporaryDirectory() as workdir:
        adapter = _adapter(server, workdir)
        loop = asyncio.new_event_loop()
        try:
            expected = {"value": ARGUMENTS["value"], "length": len(ARGUMENTS["value"])}
            for _ in range(2):  # warm both paths (imports, page cache)
                assert adapter.probe(REQUEST).result.model_dump(mode="json")["value"] == expected
                assert loop.run_until_complete(_sdk_call(server, workdir)) == expected
            ours: list[float] = []
            theirs: list[float] = []
            for _ in range(calls):
                start = time.perf_counter()
                adapter.probe(REQUEST)
                ours.append(time.perf_counter() - start)
                start = time.perf_counter()
                loop.run_until_complete(_sdk_call(server, workdir))
                theirs.append(time.perf_counter() - start)
        finally:
            loop.close()
    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
    ratio = ours_median / theirs_median
    RATIOS[f"{label}: adapter / SDK client"] = ratio
    FIGURES[f"{label}: adapter median ms"] = ours_median * 1000
    FIGURES[f"{label}: SDK client median ms"] = theirs_median * 1000
    FIGURES[f"{label}: calls"] = calls
    print(
        f"{label}: adapter median {ours_median * 1000:.1f} ms, mcp SDK stdio client {theirs_median * 1000:.1f} ms "
        f"over {calls} calls each: ratio adapter/SDK {ratio:.2f} (aim <= 1.0)"
    )
    return ratio


def main() -> None:
    """Print the medians and ratios against both servers."""
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    compare("SDK server (tool_server.py)", FIXTURES / "tool_server.py", calls)
    compare("stdlib server (plain_server.py)", FIXTURES / "plain_server.py", calls * 4)
    record(__file__, baseline="the same tool call through the mcp SDK's stdio client (median per call)",
           ratios=RATIOS, figures=FIGURES)


if __name__ == "__main__":
    main()
