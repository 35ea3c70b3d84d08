"""A suite's target registry (``targets.toml``): parse, validate, turn into a policy, cross-check.

harness.md A.1–A.2. Text in (the caller reads the file); nothing here touches the filesystem. Each
``[[target]]`` table is one ``CommandTargetAuthorization`` in snake_case; every key is required, as in
the policy (``permitted_environment_keys = []`` must be written out, and ``PATH`` can never be listed).
String values of ``target``, ``target_args`` and ``cwd`` may hold ``{name}`` placeholders (for
example ``{python}``) that the caller fills in ``to_policy``; an unfilled placeholder is refused.

The cross-check is two-way, because a contract naming an executable nobody ships "is fiction that
compiles" and a registered command no contract uses is an authorization nobody reviews: every
(interface, executable) a cli contract names must be registered with the subcommand paths it uses,
and every registered pair must be named by some contract.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.mcp_policy import McpTargetPolicy, mcp_policy_from_entries, parse_mcp_target
from evalquality_core.probe.policy import CommandTargetPolicy, parse_command_target_policy

__all__ = [
    "TARGET_KEYS",
    "TargetCoverage",
    "TargetRegistry",
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
)
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
}
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
    #: The ``kind = "mcp"`` tables (tool servers, ``probe.mcp_policy``), wire-shaped, templates unfilled.
    mcp_entries: tuple[Mapping[str, Any], ...] = ()

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


def parse_targets(text: str, source: str = "targets.toml") -> TargetRegistry:
    """Parse and validate ``targets.toml`` text; any problem is ``schema-parse-failure`` at ``source``.

    Checks: TOML syntax; only ``[[target]]`` at the top level; exactly the keys of ``TARGET_KEYS`` in
    each table; each entry valid as a ``CommandTargetAuthorization`` (so ``PATH`` is refused); no
    (interface_id, executable) pair registered twice.
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fault(source, f"not TOML: {exc}") from None
    unknown = sorted(set(document) - {"target"})
    if unknown:
        raise _fault(source, f"unknown top-level key(s) {', '.join(unknown)}; expected only [[target]] tables")
    tables = document.get("target", [])
    if not isinstance(tables, list):
        raise _fault(source, "target must be an array of tables ([[target]])")
    entries: list[dict[str, Any]] = []
    mcp_entries: list[dict[str, Any]] = []
    placeholders: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for index, table in enumerate(tables):
        where = f"target[{index}]"
        if not isinstance(table, dict):
            raise _fault(source, f"{where} is not a table")
        if "kind" in table:
            if table["kind"] != "mcp":
                raise _fault(source, f"{where} has kind {table['kind']!r}; a [[target]] is a command (no kind) or kind = \"mcp\"")
            mcp_entry, used = parse_mcp_target(table, source, where)
            if any(other["interfaceId"] == mcp_entry["interfaceId"] for other in mcp_entries):
                raise _fault(source, f"{where} registers tool server {mcp_entry['interfaceId']!r} a second time")
            mcp_entries.append(mcp_entry)
            placeholders.update(used)
            continue
        extra = sorted(set(table) - set(TARGET_KEYS))
        if extra:
            raise _fault(source, f"{where} has unknown key(s) {', '.join(extra)}")
        absent = [key for key in TARGET_KEYS if key not in table]
        if absent:
            raise _fault(source, f"{where} lacks required key(s) {', '.join(absent)} (there are no defaults)")
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
    return TargetRegistry(
        source=source, entries=tuple(entries), placeholders=frozenset(placeholders), mcp_entries=tuple(mcp_entries)
    )


@dataclass(frozen=True)
class TargetCoverage:
    """The two-way cross-check: ``unregistered`` (a contract names it, the registry does not),
    ``unpermitted_subcommands`` (registered, but the path a contract uses is not listed) and
    ``unused`` (registered, but no contract names it). ``ok`` when all three are empty."""

    unregistered: tuple[tuple[str, str, str], ...]
    unpermitted_subcommands: tuple[tuple[str, str, str, tuple[str, ...]], ...]
    unused: tuple[tuple[str, str], ...]

    @property
    def ok(self) -> bool:
        """True when every named executable is registered and every registered one is named."""
        return not (self.unregistered or self.unpermitted_subcommands or self.unused)

    def problems(self) -> list[str]:
        """One sentence per problem, for a test failure or a CLI diagnostic."""
        lines = [
            f'contract "{contract}" names interface "{interface}" executable "{executable}", which the registry does not register'
            for contract, interface, executable in self.unregistered
        ]
        lines += [
            f'contract "{contract}" runs interface "{interface}" executable "{executable}" with subcommand path '
            f"[{', '.join(path)}], which the registry does not permit"
            for contract, interface, executable, path in self.unpermitted_subcommands
        ]
        lines += [
            f'the registry registers interface "{interface}" executable "{executable}", which no contract names'
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
