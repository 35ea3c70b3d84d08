"""Upgrade a contract, probe or sealed run record to the newest stamp, where that is mechanical (issue 11).

``migrate_document(document, contract=None)`` is pure: it reads the document at its own stamp (every
stamp we read), applies the additions each later stamp made, re-reads the result at the newest stamp
and returns its wire form. Where a step is not mechanical it refuses with the reason
(:class:`MigrationRefusal`, the CLI's exit 4) instead of guessing:

* **contract 4/5 → 7**: each plan step and each sibling-group member gains ``interfaceId`` — the one
  interface that declares its ``operationId``. No interface, or several, is a refusal naming the
  step (the pair identity of 5.0.0 cannot be invented). An api-shaped ``mcp`` interface (contract
  4/5) has no tool-call form to become: refused. Contract 6 → 7 is a re-stamp.
* **probe 5 → 6**: a re-stamp (probe 6 only admits more: tool-call signatures, raw bodies).
* **record 4/5/6/7 → 8**: ``invalidReason`` goes (refused when it is not ``null``: that is a
  statement 6 cannot carry); ``callInputs.arguments`` and ``quotedEvidence[].artifactId`` are added
  as ``null`` where a record 4 lacks them (a quote from the ``artifact`` channel cannot say which
  artifact: refused); every observation gains ``interfaceId`` from ``contract`` (required for
  records before 7: the interface declaring the observation's ``operationId``, refused when not
  exactly one) and ``callInputs.bodyEncoding: null`` (records before 8 carry no raw body).

A migrated contract has a new digest, and a record keeps the ``contractDigest`` and
``sealedBriefDigest`` it was sealed with: it still names the contract as it was. Records are
evidence of a past run, so the way forward for trials is to keep scoring them against the contract
they were sealed with (every older stamp is still read) or to run them again against the migrated
contract; ``migrate`` never rewrites a digest.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from evalquality_core.artifacts.base import check_stamp, read_artifact, to_wire
from evalquality_core.artifacts.contract import FIRST_PAIR_CONTRACT, EvalContract
from evalquality_core.artifacts.probe import Probe
from evalquality_core.artifacts.run_record import (
    FIRST_BODY_ENCODING_RECORD,
    FIRST_PAIR_RECORD,
    SealedRunRecord,
)
from evalquality_core.faults import EvalQualityFault

__all__ = ["MIGRATABLE", "MigrationRefusal", "document_kind", "migrate_document"]

#: Artifact name → model, for the three kinds ``migrate`` upgrades.
MIGRATABLE: dict[str, type[Any]] = {"EvalContract": EvalContract, "Probe": Probe, "SealedRunRecord": SealedRunRecord}


class MigrationRefusal(EvalQualityFault):
    """A document that cannot be upgraded mechanically; ``code`` is ``migration-refused``."""

    def __init__(self, artifact_path: str, detail: str) -> None:
        super().__init__("migration-refused", artifact_path, detail)


def document_kind(document: Any) -> str:
    """Which of the three artifacts a document is, by the keys only it carries."""
    if isinstance(document, Mapping):
        if "interactionPlan" in document and "permittedInterfaces" in document:
            return "EvalContract"
        if "probeClass" in document and "qualification" in document:
            return "Probe"
        if "observations" in document and "oracleDispositions" in document:
            return "SealedRunRecord"
    raise MigrationRefusal(
        "migrate", "the document is not a contract, a probe or a sealed run record (no keys of any of the three)"
    )


def _interfaces_by_operation(contract: Mapping[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for interface in contract.get("permittedInterfaces") or []:
        for operation in interface.get("operations") or []:
            found.setdefault(operation["operationId"], []).append(interface["logicalId"])
    return found


def _the_interface(declaring: Mapping[str, list[str]], operation_id: str, where: str) -> str:
    interfaces = declaring.get(operation_id, [])
    if len(interfaces) != 1:
        why = "no interface declares it" if not interfaces else f"interfaces {', '.join(interfaces)} all declare it"
        raise MigrationRefusal(where, f'cannot name the interface of operation "{operation_id}": {why}')
    return interfaces[0]


def _migrate_contract(contract: dict[str, Any]) -> dict[str, Any]:
    stamp = contract["schemaVersion"]
    if stamp < FIRST_PAIR_CONTRACT:
        for interface in contract["permittedInterfaces"]:
            if interface["kind"] == "mcp":
                raise MigrationRefusal(
                    f"EvalContract.permittedInterfaces[logicalId={interface['logicalId']}]",
                    "an api-shaped mcp interface has no tool-call form to become (toolName, arguments): rewrite it by hand",
                )
        declaring = _interfaces_by_operation(contract)
        plan = []
        for step in contract["interactionPlan"]:
            where = f"EvalContract.interactionPlan[stepId={step['stepId']}]"
            interface_id = _the_interface(declaring, step["operationId"], where)
            plan.append({**step, "interfaceId": interface_id})
        contract["interactionPlan"] = plan
        groups = contract.get("siblingGroups")
        if groups is not None:
            groups["operations"] = [
                [
                    {"interfaceId": _the_interface(declaring, member, "EvalContract.siblingGroups.operations"),
                     "operationId": member}
                    for member in group
                ]
                for group in groups["operations"]
            ]
    contract["schemaVersion"] = EvalContract.WRITTEN_SCHEMA_VERSION
    return contract


def _migrate_record(record: dict[str, Any], contract: Any | None) -> dict[str, Any]:
    stamp = record["schemaVersion"]
    if "invalidReason" in record:
        if record["invalidReason"] is not None:
            raise MigrationRefusal(
                "SealedRunRecord.invalidReason",
                "a non-null invalidReason has no place in record 6 and later: keep this record at its stamp",
            )
        del record["invalidReason"]
    for finding in record["findings"]:
        for position, quote in enumerate(finding.get("quotedEvidence") or []):
            if "artifactId" not in quote:
                if quote["channel"] == "artifact":
                    raise MigrationRefusal(
                        f"SealedRunRecord.findings[findingId={finding['findingId']}].quotedEvidence[{position}]",
                        "a quote from the artifact channel must name its artifact, which a record 4 does not say",
                    )
                quote["artifactId"] = None
    declaring: dict[str, list[str]] | None = None
    if stamp < FIRST_PAIR_RECORD:
        if contract is None:
            raise MigrationRefusal(
                "SealedRunRecord.observations",
                f"a record {stamp} names no interface on its observations: give the contract it was sealed against",
            )
        wire = contract if isinstance(contract, Mapping) else to_wire(contract)
        declaring = _interfaces_by_operation(wire)
    for observation in record["observations"]:
        inputs = observation["callInputs"]
        inputs.setdefault("arguments", None)
        if stamp < FIRST_BODY_ENCODING_RECORD:
            inputs["bodyEncoding"] = None  # no raw body existed before record 8
        if declaring is not None:
            where = f"SealedRunRecord.observations[observationId={observation['observationId']}]"
            observation["interfaceId"] = _the_interface(declaring, observation["operationId"], where)
    record["schemaVersion"] = SealedRunRecord.WRITTEN_SCHEMA_VERSION
    return record


def migrate_document(document: Any, *, contract: Any | None = None) -> dict[str, Any]:
    """The document upgraded to the newest stamp of its kind (module docstring), as a wire value.

    Raises what reading raises for a document we cannot read (``schema-parse-failure``,
    ``schema-version-mismatch``, …) and :class:`MigrationRefusal` where the upgrade is not mechanical.
    A document already at the newest stamp comes back unchanged.
    """
    kind = document_kind(document)
    model = MIGRATABLE[kind]
    check_stamp(model, document, kind)
    current = to_wire(read_artifact(model, document, kind))
    if kind == "EvalContract":
        upgraded = _migrate_contract(copy.deepcopy(current))
    elif kind == "Probe":
        upgraded = {**copy.deepcopy(current), "schemaVersion": Probe.WRITTEN_SCHEMA_VERSION}
    else:
        if contract is not None and not isinstance(contract, Mapping | EvalContract):
            raise MigrationRefusal("EvalContract", "the contract given is not a contract")
        if isinstance(contract, Mapping):
            contract = read_artifact(EvalContract, contract, "EvalContract")
        upgraded = _migrate_record(copy.deepcopy(current), contract)
    return to_wire(read_artifact(model, upgraded, kind))
