"""The quotation audit (AD-32/AD-40 quotation half, scoring.md §7.3): is each quote verbatim in what it cites?

For every defect finding, each ``quotedEvidence`` entry must be a verbatim substring (no case or white-space
normalization) of the quoted channel's text projection of some observation the finding cites. Structured
channels project through RFC 8785 canonical serialization, so a quote of a pretty-printed body never
matches. Identifiers govern the witness match; this audit only reports (an unwitnessed quote invalidates).

Choice where the spec was unsure: tagged ``stdout``/``stderr``/artifact bodies project as their text for
``text``, the canonical serialization for ``json`` and nothing for ``absent``; ``artifact`` projects the one
artifact a quote names by ``artifactId`` (newer records) and nothing when the quote names none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalquality_core.canonical.json import canonical_bytes
from evalquality_core.faults import RuntimeFault

__all__ = ["UnwitnessedQuotation", "audit_quotations", "project_channel"]


@dataclass(frozen=True, slots=True)
class UnwitnessedQuotation:
    """A quote no cited observation witnesses. ``cited_observation_ids``: the cited ids that resolved,
    de-duplicated and sorted ascending."""

    finding_id: str
    quote_index: int
    channel: str
    quote: str
    cited_observation_ids: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        """``{findingId, quoteIndex, channel, quote, citedObservationIds}``."""
        return {
            "findingId": self.finding_id,
            "quoteIndex": self.quote_index,
            "channel": self.channel,
            "quote": self.quote,
            "citedObservationIds": list(self.cited_observation_ids),
        }


def _canonical_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def _witnessed(quote: str, channel: str, artifact_id: str | None, cited: Sequence[Mapping[str, Any]]) -> bool:
    for observation in cited:
        projected = project_channel(observation, channel, artifact_id)
        if projected is not None and quote in projected:
            return True
    return False


def _observed_text(body: Any) -> str | None:
    """A tagged observed body as text; schema-3 plain strings are their own text; ``null`` is nothing."""
    if body is None:
        return None
    if isinstance(body, str):
        return body
    if isinstance(body, Mapping) and "kind" in body:
        if body["kind"] == "absent":
            return None
        if body["kind"] == "text":
            return body["value"]
        return _canonical_text(body["value"])
    return _canonical_text(body)


def _integer_text(value: Any) -> str | None:
    return None if value is None else str(value)


def project_channel(
    observation: Mapping[str, Any], channel: str, artifact_id: str | None = None
) -> str | None:
    """One evidence channel of one observation as the text a quote must be a substring of (None: nothing)."""
    if channel == "response-body":
        body = observation.get("responseBody")
        return None if body is None else _canonical_text(body)
    if channel == "response-headers":
        headers = observation.get("responseHeaders")
        return None if headers is None else _canonical_text(headers)
    if channel == "call-inputs":
        # The whole callInputs object, every transport (null ones included), not one transport.
        inputs = observation.get("callInputs")
        return None if inputs is None else _canonical_text(inputs)
    if channel == "response-status":
        return _integer_text(observation.get("responseStatus"))
    if channel == "exit-code":
        return _integer_text(observation.get("exitCode"))
    if channel in ("stdout", "stderr"):
        return _observed_text(observation.get(channel))
    if channel == "artifact":
        artifacts = observation.get("artifacts") or {}
        if artifact_id is None or artifact_id not in artifacts:
            return None
        return _observed_text(artifacts[artifact_id])
    return None


def audit_quotations(
    observations: Sequence[Mapping[str, Any]], findings: Sequence[Mapping[str, Any]]
) -> tuple[UnwitnessedQuotation, ...]:
    """Audit every defect finding's quotes against the observations it cites (scoring.md §7.3).

    Observations sharing an id are all read. Cited ids naming no observation are skipped (they are
    dangling citations, reported elsewhere). The result is sorted by finding id, quote index, channel,
    quote and the cited ids, so it never depends on array position.
    """
    by_id: dict[str, list[Mapping[str, Any]]] = {}
    for observation in observations:
        by_id.setdefault(observation["observationId"], []).append(observation)
    unwitnessed: list[UnwitnessedQuotation] = []
    for finding in findings:
        if finding.get("findingType") != "defect":
            continue
        cited_ids = tuple(sorted(i for i in set(finding.get("observationIds") or []) if i in by_id))
        cited = [observation for i in cited_ids for observation in by_id[i]]
        for index, quoted in enumerate(finding.get("quotedEvidence") or []):
            quote, channel = quoted["quote"], quoted["channel"]
            try:
                witnessed = _witnessed(quote, channel, quoted.get("artifactId"), cited)
            except RuntimeFault as fault:
                # The fault propagates (a crashed run, not an invalid one), naming the finding.
                path = f"SealedRunRecord.findings[findingId={finding['findingId']}]"
                raise RuntimeFault(fault.code, path, fault.detail) from None  # type: ignore[arg-type]
            if not witnessed:
                unwitnessed.append(
                    UnwitnessedQuotation(finding["findingId"], index, channel, quote, cited_ids)
                )
    # Quotes are free text compared as ECMA does, by UTF-16 code unit.
    unwitnessed.sort(
        key=lambda u: (
            u.finding_id,
            u.quote_index,
            u.channel,
            u.quote.encode("utf-16-be", "surrogatepass"),
            "\u0000".join(u.cited_observation_ids),
        )
    )
    return tuple(unwitnessed)
