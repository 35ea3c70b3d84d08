"""Undoing an HTTP response's content codings, never producing more than the caller will keep.

A service under test chooses its ``Content-Encoding`` whatever we asked for (the HTTP adapter sends
``accept-encoding: identity`` unless the probe declares one). httpx decodes a whole network chunk at
once, with no bound on the output: a 1,827-byte answer coded ``gzip, gzip`` (a gzip of a gzip of 1 GiB
of zeros) made the adapter's process allocate about 3 GiB before ``maxResponseBytes`` (1 MiB) was even
checked, and one more layer would have been about a terabyte. Here every stage inflates at most
``CHUNK`` bytes per step (``zlib``'s ``max_length``, the rest left in ``unconsumed_tail``) and the stages
are pulled from the end, so nothing is decoded beyond what the caller takes: the caller stops at its cap
and the memory held is a few chunks per stage.

What is decoded is what httpx would decode (the body observed is unchanged): the codings listed, the
last applied undone first; ``gzip``; ``deflate`` as a zlib stream when its first two bytes are a zlib
header, else as raw deflate (servers send both; httpx tries zlib on the first network chunk and falls
back to raw on an error there, which can depend on how the body was split). ``identity`` and every
other coding pass through as they came, as in httpx: ``x-gzip``, and ``br`` and ``zstd`` (httpx decodes
those only with optional packages this project does not install). Data after the
end of a compressed stream is ignored, as httpx does. A corrupt stream raises ``httpx.DecodingError``,
the error httpx raised for it; so do more than ``MAX_CODINGS`` (5) stacked codings, which httpx took.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Iterator

import httpx

#: The most a stage inflates per step.
CHUNK = 65536
#: The most codings a response may stack (urllib3's limit too): each holds a decoder of its own, and
#: no real service stacks more than two.
MAX_CODINGS = 5

_GZIP = zlib.MAX_WBITS | 16
_DEFLATE = zlib.MAX_WBITS
_RAW_DEFLATE = -zlib.MAX_WBITS
_CODINGS = {"gzip": _GZIP, "deflate": _DEFLATE}


def content_codings(headers: Iterable[tuple[str, str]]) -> list[str]:
    """The response's content codings in the order they were applied (every ``content-encoding``
    header, comma-separated, lower-cased), leaving out ``identity`` and codings we do not decode."""
    codings: list[str] = []
    for name, value in headers:
        if name.lower() == "content-encoding":
            codings += [coding.strip().lower() for coding in value.split(",")]
    return [coding for coding in codings if coding in _CODINGS]


def decoded(raw: Iterable[bytes], codings: list[str]) -> Iterator[bytes]:
    """The body with ``codings`` undone, in pieces of at most ``CHUNK`` bytes, decoded only as far as
    it is read. More than ``MAX_CODINGS`` codings is ``httpx.DecodingError`` before anything is read."""
    if len(codings) > MAX_CODINGS:
        raise httpx.DecodingError(f"too many content codings in the response ({len(codings)} > {MAX_CODINGS})")
    stream: Iterable[bytes] = raw
    for coding in reversed(codings):  # the coding applied last is undone first
        stream = _inflate(stream, _CODINGS[coding])
    return iter(stream)


def _is_zlib_header(first: int, second: int) -> bool:
    """RFC 1950: method 8 (deflate) and a header checksum that divides by 31."""
    return first & 0x0F == 8 and (first << 8 | second) % 31 == 0


def _deflate_kind(stream: Iterable[bytes]) -> tuple[int, Iterator[bytes]]:
    """Whether a ``deflate`` body is a zlib stream (RFC 9110) or raw deflate (what some servers send),
    told by its first two bytes, however the body is split; and the body, those bytes included."""
    chunks = iter(stream)
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= 2:
            break
    wbits = _DEFLATE if len(head) >= 2 and _is_zlib_header(head[0], head[1]) else _RAW_DEFLATE
    return wbits, itertools.chain([head] if head else [], chunks)


def _inflate(stream: Iterable[bytes], wbits: int) -> Iterator[bytes]:
    if wbits == _DEFLATE:
        wbits, stream = _deflate_kind(stream)
    decoder = zlib.decompressobj(wbits)
    for data in stream:
        while not decoder.eof:  # what follows the end of the stream is ignored
            try:
                out = decoder.decompress(data, CHUNK)
            except zlib.error as error:
                raise httpx.DecodingError(str(error)) from None
            # Input is left over only when the output filled CHUNK: with no output, all of it was taken.
            data = decoder.unconsumed_tail
            if not out:
                break
            yield out
    try:
        rest = decoder.flush()
    except zlib.error as error:
        raise httpx.DecodingError(str(error)) from None
    if rest:
        yield rest
