"""Dependency layers: staging cost per leg for a system holding the real ``node_modules/`` of the npm
package ``@modelcontextprotocol/server-memory`` (~29 MB, ~4,000 files), the per-leg copy (the old path,
``stage_workspace`` without a store) against the layer linked from the store (staged once, its
signature checked after the leg), both measured in this run; prints the ratio (never asserted).

Each leg: stage a fresh workspace, (layer) ``check_layers`` as the pre-flight does after the leg, then
remove the workspace as ``leg_workspace`` does. The layer's first leg (which copies it into the store
and digests it) is printed apart; the steady state is what every further leg pays. With
``--sessions N`` each timing also runs N real ``node`` server sessions (one ``read_graph`` per leg).

The mutant-trials path (``--mutant-legs N``, issue 34): N legs as a mutants run stages them, alternating
the clean system and a mutant of the package's own ``dist/index.js``, before (``stage_workspace`` with
the mutation, the layer copied per leg) against after (``tasks.mutants.stage_mutant``: the clean layer
and the mutant's layer each stored once in ``<home>/layers``, then linked), each leg checked and removed.

Usage: ``python benchmarks/bench_layers.py [--legs N] [--sessions N] [--mutant-legs N] [--node-modules DIR]``
(without ``--node-modules`` it runs ``npm install`` into a temp folder, npm cache included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import record  # noqa: E402  (beside this script)

from evalquality_core.adapters.mcp_stdio import McpStdioAdapter  # noqa: E402
from evalquality_core.probe.targets import parse_targets  # noqa: E402
from evalquality_core.suite.layers import LayerStore  # noqa: E402
from evalquality_core.suite.load import Mutation  # noqa: E402
from evalquality_core.suite.staging import check_layers, stage_workspace  # noqa: E402
from tasks.mutants import stage_mutant  # noqa: E402
from tests.npm_memory import ENTRY, install_memory_server, memory_suite  # noqa: E402


def _leg(suite: Path, workspace: Path, store: LayerStore | None, session: bool) -> None:
    staged = stage_workspace(suite, workspace, layers=store)
    if session:
        registry = parse_targets((suite / "targets.toml").read_text(), "targets.toml")
        observation = McpStdioAdapter(registry.to_mcp_policy({}), workdir=workspace).probe(
            {"kind": "mcp", "probeId": "leg-read", "interfaceId": "memory", "operationId": "read-graph",
             "toolName": "read_graph", "channels": {"arguments": {}}})
        assert observation.is_error is False, observation
    assert check_layers(staged) == []
    shutil.rmtree(workspace)


def _time(suite: Path, scratch: Path, store: LayerStore | None, legs: int, session: bool, tag: str) -> float:
    started = time.perf_counter()
    for number in range(legs):
        _leg(suite, scratch / f"{tag}-{number}", store, session)
    return (time.perf_counter() - started) / legs


def _mutant_legs(suite: Path, scratch: Path, legs: int, linked: bool) -> float:
    """Seconds per leg of ``legs`` mutant-trials legs (clean and JS mutant alternating), staged before
    (copy) or after (``stage_mutant``, the layer store of ``$EVALQUALITY_HOME``)."""
    mutant = Mutation(mutation_id="M-js", probe_id="P-001", operator="return-value", target=f"system/{ENTRY}",
                      description="create_entities answers none", find="        return newEntities;\n",
                      replace="        return [];\n", naive_check=None, source_path=suite / "mutations" / "M-js.json")
    tag = "after" if linked else "before"
    started = time.perf_counter()
    for number in range(legs):
        workspace = scratch / f"mutant-{tag}-{number}"
        mutation = mutant if number % 2 else None
        staged = stage_mutant(suite, mutation, workspace) if linked else stage_workspace(suite, workspace, mutation)
        assert check_layers(staged) == []
        shutil.rmtree(workspace)
    return (time.perf_counter() - started) / legs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--legs", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=3, help="legs that also run a real server session")
    parser.add_argument("--mutant-legs", type=int, default=10, help="legs of the mutant-trials path (0: skip)")
    parser.add_argument("--node-modules", type=Path, default=None)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalquality-bench-layers-") as temp:
        scratch = Path(temp)
        modules = arguments.node_modules or install_memory_server(scratch / "npm")
        files = sum(1 for _ in modules.rglob("*"))
        size = sum(path.stat().st_size for path in modules.rglob("*") if path.is_file() and not path.is_symlink())
        suite = memory_suite(scratch / "suites", modules, memory_file="../../../../../work/m.jsonl", tools=("read_graph",))
        store = LayerStore(scratch / "home" / "layers")
        print(f"system: node_modules of @modelcontextprotocol/server-memory, {files} entries, {size / 2**20:.1f} MiB")
        started = time.perf_counter()
        _leg(suite, scratch / "first", store, False)
        first = time.perf_counter() - started
        copy = _time(suite, scratch, None, arguments.legs, False, "copy")
        layer = _time(suite, scratch, store, arguments.legs, False, "layer")
        print(f"staging per leg ({arguments.legs} legs): copy {copy * 1000:.1f} ms, layer {layer * 1000:.1f} ms "
              f"(first leg, storing the layer: {first * 1000:.1f} ms)")
        print(f"ratio copy/layer: {copy / layer:.1f}x  (legs/s staged: copy {1 / copy:.1f}, layer {1 / layer:.1f})")
        ratios = {"staging per leg: copy / layer": copy / layer}
        figures: dict[str, float | int | str] = {"legs": arguments.legs, "copy ms": copy * 1000,
                                                "layer ms": layer * 1000, "first leg ms": first * 1000}
        if arguments.sessions:
            copy = _time(suite, scratch, None, arguments.sessions, True, "copy-session")
            layer = _time(suite, scratch, store, arguments.sessions, True, "layer-session")
            print(f"with a real server session per leg ({arguments.sessions} legs): copy {copy * 1000:.0f} ms, "
                  f"layer {layer * 1000:.0f} ms, ratio {copy / layer:.2f}x (legs/s: {1 / copy:.2f} vs {1 / layer:.2f})")
            ratios["with a real server session per leg: copy / layer"] = copy / layer
        if arguments.mutant_legs:
            os.environ["EVALQUALITY_HOME"] = str(scratch / "mutants-home")  # stage_mutant's store
            started = time.perf_counter()
            _mutant_legs(suite, scratch, 2, True)  # stores the clean layer and the mutant's, once each
            first = time.perf_counter() - started
            before = _mutant_legs(suite, scratch, arguments.mutant_legs, False)
            after = _mutant_legs(suite, scratch, arguments.mutant_legs, True)
            stored = sorted(path.name for path in (scratch / "mutants-home" / "layers").iterdir())
            print(f"mutant-trials legs ({arguments.mutant_legs}, clean and mutant alternating): before (copy) "
                  f"{before * 1000:.1f} ms, after (stage_mutant, layer) {after * 1000:.1f} ms per leg; ratio "
                  f"before/after {before / after:.1f}x (legs/s staged: {1 / before:.1f} vs {1 / after:.1f}); "
                  f"{len(stored)} layers stored (clean, mutant; first two legs {first * 1000:.0f} ms)")
            ratios["mutant-trials legs: copy / stage_mutant"] = before / after
        record(__file__, baseline="copying the system's node_modules into every leg's workspace",
               ratios=ratios, figures=figures)


if __name__ == "__main__":
    main()
