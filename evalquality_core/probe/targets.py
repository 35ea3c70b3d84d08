"""A suite's target registry (``targets.toml``): parse, validate, turn into a policy, cross-check.

harness.md A.1–A.2. Text in (the caller reads the file); nothing here touches the filesystem. Each
``[[target]]`` table is one ``CommandTargetAuthorization`` in snake_case; every key is required, as in
the policy (``permitted_environment_keys = []`` must be written out, and ``PATH`` can never be listed),
except ``target_args`` (default ``[]``, as the reference's policy), ``end_of_options`` (default none)
and ``dash_positionals`` (default false); see ``probe/policy.py`` for what the last two mean.
String values of ``target``, ``target_args`` and ``cwd`` may hold ``{name}`` placeholders (for
example ``{python}``) that the caller fills in ``to_policy``; an unfilled placeholder is refused.

The cross-check is two-way, because a contract naming an executable nobody ships "is fiction that
compiles" and a registered command no contract uses is an authorization nobody reviews: every
(interface, executable) a cli contract names must be registered with the subcommand paths it uses,
and every registered pair must be named by some contract. api entries are checked the same way
(interface and methods), and so are tool servers (``cross_check_mcp_targets``: interface, and the
tools the contract's mcp operations call against the entry's ``tools``, both ways).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalquality_core.canonical.nesting import TooDeep, load_toml
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.agent_targets import AGENT_KEYS, AgentProfile, parse_agent_keys, parse_vendors
from evalquality_core.probe.api_policy import ProbeTargetPolicy, parse_probe_target_policy
from evalquality_core.probe.mcp_policy import McpTargetPolicy, mcp_policy_from_entries, parse_mcp_target
from evalquality_core.probe.policy import (
    MAX_ELAPSED_MS,
    CommandTargetPolicy,
    parse_command_target_policy,
    time_budget_problem,
)
from evalquality_core.probe.templates import TemplateError, template_fields

__all__ = [
    "API_TARGET_KEYS",
    "TARGET_KEYS",
    "TargetCoverage",
    "TargetRegistry",
    "McpTargetCoverage",
    "cross_check_api_targets",
    "cross_check_mcp_targets",
    "cross_check_targets",
    "parse_targets",
]

#: The keys of one ``[[target]]`` table, in the order the README documents them.
TARGET_KEYS: tuple[str, ...] = (
    "interface_id",
    "executable",
    "target",
    "target_args",
    "permitted_subcommand_paths",
    "permitted_environment_keys",
    "cwd",
    "artifacts",
    "max_elapsed_ms",
    "max_output_bytes",
    "end_of_options",
    "dash_positionals",
)
#: Keys that may be left out, with the value they then take (``target_args`` as the reference's policy).
OPTIONAL_TARGET_KEYS: dict[str, Any] = {"target_args": [], "end_of_options": None, "dash_positionals": False}
_CAMEL = {
    "interface_id": "interfaceId",
    "executable": "executable",
    "target": "target",
    "target_args": "targetArgs",
    "permitted_subcommand_paths": "permittedSubcommandPaths",
    "permitted_environment_keys": "permittedEnvironmentKeys",
    "cwd": "cwd",
    "artifacts": "artifacts",
    "max_elapsed_ms": "maxElapsedMs",
    "max_output_bytes": "maxOutputBytes",
    "end_of_options": "endOfOptions",
    "dash_positionals": "dashPositionals",
}
#: The keys of one ``[[target]]`` table with ``kind = "api"`` (an HTTP authorization, preflight-
#: adapter.md §4.9), in the order the README documents them; all required, no defaults.
API_TARGET_KEYS: tuple[str, ...] = (
    "interface_id",
    "scheme",
    "host",
    "port",
    "addresses",
    "methods",
    "safe_methods",
    "max_redirects",
    "max_elapsed_ms",
    "max_request_bytes",
    "max_response_bytes",
)
_API_CAMEL = {
    "interface_id": "interfaceId",
    "scheme": "scheme",
    "host": "host",
    "port": "port",
    "addresses": "addresses",
    "methods": "methods",
    "safe_methods": "safeMethods",
    "max_redirects": "maxRedirects",
    "max_elapsed_ms": "maxElapsedMs",
    "max_request_bytes": "maxRequestBytes",
    "max_response_bytes": "maxResponseBytes",
}
#: api fields that may hold ``{name}`` placeholders; ``port`` may be exactly one placeholder (a
#: string in TOML) filled with a decimal port number.
_API_TEMPLATED = ("host", "port", "addresses")
#: Stand-ins used only to validate a templated api entry's shape at parse time.
_API_STAND_INS = {"host": "placeholder.invalid", "port": 1, "addresses": "127.0.0.1"}
_KINDS = ("cli", "api", "mcp")
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_TEMPLATED = ("target", "target_args", "cwd")


def _fault(source: str, detail: str) -> RuntimeFault:
    return RuntimeFault("schema-parse-failure", source, detail)


@dataclass(frozen=True)
class TargetRegistry:
    """The parsed registry: one wire-shaped (camelCase) authorization per ``[[target]]``, templates
    unfilled. ``placeholders`` names every ``{name}`` the entries use."""

    source: str
    entries: tuple[Mapping[str, Any], ...]
    placeholders: frozenset[str]
    #: The ``kind = "api"`` entries (wire-shaped ``ProbeTargetAuthorization``s, templates unfilled).
    api_entries: tuple[Mapping[str, Any], ...] = ()
    #: The ``[service]`` table (how an HTTP system under test is started), or ``None``.
    service: Mapping[str, Any] | None = None
    #: The ``kind = "mcp"`` tables (tool servers, ``probe.mcp_policy``), wire-shaped, templates unfilled.
    mcp_entries: tuple[Mapping[str, Any], ...] = ()
    #: Where each of ``mcp_entries`` stands in the file (``target[3]``), for diagnostics.
    mcp_places: tuple[str, ...] = ()
    #: Agent keys of cli entries (``probe/agent_targets.py``), by (interfaceId, executable); a pair
    #: absent here is a plain target.
    agents: Mapping[tuple[str, str], AgentProfile] = dataclasses.field(default_factory=dict)
    #: The ``[vendors]`` table: vendor -> legs of that vendor in flight at once.
    vendors: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def agent_of(self, interface_id: Any, executable: Any) -> AgentProfile | None:
        """The agent profile of a cli pair, ``None`` for a plain target."""
        return self.agents.get((interface_id, executable))

    def with_budgets_scaled(self, factor: int) -> TargetRegistry:
        """The same registry with every entry's ``maxElapsedMs`` multiplied by ``factor`` (capped at the
        policies' limit): for runs that are slower by design, as the mutants' traced coverage runs."""

        def scaled(entries: tuple[Mapping[str, Any], ...]) -> tuple[Mapping[str, Any], ...]:
            return tuple({**entry, "maxElapsedMs": min(entry["maxElapsedMs"] * factor, MAX_ELAPSED_MS)} for entry in entries)

        return dataclasses.replace(
            self, entries=scaled(self.entries), api_entries=scaled(self.api_entries), mcp_entries=scaled(self.mcp_entries)
        )

    def pairs(self) -> list[tuple[str, str]]:
        """The registered (interfaceId, executable) pairs, in declaration order."""
        return [(entry["interfaceId"], entry["executable"]) for entry in self.entries]

    def to_policy(self, substitutions: Mapping[str, str] | None = None) -> CommandTargetPolicy:
        """Fill the placeholders and return the typed policy; a missing substitution is refused."""
        values = dict(substitutions or {})
        missing = sorted(self.placeholders - set(values))
        if missing:
            raise _fault(self.source, f"no value given for placeholder(s) {', '.join('{' + m + '}' for m in missing)}")

        def fill(text: str) -> str:
            return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)

        authorizations = []
        for entry in self.entries:
            filled = dict(entry)
            filled["target"] = fill(entry["target"])
            filled["targetArgs"] = [fill(arg) for arg in entry["targetArgs"]]
            filled["cwd"] = fill(entry["cwd"])
            authorizations.append(filled)
        return parse_command_target_policy({"authorizations": authorizations}, self.source)

    def to_mcp_policy(self, substitutions: Mapping[str, str] | None = None) -> McpTargetPolicy:
        """The tool-server policy of the ``kind = "mcp"`` tables, placeholders filled."""
        return mcp_policy_from_entries(self.mcp_entries, dict(substitutions or {}), self.source)

    def api_interfaces(self) -> list[str]:
        """The interface ids of the api entries, in declaration order (repeats kept once)."""
        return list(dict.fromkeys(entry["interfaceId"] for entry in self.api_entries))

    def to_api_policy(self, substitutions: Mapping[str, str] | None = None) -> ProbeTargetPolicy:
        """Fill the placeholders of the api entries and return their typed ``ProbeTargetPolicy``;
        a missing substitution, or a ``port`` that is not a number once filled, is refused."""
        values = dict(substitutions or {})
        authorizations = [_fill_api_entry(entry, values, self.source) for entry in self.api_entries]
        return parse_probe_target_policy({"authorizations": authorizations}, self.source)


def _api_placeholders(entry: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for key in ("host", "port", "addresses"):
        value = entry[key]
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                found.update(_PLACEHOLDER.findall(text))
    return found


def _fill_api_entry(entry: Mapping[str, Any], values: Mapping[str, Any], source: str) -> dict[str, Any]:
    missing = sorted(_api_placeholders(entry) - set(values))
    if missing:
        raise _fault(source, f"no value given for placeholder(s) {', '.join('{' + m + '}' for m in missing)}")

    def fill(text: Any) -> Any:
        return _PLACEHOLDER.sub(lambda match: str(values[match.group(1)]), text) if isinstance(text, str) else text

    filled = dict(entry)
    filled["host"] = fill(entry["host"])
    filled["addresses"] = [fill(a) for a in entry["addresses"]]
    port = fill(entry["port"])
    if isinstance(port, str):
        if not port.isdigit():
            raise _fault(source, f'port of interface "{entry["interfaceId"]}" is "{port}" once filled, not a number')
        port = int(port)
    filled["port"] = port
    return filled


def _api_entry(table: Mapping[str, Any], where: str, source: str) -> dict[str, Any]:
    extra = sorted(set(table) - set(API_TARGET_KEYS) - {"kind"})
    if extra:
        raise _fault(source, f"{where} has unknown key(s) {', '.join(extra)}")
    absent = [key for key in API_TARGET_KEYS if key not in table]
    if absent:
        raise _fault(source, f"{where} lacks required key(s) {', '.join(absent)} (there are no defaults)")
    entry = {_API_CAMEL[key]: table[key] for key in API_TARGET_KEYS}
    port = entry["port"]
    if isinstance(port, str) and not _PLACEHOLDER.fullmatch(port):
        raise _fault(source, f'{where} port "{port}" is neither a number nor one {{name}} placeholder')
    stand_ins = {name: _API_STAND_INS["port"] for name in _PLACEHOLDER.findall(port)} if isinstance(port, str) else {}
    for key in ("host", "addresses"):
        value = entry[key]
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                for name in _PLACEHOLDER.findall(text):
                    stand_ins.setdefault(name, _API_STAND_INS[key])
    try:
        parse_probe_target_policy({"authorizations": [_fill_api_entry(entry, stand_ins, source)]}, f"{source}:{where}")
    except RuntimeFault as fault:
        raise _fault(source, f"{where} ({table.get('interface_id')!r}): {fault.detail}") from None
    return entry


def parse_targets(text: str, source: str = "targets.toml") -> TargetRegistry:
    """Parse and validate ``targets.toml`` text; any problem is ``schema-parse-failure`` at ``source``.

    Checks: TOML syntax; only ``[[target]]`` at the top level; exactly the keys of ``TARGET_KEYS`` in
    each table; each entry valid as a ``CommandTargetAuthorization`` (so ``PATH`` is refused); no
    (interface_id, executable) pair registered twice.
    """
    try:
        document = load_toml(text)  # nesting bounded before tomllib could recurse (canonical/nesting.py)
    except TooDeep as exc:
        raise _fault(source, str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise _fault(source, f"not TOML: {exc}") from None
    except ValueError:  # an integer past Python's int-from-text limit (a 5000-digit budget, say)
        raise _fault(source, f"holds an integer of more than {sys.get_int_max_str_digits()} digits, which no key accepts") from None
    unknown = sorted(set(document) - {"target", "service", "vendors"})
    if unknown:
        raise _fault(
            source, f"unknown top-level key(s) {', '.join(unknown)}; expected [[target]] tables, [service] and [vendors]"
        )
    vendors = parse_vendors(document.get("vendors"), source)
    agents: dict[tuple[str, str], AgentProfile] = {}
    service = _service_table(document.get("service"), source)
    tables = document.get("target", [])
    if not isinstance(tables, list):
        raise _fault(source, "target must be an array of tables ([[target]])")
    entries: list[dict[str, Any]] = []
    api_entries: list[dict[str, Any]] = []
    mcp_entries: list[dict[str, Any]] = []
    mcp_places: list[str] = []
    placeholders: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for index, table in enumerate(tables):
        where = f"target[{index}]"
        if not isinstance(table, dict):
            raise _fault(source, f"{where} is not a table")
        kind = table.get("kind", "cli")
        if kind not in _KINDS:
            raise _fault(source, f'{where} has kind {kind!r}; expected "cli" (the default), "api" or "mcp"')
        # One bound for every kind, checked here where it is read (a missing key is each kind's to name).
        problem = time_budget_problem("max_elapsed_ms", table["max_elapsed_ms"]) if "max_elapsed_ms" in table else None
        if problem is not None:
            raise _fault(source, f"{where} ({table.get('interface_id')!r}): {problem}")
        if kind == "api":
            api_entry = _api_entry(table, where, source)
            placeholders.update(_api_placeholders(api_entry))
            api_entries.append(api_entry)
            continue
        if kind == "mcp":
            mcp_entry, used = parse_mcp_target(table, source, where)
            if any(other["interfaceId"] == mcp_entry["interfaceId"] for other in mcp_entries):
                raise _fault(source, f"{where} registers tool server {mcp_entry['interfaceId']!r} a second time")
            mcp_entries.append(mcp_entry)
            mcp_places.append(where)
            placeholders.update(used)
            continue
        agent_keys = {key: value for key, value in table.items() if key in AGENT_KEYS}
        table = {key: value for key, value in table.items() if key != "kind" and key not in AGENT_KEYS}
        extra = sorted(set(table) - set(TARGET_KEYS))
        if extra:
            raise _fault(source, f"{where} has unknown key(s) {', '.join(extra)}")
        absent = [key for key in TARGET_KEYS if key not in table and key not in OPTIONAL_TARGET_KEYS]
        if absent:
            raise _fault(source, f"{where} lacks required key(s) {', '.join(absent)} (there are no defaults)")
        table = {**OPTIONAL_TARGET_KEYS, **table}
        entry = {_CAMEL[key]: table[key] for key in TARGET_KEYS}
        for key in _TEMPLATED:
            texts = table[key] if isinstance(table[key], list) else [table[key]]
            for text_value in texts:
                if isinstance(text_value, str):
                    placeholders.update(_PLACEHOLDER.findall(text_value))
        # Validate the shape now (placeholders are plain text to the schema).
        try:
            parse_command_target_policy({"authorizations": [entry]}, f"{source}:{where}")
        except RuntimeFault as fault:
            raise _fault(source, f"{where} ({table.get('interface_id')!r}): {fault.detail}") from None
        pair = (entry["interfaceId"], entry["executable"])
        if pair in seen:
            raise _fault(source, f"{where} registers interface {pair[0]!r} and executable {pair[1]!r} a second time")
        seen.add(pair)
        entries.append(entry)
        if agent_keys:
            agents[pair] = parse_agent_keys(agent_keys, where, source, vendors)
    if service is not None:
        # the command's other placeholders must be filled like the entries' ({python}); a value missing
        # for one is refused by to_policy, not first met when a service is started
        placeholders.update(name for part in service["command"] for name in template_fields(part))
        placeholders.discard(service["port_placeholder"])  # filled per call by the service adapter
    return TargetRegistry(
        source=source, entries=tuple(entries), placeholders=frozenset(placeholders), api_entries=tuple(api_entries),
        service=service, mcp_entries=tuple(mcp_entries), mcp_places=tuple(mcp_places), agents=agents,
        vendors=vendors,
    )


#: The keys of the ``[service]`` table, all required.
SERVICE_KEYS: tuple[str, ...] = ("command", "cwd", "port_placeholder", "ready_timeout_ms")


def _service_table(table: Any, source: str) -> dict[str, Any] | None:
    """Validate ``[service]``: a non-empty command (strings), a relative ``cwd``, the port placeholder
    (which the command must use) and a readiness timeout within the one time-budget bound."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise _fault(source, "service must be a table ([service])")
    extra = sorted(set(table) - set(SERVICE_KEYS))
    if extra:
        raise _fault(source, f"[service] has unknown key(s) {', '.join(extra)}")
    absent = [key for key in SERVICE_KEYS if key not in table]
    if absent:
        raise _fault(source, f"[service] lacks required key(s) {', '.join(absent)} (there are no defaults)")
    command, cwd, placeholder, timeout = (table[key] for key in SERVICE_KEYS)
    if not isinstance(command, list) or not command or not all(isinstance(part, str) and part for part in command):
        raise _fault(source, "[service] command must be a non-empty array of non-empty strings")
    if not isinstance(cwd, str) or not cwd or cwd.startswith("/") or ".." in cwd.split("/"):
        raise _fault(source, f"[service] cwd {cwd!r} must be a path inside the staged workspace")
    if not isinstance(placeholder, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", placeholder):
        raise _fault(source, f"[service] port_placeholder {placeholder!r} must be a placeholder name")
    used: list[str] = []
    for index, part in enumerate(command):
        try:
            used.extend(template_fields(part))
        except TemplateError as problem:
            raise _fault(source, f"[service] command[{index}] {part!r}: {problem}") from None
    if placeholder not in used:
        raise _fault(source, f"[service] command never uses {{{placeholder}}}, so the server cannot learn its port")
    problem = time_budget_problem("[service] ready_timeout_ms", timeout)
    if problem is not None:
        raise _fault(source, problem)
    return dict(table)


@dataclass(frozen=True)
class TargetCoverage:
    """The two-way cross-check: ``unregistered`` (a contract names it, the registry does not),
    ``unpermitted_subcommands`` (registered, but the path a contract uses is not listed) and
    ``unused`` (registered, but no contract names it). ``ok`` when all three are empty."""

    unregistered: tuple[tuple[str, str, str], ...]
    unpermitted_subcommands: tuple[tuple[str, str, str, tuple[str, ...]], ...]
    unused: tuple[tuple[str, str], ...]
    #: What the second slot of a row is: ``executable`` (cli) or ``method`` (api).
    noun: str = "executable"

    @property
    def ok(self) -> bool:
        """True when every named executable is registered and every registered one is named."""
        return not (self.unregistered or self.unpermitted_subcommands or self.unused)

    def problems(self) -> list[str]:
        """One sentence per problem, for a test failure or a CLI diagnostic."""
        noun = self.noun
        lines = [
            f'contract "{contract}" names interface "{interface}" {noun} "{executable}", which the registry does not register'
            for contract, interface, executable in self.unregistered
        ]
        lines += [
            f'contract "{contract}" runs interface "{interface}" executable "{executable}" with subcommand path '
            f"[{', '.join(path)}], which the registry does not permit"
            if noun == "executable" else
            f'contract "{contract}" calls interface "{interface}" with {noun} "{executable}", which the registry does not permit'
            for contract, interface, executable, path in self.unpermitted_subcommands
        ]
        lines += [
            f'the registry registers interface "{interface}"' + (f' {noun} "{executable}"' if executable else "")
            + ", which no contract names"
            for interface, executable in self.unused
        ]
        return lines


def _wire(contract: Any) -> Mapping[str, Any]:
    if hasattr(contract, "model_dump"):
        return contract.model_dump(mode="json", by_alias=True)
    if not isinstance(contract, Mapping):
        raise TypeError(f"a contract must be wire JSON or a model, not {type(contract).__name__}")
    return contract


def cross_check_targets(registry: TargetRegistry, contracts: Iterable[Any]) -> TargetCoverage:
    """Cross-check the registry against cli contracts (wire JSON dicts or ``EvalContract`` models)."""
    permitted: dict[tuple[str, str], list[list[str]]] = {}
    for entry in registry.entries:
        permitted.setdefault((entry["interfaceId"], entry["executable"]), []).extend(
            entry["permittedSubcommandPaths"]
        )
    named: set[tuple[str, str]] = set()
    unregistered: list[tuple[str, str, str]] = []
    unpermitted: list[tuple[str, str, str, tuple[str, ...]]] = []
    for contract in contracts:
        wire = _wire(contract)
        contract_id = str(wire.get("contractId", "?"))
        for interface in wire.get("permittedInterfaces", []):
            if interface.get("kind") != "cli":
                continue
            for operation in interface.get("operations", []):
                invocation = operation.get("invocation") or {}
                pair = (interface["logicalId"], invocation.get("executable", ""))
                path = list(invocation.get("subcommandPath", []))
                named.add(pair)
                if pair not in permitted:
                    row = (contract_id, *pair)
                    if row not in unregistered:
                        unregistered.append(row)
                elif path not in permitted[pair]:
                    row4 = (contract_id, *pair, tuple(path))
                    if row4 not in unpermitted:
                        unpermitted.append(row4)
    unused = tuple(pair for pair in registry.pairs() if pair not in named)
    return TargetCoverage(tuple(unregistered), tuple(unpermitted), unused)


def cross_check_api_targets(registry: TargetRegistry, contracts: Iterable[Any]) -> TargetCoverage:
    """The same two-way check for api contracts: every api interface a contract names must be
    registered, with every method its operations use; every registered api interface must be
    named. Rows reuse ``TargetCoverage`` with the method in the executable slot."""
    methods: dict[str, set[str]] = {}
    for entry in registry.api_entries:
        methods.setdefault(entry["interfaceId"], set()).update(entry["methods"])
    named: set[str] = set()
    unregistered: list[tuple[str, str, str]] = []
    unpermitted: list[tuple[str, str, str, tuple[str, ...]]] = []
    for contract in contracts:
        wire = _wire(contract)
        contract_id = str(wire.get("contractId", "?"))
        for interface in wire.get("permittedInterfaces", []):
            if interface.get("kind") != "api":
                continue
            logical = interface["logicalId"]
            named.add(logical)
            for operation in interface.get("operations", []):
                method = str(operation.get("method", ""))
                if logical not in methods:
                    row = (contract_id, logical, method)
                    if row not in unregistered:
                        unregistered.append(row)
                elif method not in methods[logical]:
                    row4 = (contract_id, logical, method, ())
                    if row4 not in unpermitted:
                        unpermitted.append(row4)
    unused = tuple((interface, "") for interface in registry.api_interfaces() if interface not in named)
    return TargetCoverage(tuple(unregistered), tuple(unpermitted), unused, noun="method")


@dataclass(frozen=True)
class McpTargetCoverage:
    """The two-way cross-check of the ``kind = "mcp"`` entries against the contracts' mcp interfaces.

    ``unregistered``: (contract, interface) a contract declares as an mcp interface that no mcp entry
    registers. ``unlisted_tools``: (place, interface, tool, contract, operation), a tool an operation
    calls that the entry's ``tools`` does not list (the adapter would deny it). ``unused``: (place,
    interface, how the contracts declare it, or "" when none names it), an entry no contract declares
    as a tool server. ``uncalled_tools``: (place, interface, tool), a listed tool no operation calls
    (an authorization nobody reviews). ``ok`` when all four are empty."""

    unregistered: tuple[tuple[str, str], ...]
    unlisted_tools: tuple[tuple[str, str, str, str, str], ...]
    unused: tuple[tuple[str, str, str], ...]
    uncalled_tools: tuple[tuple[str, str, str], ...]

    @property
    def ok(self) -> bool:
        """True when every tool server and tool a contract calls is registered, and nothing else."""
        return not (self.unregistered or self.unlisted_tools or self.unused or self.uncalled_tools)

    def problems(self) -> list[str]:
        """One sentence per problem, naming the registry entry (``target[i]``) where there is one."""
        lines = [
            f'contract "{contract}" declares tool server "{interface}", which no kind = "mcp" entry registers'
            for contract, interface in self.unregistered
        ]
        lines += [
            f'{place} ("{interface}") does not list tool "{tool}", which contract "{contract}" calls in operation '
            f'"{operation}"'
            for place, interface, tool, contract, operation in self.unlisted_tools
        ]
        lines += [
            f'{place} registers tool server "{interface}", which '
            + (f"the contract declares as a {kind} interface, not mcp" if kind else "no contract names")
            for place, interface, kind in self.unused
        ]
        lines += [
            f'{place} ("{interface}") lists tool "{tool}", which no operation of a contract calls'
            for place, interface, tool in self.uncalled_tools
        ]
        return lines


def cross_check_mcp_targets(registry: TargetRegistry, contracts: Iterable[Any]) -> McpTargetCoverage:
    """Cross-check the registry's tool servers against the contracts' mcp interfaces, both ways."""
    places = dict(zip((entry["interfaceId"] for entry in registry.mcp_entries), registry.mcp_places, strict=False))
    listed = {entry["interfaceId"]: list(entry["tools"]) for entry in registry.mcp_entries}
    declared: dict[str, str] = {}  # interface -> the kind a contract gives it
    called: dict[str, set[str]] = {}
    unregistered: list[tuple[str, str]] = []
    unlisted: list[tuple[str, str, str, str, str]] = []
    for contract in contracts:
        wire = _wire(contract)
        contract_id = str(wire.get("contractId", "?"))
        for interface in wire.get("permittedInterfaces", []):
            logical, kind = str(interface.get("logicalId", "")), str(interface.get("kind", ""))
            declared.setdefault(logical, kind)
            if kind != "mcp":
                continue
            declared[logical] = "mcp"
            if logical not in listed:
                if (contract_id, logical) not in unregistered:
                    unregistered.append((contract_id, logical))
                continue
            for operation in interface.get("operations", []):
                tool = str(operation.get("toolName", ""))
                called.setdefault(logical, set()).add(tool)
                if tool not in listed[logical]:
                    row = (places.get(logical, "target[?]"), logical, tool, contract_id, str(operation.get("operationId", "")))
                    if row not in unlisted:
                        unlisted.append(row)
    unused = tuple(
        (places.get(interface, "target[?]"), interface, declared.get(interface, ""))
        for interface in listed
        if declared.get(interface) != "mcp"
    )
    uncalled = tuple(
        (places.get(interface, "target[?]"), interface, tool)
        for interface, tools in listed.items()
        if declared.get(interface) == "mcp"
        for tool in tools
        if tool not in called.get(interface, set())
    )
    return McpTargetCoverage(tuple(unregistered), tuple(unlisted), unused, uncalled)
