"""A response's content codings are undone as httpx would undo them, but never beyond what the adapter
keeps (evalquality_core/adapters/content_coding.py): a hostile service's decompression bomb, served by a
real child process, is abandoned at ``maxResponseBytes`` without the adapter's process growing by the
bomb's size."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalquality_core.adapters.content_coding import CHUNK, content_codings, decoded
from tests.adapters.http_subject import free_port

PROJECT = Path(__file__).resolve().parents[3]


def _deflate(data: bytes, wbits: int) -> bytes:
    coder = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return coder.compress(data) + coder.flush()


#: Each coding as a server might apply it: (header token, encoder).
CODERS = {
    "gzip": ("gzip", lambda data: _deflate(data, 31)),
    "deflate": ("deflate", lambda data: _deflate(data, 15)),  # a zlib stream, as RFC 9110 means it
    "raw-deflate": ("deflate", lambda data: _deflate(data, -15)),  # what some servers send instead
}

payloads = st.one_of(
    st.binary(max_size=3000),
    st.builds(lambda byte, n: bytes([byte]) * n, st.integers(0, 255), st.integers(0, 400_000)),  # compresses well
)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


@settings(max_examples=150, deadline=None)
@given(payload=payloads, chain=st.lists(st.sampled_from(sorted(CODERS)), max_size=3),
       cuts=st.lists(st.integers(0, 1 << 20), max_size=6), extra=st.sampled_from(["", "identity", "br", "x-gzip"]))
def test_decoding_equals_httpx_and_yields_pieces_no_larger_than_a_chunk(payload: bytes, chain: list[str], cuts: list[int],
                                                                      extra: str) -> None:
    body = payload
    for name in chain:
        body = CODERS[name][1](body)
    tokens = [CODERS[name][0] for name in chain] + ([extra] if extra else [])
    headers = [("content-encoding", ", ".join(tokens))] if tokens else []
    raw = _chunks(body, cuts)
    pieces = list(decoded(raw, content_codings(headers)))
    assert all(len(piece) <= CHUNK for piece in pieces) if chain else pieces == raw
    ours = b"".join(pieces)
    assert ours == httpx.Response(200, headers=headers, content=body).content
    if extra in ("", "identity"):
        assert ours == payload


def test_codings_come_from_every_header_and_unknown_ones_pass_through() -> None:
    assert content_codings([("Content-Encoding", "gzip"), ("content-type", "x"), ("content-encoding", " Deflate ,br")]) == [
        "gzip", "deflate"]
    # Not decoded, as httpx does not: br and zstd without their optional packages, and x-gzip.
    for coding in ("br", "zstd", "x-gzip"):
        assert b"".join(decoded([b"\x00raw"], content_codings([("content-encoding", coding)]))) == b"\x00raw"


def test_more_than_five_stacked_codings_are_refused_before_anything_is_decoded() -> None:
    body = b"five"
    for _ in range(5):
        body = gzip.compress(body)
    assert b"".join(decoded([body], ["gzip"] * 5)) == b"five"
    read: list[bytes] = []

    def raw() -> Iterator[bytes]:
        read.append(body)
        yield body

    with pytest.raises(httpx.DecodingError, match=r"too many content codings in the response \(6 > 5\)"):
        decoded(raw(), ["gzip"] * 5 + ["deflate"])
    assert read == []


def test_a_corrupt_stream_is_httpxs_decoding_error() -> None:
    with pytest.raises(httpx.DecodingError):
        list(decoded([b"this is not gzip at all"], ["gzip"]))
    with pytest.raises(httpx.DecodingError):
        list(decoded([_deflate(b"x" * 100, 15)[:2] + b"\xff" * 20], ["deflate"]))  # a zlib header, then block type 3


def test_data_after_the_end_of_the_stream_is_ignored_as_httpx_ignores_it() -> None:
    body = gzip.compress(b"first") + b"trailing junk"
    assert b"".join(decoded([body], ["gzip"])) == b"first" == httpx.Response(
        200, headers={"content-encoding": "gzip"}, content=body).content


# A hostile service: 512 MiB of zeros, gzipped, then gzipped again (about 6 KB on the wire), declared as
# "Content-Encoding: gzip, gzip". httpx alone inflated the inner layer in one call, about 512 MiB at once.
_BOMB_SERVER = textwrap.dedent(
    """
    import sys, zlib
    from http.server import BaseHTTPRequestHandler, HTTPServer
    inner = zlib.compressobj(1, zlib.DEFLATED, 31)
    zeros = bytes(1 << 24)
    layer = b"".join([inner.compress(zeros) for _ in range(32)] + [inner.flush()])
    outer = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = outer.compress(layer) + outer.flush()

    class Bomb(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *args):
            pass
        def do_GET(self):
            bomb = self.path.startswith("/bomb")
            answer = body if bomb else b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if bomb:
                self.send_header("Content-Encoding", "gzip, gzip")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Bomb)
    print(len(body), flush=True)
    server.serve_forever()
    """
)

# The adapter in a process of its own, so its peak resident size measures this one call.
_PROBE = textwrap.dedent(
    """
    import json, resource, sys
    sys.path.insert(0, {root!r})
    from evalquality_core.adapters.http import HttpAdapter, send_hop
    from evalquality_core.faults import RuntimeFault
    from evalquality_core.probe.api_policy import parse_probe_target_policy
    from tests.adapters.http_subject import authorization, request, resolver

    entry = authorization("notes-svc", "svc.test", {port}, maxResponseBytes=1 << 20, maxElapsedMs=20000)
    adapter = HttpAdapter(parse_probe_target_policy({{"authorizations": [entry]}}), resolver=resolver, mechanism=send_hop)
    adapter.probe(request("/warm-up"))  # the same imports and buffers, then measure
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        adapter.probe(request("/bomb"))
        fault = None
    except RuntimeFault as raised:
        fault = [raised.code, raised.detail]
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({{"fault": fault, "grewMiB": grew / 1024}}))
    """
)


def test_a_decompression_bomb_is_abandoned_at_the_cap_without_being_inflated() -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", _BOMB_SERVER, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        wire_bytes = int(server.stdout.readline())
        assert wire_bytes < 20_000
        probe = subprocess.run([sys.executable, "-c", _PROBE.format(root=str(PROJECT), port=port)],
                               capture_output=True, text=True, timeout=120)
    finally:
        server.kill()
        server.wait()
    assert probe.returncode == 0, probe.stderr
    result = json.loads(probe.stdout)
    assert result["fault"][0] == "budget-exhausted" and "maxResponseBytes (1048576)" in result["fault"][1]
    # A few chunks per layer plus the 1 MiB kept; inflating the inner layer at once would be 512 MiB.
    assert result["grewMiB"] < 64, result
