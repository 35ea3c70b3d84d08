"""Suites over real third-party npm packages, written as a user would (issue 34), for the tests under
``tests/integration/``. Nothing here is our code under test: the systems are the installed packages.

* :func:`json_server_suite`: ``json-server`` 0.17.4 over HTTP (``POST /posts``, ``GET /posts``). Its
  answers carry ``Date``, ``ETag`` and a ``Location`` holding the port and a generated id, and a created
  post gets a random 7-character id (the fixture's ids are strings, so json-server mints ``nanoid(7)``).
  The success indicator is the HTTP status (``protocolSuccessIndicator: "response-status"``). It runs
  as json-server's README shows its module use (``system/serve.js``, five lines: ``create``,
  ``defaults``, ``router('db.json')``, ``listen``), not through its CLI: the CLI stores through lowdb's
  ``FileAsync`` (an atomic rename *after* the answer), and a server stopped when its call ends (our
  HTTP service adapter) can lose that write; ``router('db.json')`` stores synchronously. Its one
  planted defect is a deployment mistake in that launcher, ``readOnly: true``, so every write answers
  403 (a mutation may not touch ``node_modules/``, a read-only dependency layer).
* :func:`memory_pass_suite`: ``@modelcontextprotocol/server-memory`` over MCP stdio (``read_graph``),
  its success indicator the tool's ``isError``; one clean-control probe.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.npm_memory import ENTRY

#: The starters' scoring policy (material severity floor, three trials).
POLICY = Path(__file__).resolve().parents[1] / "evalquality_core" / "suite" / "starters" / "http" / "scoring-policy.json"
NO_KEYS = {"requiredKeys": [], "permittedKeys": [], "types": {}}
VOLATILE_HEADERS = ["Date", "ETag", "Location"]
#: json-server started as its README's "Module" section shows, on the port given as the one argument.
SERVE_JS = """\
const jsonServer = require('json-server');
const server = jsonServer.create();
server.use(jsonServer.defaults({ readOnly: false, logger: false }));
server.use(jsonServer.router('db.json'));
server.listen(Number(process.argv[2]), '127.0.0.1');
"""


def pointer(value: str) -> dict[str, str]:
    """An operand pointer."""
    return {"pointer": value}


def literal(value: Any) -> dict[str, Any]:
    """An operand literal."""
    return {"literal": value}


def equality(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """An ``equality`` check."""
    return {"op": "equality", "operands": [a, b]}


def oracle(oracle_id: str, check: dict[str, Any], targets: list[str], negative: str, relation: str = "equality") -> dict[str, Any]:
    """A listed expects-hold oracle whose direction names ``targets`` (``relation`` must occur in the check)."""
    return {"id": oracle_id, "polarity": "expects-hold", "commentary": None, "check": check,
            "direction": {"evidenceTargets": targets, "relation": relation, "polarity": "expects-hold",
                          "scope": None, "negativeDomain": negative}}


def behavior(behavior_id: str, oracle_id: str, description: str, severity: str = "material") -> dict[str, Any]:
    """A behaviour listing one oracle (its designated oracle, AD-40)."""
    return {"id": behavior_id, "description": description, "severity": severity, "observableSuccessCriterion": description,
            "requirementLinks": [{"scheme": "issue", "id": "34"}], "riskLinks": [], "oracles": [oracle_id]}


def contract_frame(contract_id: str, behaviors: list, oracles: list, interfaces: list, plan: list) -> dict[str, Any]:
    """The rest of a contract 7 around its behaviours, oracles, interfaces and plan."""
    return {
        "schemaVersion": 7, "parentDigest": None, "revisionCount": 0, "contractId": contract_id,
        "sourceSpecDigest": None, "behaviors": behaviors, "oracles": oracles, "rubrics": [], "waivers": [],
        "permittedInterfaces": interfaces, "referenceSets": None,
        "siblingGroups": {"operations": [], "parameters": []}, "interactionPlan": plan,
        "scopedResources": None,
        "forbiddenInputs": ["original-spec", "source-code", "repository", "builder-transcript", "implementation-logs",
                            "comparator-results", "human-labels"],
        "testData": {"setup": "The fixture as staged.", "cleanup": "The workspace is discarded.", "principals": None,
                     "resources": None},
        "budgets": {"maxCostUsd": "1.0", "maxToolCalls": 40, "maxWallClockMinutes": 10},
        "safetyLimits": ["No request to any host other than the mapped target."],
        "requiredEvidence": ["Request and response pair for every call, in order."],
        "probeStepBound": 8, "fixtureReset": None,
    }


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- json-server over HTTP


def _api_inputs(body: dict[str, Any] | None) -> dict[str, Any]:
    return {"path": {}, "query": {}, "header": {},
            "body": {"kind": "absent"} if body is None else {"kind": "json", "value": body}}


def _api_binding(body: dict[str, Any] | None) -> dict[str, Any]:
    return {"path": None, "query": None, "header": None, "body": body}


def json_server_contract(*, volatile_headers: bool = True, volatile_pointers: bool = True) -> dict[str, Any]:
    """The posts contract over json-server. ``volatile_headers=False`` leaves out ``volatileHeaders``
    (Date, ETag, Location), ``volatile_pointers=False`` the generated ids, as a user who did not know
    about them would write it."""
    create = {
        "operationId": "create-post", "method": "POST", "pathTemplate": "/posts", "stateChangeMarker": True,
        "requestShape": {"path": NO_KEYS, "query": NO_KEYS, "header": NO_KEYS,
                         "body": {"requiredKeys": ["title"], "permittedKeys": ["title"], "types": {"title": "string"}}},
        "responseDescriptor": {"requiredKeys": ["title"], "permittedKeys": ["id", "title"],
                               "types": {"id": "string", "title": "string"}, "successIndicator": None,
                               "channelRoles": {"/title": "payload"}, "collectionLocations": [],
                               "protocolSuccessIndicator": "response-status"},
        "volatilePointers": ["/id"] if volatile_pointers else [],
        "sensitivityWitness": {
            "witnessId": "create-post-sensitivity", "channel": "body",
            "legs": [{"legId": "create-post-witness-a", "inputs": _api_inputs({"title": "alpha"})},
                     {"legId": "create-post-witness-b", "inputs": _api_inputs({"title": "beta"})}],
            "relation": {"op": "not", "operands": [equality(pointer("/interactions/create-post-witness-a/response-body/title"),
                                                            pointer("/interactions/create-post-witness-b/response-body/title"))]},
        },
    }
    listing = {
        "operationId": "list-posts", "method": "GET", "pathTemplate": "/posts", "stateChangeMarker": False,
        "requestShape": {"path": NO_KEYS, "query": NO_KEYS, "header": NO_KEYS, "body": NO_KEYS},
        "responseDescriptor": {**NO_KEYS, "successIndicator": None, "channelRoles": {}, "collectionLocations": [],
                               "protocolSuccessIndicator": "response-status"},
        "volatilePointers": ["/*/id"] if volatile_pointers else [],
        "sensitivityWitness": None,
    }
    if volatile_headers:
        create["volatileHeaders"] = list(VOLATILE_HEADERS)
        listing["volatileHeaders"] = list(VOLATILE_HEADERS)
    plan = [
        {"stepId": "create", "interfaceId": "posts", "operationId": "create-post", "after": None,
         "cardinality": "exactly-one", "inputBinding": _api_binding({"title": {"literal": "Groceries"}})},
        {"stepId": "list", "interfaceId": "posts", "operationId": "list-posts", "after": "create",
         "cardinality": "exactly-one", "inputBinding": _api_binding(None)},
        {"stepId": "malformed-create", "interfaceId": "posts", "operationId": "create-post", "after": None,
         "cardinality": "exactly-one", "inputBinding": _api_binding({"title": {"matcher": "type-violating"}})},
    ]
    oracles = [
        oracle("O-001", {"op": "all", "operands": [
            equality(pointer("/interactions/create/response-status"), literal(201)),
            equality(pointer("/interactions/create/response-body/title"), pointer("/interactions/create/call-inputs/body/title")),
        ]}, ["/interactions/create/response-status", "/interactions/create/response-body/title"],
            "A create answering anything but 201 Created, or a post other than the one sent."),
        oracle("O-002", {"op": "for-any", "collection": pointer("/interactions/list/response-body"),
                         "predicate": equality(pointer("@/title"), pointer("/interactions/create/call-inputs/body/title"))},
               ["/interactions/list/response-body", "/interactions/create/call-inputs/body/title"],
               "A created post that a later, independent listing does not hold."),
        oracle("O-003", equality(pointer("/interactions/malformed-create/response-body/title"),
                                 pointer("/interactions/malformed-create/call-inputs/body/title")),
               ["/interactions/malformed-create/response-body/title", "/interactions/malformed-create/call-inputs/body/title"],
               "A title of another JSON type stored as something other than what was sent (json-server has no schema)."),
    ]
    behaviors = [
        behavior("B-001", "O-001", "Creating a post answers 201 Created with the post it was sent."),
        behavior("B-002", "O-002", "A created post is listed by a later GET /posts."),
        behavior("B-003", "O-003", "A title of another JSON type is stored exactly as sent (json-server validates nothing)."),
    ]
    interfaces = [{"logicalId": "posts", "kind": "api", "operations": [create, listing]}]
    return contract_frame("json-server-posts", behaviors, oracles, interfaces, plan)


def json_server_suite(root: Path, modules: Path, *, volatile_headers: bool = True, volatile_pointers: bool = True) -> Path:
    """A suite over the installed json-server (``modules`` = its ``node_modules``): P-001 plants the
    read-only deployment (writes answer 403), P-002 is the clean control."""
    node = shutil.which("node") or "node"
    suite = root / "json-server"
    shutil.copytree(modules, suite / "system" / "node_modules", symlinks=True)
    # json-server as a module (its README); the planted defect flips readOnly.
    (suite / "system" / "serve.js").write_text(SERVE_JS)
    _write(suite / "fixtures" / "two-posts" / "db.json",
           {"posts": [{"id": "p-1", "title": "Hello"}, {"id": "p-2", "title": "World"}]})
    (suite / "suite.toml").write_text('system-id = "json-server-0.17.4"\n[fixtures]\ntwo-posts = "."\n[floors]\ndefect = 0.8\n')
    (suite / "targets.toml").write_text(
        "[service]\n"
        f'command = [{json.dumps(node)}, "../system/serve.js", "{{port}}"]\n'
        'cwd = "work"\nport_placeholder = "port"\nready_timeout_ms = 30000\n\n'
        '[[target]]\nkind = "api"\ninterface_id = "posts"\nscheme = "http"\nhost = "127.0.0.1"\nport = "{port}"\n'
        'addresses = ["127.0.0.1"]\nmethods = ["GET", "POST"]\nsafe_methods = ["GET"]\nmax_redirects = 0\n'
        "max_elapsed_ms = 20000\nmax_request_bytes = 65536\nmax_response_bytes = 1048576\n"
    )
    _write(suite / "contract.json", json_server_contract(volatile_headers=volatile_headers, volatile_pointers=volatile_pointers))
    _write(suite / "evaluator.json", {"about": "The value sent where the plan leaves one open.", "baselineSteps": [],
                                      "choices": {"malformed-create": {"body": {"title": 5}}}})
    shutil.copy(POLICY, suite / "scoring-policy.json")
    _write(suite / "mutations" / "read-only-deployment.json", {
        "probeId": "P-001", "operator": "read-only-deployment", "target": "system/serve.js",
        "description": "json-server deployed with readOnly: every POST answers 403 Forbidden and nothing is created.",
        "find": "readOnly: false", "replace": "readOnly: true"})
    selector = {name: None for name in ("argument", "arguments", "body", "environment", "header", "option", "path", "query", "stdin")}
    _write(suite / "probes" / "P-001.json", {
        "probeId": "P-001", "probeClass": "defect", "behaviorId": "B-001", "expectedClean": False,
        "rationale": "A read-only deployment: json-server refuses every write with 403. Only a contract that reads the "
                     "HTTP status as the success indicator tells this from a created post.",
        "defects": [{"defectId": "D-001", "behaviorId": "B-001", "severity": "critical", "source": "controlled-mutation",
                     "summary": "POST /posts answers 403 Forbidden and creates nothing.",
                     "manifestationWitness": {"legId": "create-refused", "interfaceId": "posts", "operationId": "create-post",
                                              "inputs": _api_inputs({"title": "Fault"}),
                                              "relation": equality(pointer("/interactions/create-refused/response-status"), literal(403))}}],
        "defectSignature": {"interfaceKind": "api", "method": "POST", "pathTemplate": "/posts",
                            "observableChannel": "response-status",
                            "condition": {"selector": {"inputBinding": selector},
                                          "predicate": equality(pointer("/interactions/observed/response-status"), literal(403))}},
        "qualification": {"expectedObservableFailure": "POST /posts answers 403 instead of 201 Created"},
    })
    _write(suite / "probes" / "P-002.json", {
        "probeId": "P-002", "probeClass": "zero-action", "behaviorId": "B-002", "expectedClean": True, "defects": [],
        "rationale": "The clean control: json-server as installed, over the two-posts fixture.",
        "qualification": {"noKnownDefectStatement": "json-server 0.17.4 as published on npm; no defect is known in the "
                                                    "behaviours this contract states."},
    })
    return suite


# ---------------------------------------------------------------- server-memory over MCP stdio

#: Where the memory server keeps its graph: relative to its own ``dist/`` (node runs with
#: ``--preserve-symlinks``), five folders up is the workspace root, so the file lands in ``work/``.
MEMORY_FILE = "../../../../../work/memory.jsonl"
ADA = [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]


def _tool_op(operation_id: str, tool: str, *, state_change: bool, arguments: dict[str, Any], descriptor: dict[str, Any],
             witness: dict[str, Any] | None) -> dict[str, Any]:
    return {"operationId": operation_id, "toolName": tool, "stateChangeMarker": state_change,
            "requestShape": {"arguments": arguments}, "descriptorChannel": {"kind": "structured-result"},
            "responseDescriptor": descriptor, "volatilePointers": [], "sensitivityWitness": witness}


def memory_contract() -> dict[str, Any]:
    """A clean contract over server-memory whose success indicator is the tool's ``isError``."""
    create = _tool_op(
        "create-entities", "create_entities", state_change=True,
        arguments={"requiredKeys": ["entities"], "permittedKeys": ["entities"], "types": {"entities": "array"}},
        descriptor={"requiredKeys": ["entities"], "permittedKeys": ["entities"], "types": {"entities": "array"},
                    "successIndicator": None, "channelRoles": {"/entities": "payload"}, "collectionLocations": [],
                    "protocolSuccessIndicator": "response-status"},
        witness={"witnessId": "create-follows-the-entities", "channel": "arguments",
                 "legs": [{"legId": "create-ada", "inputs": {"arguments": {"entities": ADA}}},
                          {"legId": "create-bob", "inputs": {"arguments": {"entities": [
                              {"name": "Bob", "entityType": "person", "observations": []}]}}}],
                 "relation": {"op": "not", "operands": [{"op": "deep-equality", "operands": [
                     pointer("/interactions/create-ada/response-body/entities"),
                     pointer("/interactions/create-bob/response-body/entities")]}]}},
    )
    read = _tool_op(
        "read-graph", "read_graph", state_change=False, arguments=dict(NO_KEYS),
        descriptor={"requiredKeys": ["entities"], "permittedKeys": ["entities", "relations"],
                    "types": {"entities": "array", "relations": "array"}, "successIndicator": None,
                    "channelRoles": {}, "collectionLocations": [], "protocolSuccessIndicator": "response-status"},
        witness=None,
    )
    plan = [
        {"stepId": "create", "interfaceId": "memory", "operationId": "create-entities", "after": None,
         "cardinality": "exactly-one", "inputBinding": {"arguments": {"entities": {"literal": ADA}}}},
        {"stepId": "read", "interfaceId": "memory", "operationId": "read-graph", "after": "create",
         "cardinality": "exactly-one", "inputBinding": {"arguments": None}},
        {"stepId": "malformed-create", "interfaceId": "memory", "operationId": "create-entities", "after": None,
         "cardinality": "exactly-one", "inputBinding": {"arguments": {"entities": {"matcher": "type-violating"}}}},
    ]
    deep = "deep-equality"
    oracles = [
        oracle("O-001", {"op": "all", "operands": [
            equality(pointer("/interactions/create/response-status"), literal(0)),
            {"op": deep, "operands": [pointer("/interactions/create/response-body/entities"),
                                      pointer("/interactions/create/call-inputs/arguments/entities")]},
        ]}, ["/interactions/create/response-status", "/interactions/create/response-body/entities"],
            "A create answered with isError, or with entities other than the ones sent."),
        oracle("O-002", {"op": deep, "operands": [pointer("/interactions/read/response-body/entities"),
                                                  pointer("/interactions/create/call-inputs/arguments/entities")]},
               ["/interactions/read/response-body/entities", "/interactions/create/call-inputs/arguments/entities"],
               "Created entities a later, independent read_graph does not return.", relation=deep),
        oracle("O-003", equality(pointer("/interactions/malformed-create/response-status"), literal(1)),
               ["/interactions/malformed-create/response-status"],
               "A create whose entities are not a list answered without isError."),
    ]
    behaviors = [
        behavior("B-001", "O-001", "create_entities answers without isError and with the entities it was sent."),
        behavior("B-002", "O-002", "Created entities are returned by a later read_graph."),
        behavior("B-003", "O-003", "create_entities refuses entities that are not a list with isError."),
    ]
    interfaces = [{"logicalId": "memory", "kind": "mcp", "operations": [create, read]}]
    return contract_frame("server-memory-graph", behaviors, oracles, interfaces, plan)


def memory_pass_suite(root: Path, modules: Path) -> Path:
    """``memory_suite`` (the installed server-memory) with :func:`memory_contract`, its evaluator
    choices and one clean-control probe."""
    from tests.npm_memory import memory_suite

    suite = memory_suite(root, modules, memory_file=MEMORY_FILE, tools=("create_entities", "read_graph"))
    assert ENTRY  # the server's entry, staged by memory_suite
    _write(suite / "contract.json", memory_contract())
    _write(suite / "evaluator.json", {"about": "The value sent where the plan leaves one open.", "baselineSteps": [],
                                      "choices": {"malformed-create": {"arguments": {"entities": "not-a-list"}}}})
    shutil.copy(POLICY, suite / "scoring-policy.json")
    _write(suite / "probes" / "P-001.json", {
        "probeId": "P-001", "probeClass": "zero-action", "behaviorId": "B-002", "expectedClean": True, "defects": [],
        "rationale": "The clean control: server-memory as installed, over an empty graph.",
        "qualification": {"noKnownDefectStatement": "@modelcontextprotocol/server-memory as published on npm; no "
                                                    "defect is known in the behaviours this contract states."},
    })
    return suite
