"""The strict reader's refusals, with the reference scanner's fault codes (artifacts.md §1.2).

Syntax (including a BOM, invalid UTF-8 and NaN/Infinity) is ``schema-parse-failure``; what parses
but lies outside the AD-36 domain (duplicate keys, lone surrogates, unsafe integers, nesting) is
``non-canonicalizable-value``.
"""

from __future__ import annotations

import pytest

from evalquality_core.canonical import (
    MAX_NESTING_DEPTH,
    canonical_bytes,
    digest_artifact,
    digest_json,
    scan_json,
)
from evalquality_core.faults import RuntimeFault

PARSE = "schema-parse-failure"
DOMAIN = "non-canonicalizable-value"

REFUSED: list[tuple[str, bytes | str, str]] = [
    ("bom", b"\xef\xbb\xbf{}", PARSE),
    ("bom-in-text", "\ufeff{}", PARSE),
    ("invalid-utf8", b'{"a":"\xff"}', PARSE),
    ("overlong-utf8", b'"\xc0\xaf"', PARSE),
    ("encoded-surrogate", b'"\xed\xa0\x80"', PARSE),
    ("duplicate-key", b'{"a":1,"a":2}', DOMAIN),
    ("duplicate-key-escaped", b'{"A":1,"\\u0041":2}', DOMAIN),
    ("duplicate-key-nested", b'[{"x":{"b":1,"\\u0062":2}}]', DOMAIN),
    ("depth-1025", b"[" * (MAX_NESTING_DEPTH + 1) + b"]" * (MAX_NESTING_DEPTH + 1), DOMAIN),
    ("depth-100000", b"[" * 100000, DOMAIN),
    ("unsafe-int", b"9007199254740992", DOMAIN),
    ("unsafe-negative-int", b"-9007199254740992", DOMAIN),
    ("seventeen-digits", b"[10000000000000000]", DOMAIN),
    ("unsafe-float-spelling", b"9007199254740993.0", DOMAIN),
    ("unsafe-exponent", b"1e21", DOMAIN),
    ("overflow", b"1e400", DOMAIN),
    ("lone-surrogate-escaped", b'"\\ud800"', DOMAIN),
    ("lone-low-surrogate-key", b'{"\\udc00":1}', DOMAIN),
    ("lone-surrogate-literal", '"\ud800"', DOMAIN),
    ("nan", b"NaN", PARSE),
    ("infinity", b"[Infinity]", PARSE),
    ("minus-infinity", b'{"a":-Infinity}', PARSE),
    ("leading-zero", b"[01]", PARSE),
    ("bare-fraction", b"[1.]", PARSE),
    ("bare-exponent", b"[1e]", PARSE),
    ("literal-run-on", b"[truex]", PARSE),
    ("control-character", b'"a\x01"', PARSE),
    ("bad-escape", b'"\\x"', PARSE),
    ("short-unicode-escape", b'"\\u12"', PARSE),
    ("trailing-content", b"{} x", PARSE),
    ("empty", b"", PARSE),
    ("single-quotes", b"{'a':1}", PARSE),
    ("trailing-comma", b"[1,]", PARSE),
]


@pytest.mark.parametrize(("name", "data", "code"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refusal(name: str, data: bytes | str, code: str) -> None:
    with pytest.raises(RuntimeFault) as caught:
        scan_json(data, "Doc")
    assert caught.value.code == code
    assert caught.value.artifact_path == "Doc"
    with pytest.raises(RuntimeFault):
        digest_json(data)


ACCEPTED: list[tuple[bytes, object]] = [
    (b"9007199254740991", 9007199254740991),
    (b"-9007199254740991", -9007199254740991),
    (b"-0", 0),
    (b"1.5e-7", 1.5e-7),
    (b'"\\ud83d\\ude00"', "\U0001f600"),
    (b'{"__proto__":1}', {"__proto__": 1}),
    (b" \t\r\n[1 , 2]\n", [1, 2]),
    (b"[" * 1000 + b"]" * 1000, None),
]


@pytest.mark.parametrize(("data", "value"), ACCEPTED, ids=range(len(ACCEPTED)))
def test_accepted(data: bytes, value: object) -> None:
    parsed = scan_json(data)
    if value is not None:
        assert parsed == value
    assert digest_json(data) == digest_artifact(parsed)


def test_number_spelling_canonicalizes_like_ecmascript() -> None:
    assert canonical_bytes(scan_json(b"[5.0,1e-7,-0.0,1E2,0.1]")) == b"[5,1e-7,0,100,0.1]"


def test_a_huge_integer_literal_is_refused_with_a_short_message() -> None:
    literal = "9" * 5000  # past Python's 4300-digit int() limit too
    with pytest.raises(RuntimeFault) as caught:
        scan_json(f'{{"n": {literal}}}'.encode(), "Doc")
    assert caught.value.code == "non-canonicalizable-value"
    assert len(str(caught.value)) < 200
    assert "5000 characters" in caught.value.detail
