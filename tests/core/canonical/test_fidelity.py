"""Fidelity fixes found by running the reference's own scanner cases against us (issue 10)."""

from __future__ import annotations

import pytest

from evalquality_core.canonical.digest import digest_artifact
from evalquality_core.canonical.json import canonical_bytes, scan_json
from evalquality_core.faults import RuntimeFault


def _nested(depth: int, inner: str = "") -> str:
    return "[" * depth + inner + "]" * depth


@pytest.mark.parametrize("inner", ["", "1"])
def test_1024_deep_is_read_and_canonicalized(inner):
    value = scan_json(_nested(1024, inner))
    assert canonical_bytes(value) == _nested(1024, inner).encode()
    assert digest_artifact(value).startswith("sha256:")


def test_1025_deep_is_refused_by_scanner_and_canonicalization():
    with pytest.raises(RuntimeFault) as caught:
        scan_json(_nested(1025), "EvalContract")
    assert (caught.value.code, caught.value.artifact_path) == ("non-canonicalizable-value", "EvalContract")
    value: list = []
    cursor = value
    for _ in range(1024):  # 1025 lists in memory
        cursor.append([])
        cursor = cursor[0]
    with pytest.raises(RuntimeFault) as caught:
        canonical_bytes(value)
    assert caught.value.code == "non-canonicalizable-value" and "exceeds 1024" in caught.value.detail


@pytest.mark.parametrize("text", ['"\\ud800"', '{"a": "\\udc00"}', '{"\\ud800": 1}', '[["x", "\\ud83d"]]'])
def test_a_lone_surrogate_reports_the_given_artifact_path(text):
    with pytest.raises(RuntimeFault) as caught:
        scan_json(text, "Probe")
    assert (caught.value.code, caught.value.artifact_path) == ("non-canonicalizable-value", "Probe")
    assert "lone surrogate" in caught.value.detail


@pytest.mark.parametrize(("text", "offset"), [("[01]", 1), ("01", 0), ("-01", 1), ('{"a":00}', 5), ("[1,012]", 3)])
def test_a_leading_zero_says_so(text, offset):
    with pytest.raises(RuntimeFault) as caught:
        scan_json(text, "X")
    assert caught.value.detail == f"leading zero in a number at offset {offset}"


@pytest.mark.parametrize("text", ["[10]", "[1.05]", "[1e05]", "[0]", "-0", "[0.5]"])
def test_zeros_inside_numbers_are_fine(text):
    scan_json(text)
