"""The HTTP adapter: one api ``ProbeRequest`` → one HTTP exchange → one ``ApiProbeObservation``.

The sibling of the command-line adapter behind the same port (preflight-adapter.md §3, §4.9, §5.4).
Order of operations for one probe:

1. Abort check, request parse (§3.4), ``kind == "api"`` (else ``forbidden-target``).
2. The target of the interface (scheme, host, port: by default the first authorization naming it),
   the URL from ``pathTemplate`` and the path/query channels, and the host's addresses (an address
   literal is never sent to DNS). ``evaluate_api_target`` decides, before any socket opens; the first
   resolved address the policy allows is the one connected to (**DNS pinned**: the connection pool
   can reach only that address for that host and port, so a second lookup cannot rebind it).
3. Headers: the declared ones, minus framing headers the adapter owns (``host``, ``content-length``,
   ``transfer-encoding``, ``connection``), then ``content-type`` for a body when none was declared,
   ``accept-encoding: identity`` when none was declared, ``content-length``, and **``Host`` last**, so
   no declared header can point the request elsewhere. SNI and certificate checks use the host name.
   A header name or value that is not sendable (a CR/LF, a non-token name) is ``schema-parse-failure``.
4. The request's size (request line, headers, body) is checked against ``maxRequestBytes`` before
   the first hop: ``budget-exhausted`` with zero calls.
5. Hops. Each hop is one underlying call (the injectable ``mechanism``), run on the calling thread
   under a watchdog thread that polls the abort signal and the one deadline of the whole exchange
   (``maxElapsedMs``, armed once, before the first hop); either ends the exchange at once (the hop's
   sockets are shut down, which wakes a blocked read) as ``budget-exhausted`` / ``aborted``, even when
   the read returned: a body read to the close of the connection ends where the cut falls, so a
   cut hop is never a (truncated) answer. A 301/302/303/307/308 with a ``Location`` (relative
   allowed) is followed by hand: at most
   ``maxRedirects`` times (the next one is ``budget-exhausted`` after ``maxRedirects + 1`` calls),
   every hop re-resolved and re-checked against the policy (a refused hop is ``forbidden-target``
   after the calls already made). The method changes as browsers (and httpx) do: 303 to ``GET``
   (not ``HEAD``), 302 to ``GET`` (not ``HEAD``), 301 ``POST`` to ``GET``; a changed method drops the
   body. A hop to another origin drops ``authorization`` and ``cookie``.
6. The final response body is streamed and counted; more than ``maxResponseBytes`` bytes (decoded,
   strictly greater) is ``budget-exhausted``, the excess never kept. Content codings are undone here,
   a chunk at a time, so a decompression bomb is never inflated past the cap (content_coding.py).
7. Observation: status, headers (names lower-cased, repeats joined with ``", "``, ``set-cookie``
   dropped), body ``absent`` when empty, ``json`` when the media type is JSON (``application/json``
   or ``*/*+json``) and the text parses, else ``text``. A 4xx/5xx is an observation, never a fault.

Caps come from the authorization that allowed the *first* hop; later hops must be authorized but do
not change the caps. Environment proxies (``HTTP_PROXY`` …) are never used: the transport is built
here, with no proxy and no retries.

Per-request cost (benchmarks/bench_http_adapter.py): each thread builds one ``httpx.Client`` per
scheme over the pinned transport, once, and reuses it for every hop; what makes a hop a hop is set
per hop on the thread (its pin: host, port, validated address, the sockets to shut down). The pool
keeps no connection alive (every hop connects afresh to its own pinned address) and the cookie jar
is emptied after every hop, so reuse carries nothing from one hop to the next. Policy decisions are
remembered per adapter (the policy is frozen; name resolution is never cached), and the watchdog
thread is woken only when a hop needs it sooner than it would wake anyway.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpcore
import httpx

from evalquality_core.adapters.content_coding import content_codings, decoded
from evalquality_core.artifacts.port_messages import (
    ApiProbeObservation,
    ApiProbeRequest,
    CliProbeRequest,
    JsonPayload,
    McpProbeRequest,
    RawBody,
    read_probe_observation,
    read_probe_request,
)
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.address import is_ip_literal, parse_address
from evalquality_core.probe.api_policy import (
    ApiTargetDecision,
    ProbeTargetAuthorization,
    ProbeTargetPolicy,
    ResolvedTarget,
    evaluate_api_target,
)
from evalquality_core.probe.argv import js_key_order, js_string_of, json_stringify
from evalquality_core.probe.observation import NOT_JSON, json_value_of_text
from evalquality_core.probe.port import AbortSignal

__all__ = [
    "REDIRECT_STATUSES",
    "ApiTarget",
    "HopResponse",
    "HttpAdapter",
    "HttpHop",
    "HttpMechanism",
    "TimedApiObservation",
    "assemble_api_observation",
    "resolve_host",
    "send_hop",
]

#: The statuses that redirect when they carry a ``Location``; any other 3xx is an observation.
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_BUDGET_PATH = "ApiProbeRequest"
_ABORT_POLL_S = 0.02
_CHUNK = 65536
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Framing headers the adapter writes itself; a declared one is dropped, never sent.
_OWNED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_CROSS_ORIGIN_DROPPED = frozenset({"authorization", "cookie"})
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_BAD_VALUE = re.compile(r"[\x00\r\n]")
_PATH_TEMPLATE = re.compile(r"^/[A-Za-z0-9\-._~!$&'()*+,;=:@/%{}]*$")
_PARAMETER = re.compile(r"\{([^{}/]+)\}")
_JSON_MEDIA = re.compile(r"^(application/json|[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+\+json)$")

#: Denial reasons decided without an address (the rows before ``address-unparseable``).
_BEFORE_ADDRESS = frozenset({"interface-not-authorized", "scheme-not-authorized", "host-not-authorized", "port-not-authorized"})

_TYPED_REQUESTS = (CliProbeRequest, ApiProbeRequest, McpProbeRequest)
#: At most this many decisions are remembered per adapter (a bound, not a tuning knob).
_DECISION_CACHE = 1024


@dataclass(frozen=True)
class ApiTarget:
    """Where an interface's requests go; the policy must still authorize it (and every address)."""

    scheme: str
    host: str
    port: int


@dataclass(frozen=True)
class HttpHop:
    """One request on the wire: the URL names the host; ``address`` is where the socket connects."""

    method: str
    url: str
    host: str
    port: int
    address: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    deadline: float  # time.monotonic() value when the whole exchange's budget ends
    max_elapsed_ms: int
    max_response_bytes: int


@dataclass(frozen=True)
class HopResponse:
    """What one hop answered. ``body`` is ``None`` for a redirect (its body is never read)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    location: str | None
    elapsed_ms: int = 0


@dataclass(frozen=True)
class TimedApiObservation:
    """An observation with the elapsed time of its exchange (timing stays outside the observation)."""

    observation: ApiProbeObservation
    elapsed_ms: int


class HttpMechanism(Protocol):
    """The one underlying call per hop (injectable so a test can count or break it)."""

    def __call__(self, hop: HttpHop, abort: AbortSignal | None) -> HopResponse:
        """Send the hop once."""
        ...


Resolver = Callable[[str, int], list[str]]


def resolve_host(host: str, port: int) -> list[str]:
    """The addresses of ``host`` in resolver order, duplicates removed; an address literal is
    returned as written (never resolved, so ``010.0.0.1`` stays unparseable instead of octal)."""
    if is_ip_literal(host):
        return [host]
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in seen:
            seen.append(address)
    return seen


# ---------------------------------------------------------------------------------------------
# The real mechanism: httpx over a connection pool that can only reach the pinned address.


class _Sockets:
    """The sockets one hop opened, so an abort or a deadline can shut them down from outside."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.cancelled = False

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.append(sock)
            cancelled = self.cancelled
        if cancelled:
            _shutdown(sock)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            opened = list(self._open)
        for sock in opened:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv(); close() alone does not
    except OSError:
        pass


@dataclass(frozen=True)
class _Pin:
    """Where the hop in flight on this thread may connect: ``host:port`` → ``address`` only."""

    host: str
    port: int
    address: str
    sockets: _Sockets


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects the hop in flight on the calling thread (its ``_Pin``) to its one validated
    address, and nothing else; with no hop in flight it connects nowhere."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        pin: _Pin | None = getattr(_THREAD, "pin", None)
        if pin is None or host.lower().strip("[]") != pin.host or port != pin.port:
            raise httpcore.ConnectError(f"{host}:{port} is not the validated target of this hop")
        if pin.sockets.cancelled:
            raise httpcore.ConnectError("the hop was cancelled")
        stream = self._inner.connect_tcp(pin.address, port, timeout, local_address, socket_options)
        sock = stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            pin.sockets.add(sock)
        return stream

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are never a target")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _Stream(httpx.SyncByteStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        yield from self._inner

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


class _PinnedTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore pool whose network backend is pinned (no proxy, no retry)."""

    def __init__(self, ssl_context: ssl.SSLContext | None) -> None:
        # No keep-alive: every hop opens its own connection to its own pinned address, and no
        # connection outlives the hop that the watchdog can shut down.
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context, network_backend=_PinnedBackend(), retries=0, max_connections=1,
            max_keepalive_connections=0,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = self._pool.handle_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Stream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


_SSL_LOCK = threading.Lock()
_SSL_CONTEXT: list[ssl.SSLContext] = []


def _ssl_context() -> ssl.SSLContext:
    with _SSL_LOCK:
        if not _SSL_CONTEXT:
            _SSL_CONTEXT.append(httpx.create_ssl_context())
        return _SSL_CONTEXT[0]


def is_redirect(status: int, headers: tuple[tuple[str, str], ...]) -> bool:
    """A status that redirects and a ``Location`` to follow."""
    return status in REDIRECT_STATUSES and any(name == "location" for name, _ in headers)


#: Per thread: the hop in flight (``pin``) and one httpx client per scheme over the pinned transport,
#: built once and reused by every hop on that thread (a client costs more to build than a loopback
#: exchange; it keeps no connection, so reuse shares nothing between hops but the code path).
_THREAD = threading.local()


def _client(scheme: str) -> httpx.Client:
    clients: dict[str, httpx.Client] | None = getattr(_THREAD, "clients", None)
    if clients is None:
        clients = _THREAD.clients = {}
    client = clients.get(scheme)
    if client is None:
        transport = _PinnedTransport(_ssl_context() if scheme == "https" else None)
        client = clients[scheme] = httpx.Client(transport=transport, follow_redirects=False, trust_env=False)
    return client


def _exchange(hop: HttpHop, sockets: _Sockets) -> HopResponse:
    started = time.monotonic()
    remaining = max(0.001, hop.deadline - started)
    scheme = hop.url.split(":", 1)[0]
    client = _client(scheme)
    _THREAD.pin = _Pin(hop.host.lower().strip("[]"), hop.port, hop.address, sockets)
    try:
        request = client.build_request(
            hop.method,
            hop.url,
            headers=list(hop.headers),
            content=hop.body,
            extensions={"timeout": {"connect": remaining, "read": remaining, "write": remaining, "pool": remaining}},
        )
        response = client.send(request, stream=True)
        try:
            headers = tuple((name, value) for name, value in response.headers.multi_items())
            if is_redirect(response.status_code, headers):
                location = next(value for name, value in headers if name == "location")
                return HopResponse(response.status_code, headers, None, location, _ms_since(started))
            kept = bytearray()
            # Decoded here, not by httpx, which inflates a whole network chunk at once: a "gzip, gzip"
            # answer of 2 KB would be gigabytes before the cap below is checked (content_coding.py).
            for chunk in decoded(response.iter_raw(_CHUNK), content_codings(headers)):
                kept += chunk
                if len(kept) > hop.max_response_bytes:  # exactly maxResponseBytes is allowed
                    raise RuntimeFault(
                        "budget-exhausted",
                        _BUDGET_PATH,
                        f"the response exceeded maxResponseBytes ({hop.max_response_bytes}) and was abandoned",
                    )
            return HopResponse(response.status_code, headers, bytes(kept), None, _ms_since(started))
        finally:
            response.close()
    finally:
        _THREAD.pin = None
        client.cookies.clear()  # the jar is the client's, never carried from one hop to the next


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


@dataclass
class _Watched:
    sockets: _Sockets
    deadline: float
    abort: AbortSignal | None
    fired: str | None = None


class _Watchdog:
    """One daemon thread for every hop in flight: it polls each hop's abort signal (every 20 ms)
    and deadline and, when one fires, shuts that hop's sockets down, which wakes the calling thread
    out of any blocking read. The I/O itself runs on the calling thread, so a hop costs no thread
    hand-off; with nothing in flight the watchdog sleeps on its condition. A new hop wakes the
    thread only when it needs a look sooner than the thread's next wake-up (``_wake_at``), so a
    stream of hops with the same caps costs no wake-up per hop."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: dict[int, _Watched] = {}
        self._thread: threading.Thread | None = None
        self._wake_at = float("inf")

    def watch(self, sockets: _Sockets, deadline: float, abort: AbortSignal | None) -> _Watched:
        watched = _Watched(sockets, deadline, abort)
        first_look = deadline if abort is None else min(deadline, time.monotonic() + _ABORT_POLL_S)
        with self._cond:
            self._watched[id(watched)] = watched
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="eval-quality-http-watchdog", daemon=True)
                self._thread.start()
            elif first_look < self._wake_at:
                self._cond.notify()
        return watched

    def unwatch(self, watched: _Watched) -> None:
        with self._cond:
            self._watched.pop(id(watched), None)

    def _run(self) -> None:
        with self._cond:
            while True:
                if not self._watched:
                    self._wake_at = float("inf")
                    self._cond.wait()
                    continue
                now = time.monotonic()
                timeout = 3600.0
                for key, watched in list(self._watched.items()):
                    if watched.abort is not None and watched.abort.is_set():
                        watched.fired = "aborted"
                    elif now >= watched.deadline:
                        watched.fired = "deadline"
                    if watched.fired is not None:
                        del self._watched[key]
                        watched.sockets.cancel()
                        continue
                    timeout = min(timeout, watched.deadline - now)
                    if watched.abort is not None:
                        timeout = min(timeout, _ABORT_POLL_S)
                timeout = max(0.001, timeout)
                self._wake_at = now + timeout
                self._cond.wait(timeout)


_WATCHDOG = _Watchdog()


def _elapsed_fault(hop: HttpHop) -> RuntimeFault:
    return RuntimeFault("budget-exhausted", _BUDGET_PATH, f"exceeded maxElapsedMs ({hop.max_elapsed_ms}ms) and was abandoned")


def _aborted_fault() -> RuntimeFault:
    return RuntimeFault("aborted", "ProbeObservation", "the caller aborted the probe; its connection was shut down")


def send_hop(hop: HttpHop, abort: AbortSignal | None = None) -> HopResponse:
    """The real mechanism: send one hop on the calling thread under the watchdog, which shuts the
    hop's sockets down the moment the abort signal is set or the exchange's deadline passes; the
    call then raises ``aborted`` / ``budget-exhausted``. Transport errors are ``port-failure``.

    A hop the watchdog cut is a fault even when the read *returned*: a body without a length (no
    ``Content-Length``, read to the close of the connection) ends, to the reader, exactly where the
    shutdown cut it, so what came back would be a truncated answer passed off as whole."""
    if time.monotonic() >= hop.deadline:
        raise _elapsed_fault(hop)
    sockets = _Sockets()
    watched = _WATCHDOG.watch(sockets, hop.deadline, abort)
    try:
        response = _exchange(hop, sockets)
    except RuntimeFault:
        if watched.fired == "aborted":
            raise _aborted_fault() from None
        raise
    except Exception as error:
        if watched.fired == "aborted" or (abort is not None and abort.is_set()):
            raise _aborted_fault() from None
        if watched.fired == "deadline" or isinstance(error, httpx.TimeoutException | httpcore.TimeoutException):
            raise _elapsed_fault(hop) from None
        raise RuntimeFault(
            "port-failure", "ProbeObservation", f"{hop.method} {hop.url} via {hop.address} got no answer: {type(error).__name__}: {error}"
        ) from None
    finally:
        _WATCHDOG.unwatch(watched)  # after this the watchdog can no longer fire: ``fired`` is final
    if watched.fired == "aborted":
        raise _aborted_fault()
    if watched.fired == "deadline":
        raise _elapsed_fault(hop)
    return response


# ---------------------------------------------------------------------------------------------
# Observation assembly (pure)


def _media_type(headers: tuple[tuple[str, str], ...]) -> str:
    for name, value in headers:
        if name == "content-type":
            return value.split(";", 1)[0].strip().lower()
    return ""


def assemble_api_observation(request: ApiProbeRequest, status: int, headers: tuple[tuple[str, str], ...], body: bytes) -> ApiProbeObservation:
    """Echo the correlation triple; headers joined and ``set-cookie`` dropped; the body tagged. A
    result that fails the observation schema (a status outside 100..599) is ``port-contract-violation``."""
    joined: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key == "set-cookie":
            continue
        joined[key] = f"{joined[key]}, {value}" if key in joined else value
    # The payload's wire form is built directly (the schema check below covers it once).
    payload: dict[str, Any]
    if not body:
        payload = {"kind": "absent"}
    else:
        text = body.decode("utf-8", errors="replace")
        value = json_value_of_text(text)
        # JSON text under a non-JSON media type stays text: the tag says what the service declared.
        if value is NOT_JSON or _JSON_MEDIA.match(_media_type(headers)) is None:
            payload = {"kind": "text", "value": text}
        else:
            payload = {"kind": "json", "value": value}
    wire = {
        "kind": "api",
        "probeId": request.probe_id,
        "interfaceId": request.interface_id,
        "operationId": request.operation_id,
        "status": status,
        "headers": joined,
        "body": payload,
    }
    observation = read_probe_observation(wire, "ProbeObservation", code="port-contract-violation", check_domain=False)
    if not isinstance(observation, ApiProbeObservation):
        raise RuntimeFault("port-contract-violation", "ProbeObservation", "assembled a non-api observation")
    return observation


# ---------------------------------------------------------------------------------------------
# Request building (pure)


def _malformed(detail: str) -> RuntimeFault:
    return RuntimeFault("schema-parse-failure", "ProbeRequest", detail)


def _url_host(host: str) -> str:
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return f"[{bare}]" if ":" in bare else bare


def _path_of(request: ApiProbeRequest) -> str:
    template = request.path_template
    if not _PATH_TEMPLATE.match(template):
        raise _malformed(f'pathTemplate "{template}" is not an absolute path (no query, fragment, space or backslash)')
    values = request.channels.path
    named = _PARAMETER.findall(template)
    missing = [name for name in named if name not in values]
    if missing:
        raise _malformed(f'path parameter "{missing[0]}" of "{template}" has no value in the path channel')
    extra = sorted(set(values) - set(named))
    if extra:
        raise _malformed(f'path channel key "{extra[0]}" names no parameter of "{template}"')
    return _PARAMETER.sub(lambda m: urllib.parse.quote(js_string_of(values[m.group(1)]), safe=""), template)


def _query_of(request: ApiProbeRequest) -> str:
    pairs: list[tuple[str, str]] = []
    query = request.channels.query
    for key in js_key_order(query):
        value = query[key]
        for item in value if isinstance(value, list) else [value]:
            pairs.append((key, js_string_of(item)))
    return urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)


def _body_of(request: ApiProbeRequest) -> tuple[bytes | None, str | None]:
    body = request.channels.body
    if isinstance(body, JsonPayload):
        return json_stringify(body.value).encode("utf-8"), "application/json"
    if isinstance(body, RawBody):
        return base64.b64decode(body.base64, validate=True), body.content_type
    return None, None


def _declared_headers(request: ApiProbeRequest) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    for name, value in request.channels.header.items():
        if not _TOKEN.match(name):
            raise _malformed(f'header name "{name}" is not an HTTP token')
        if _BAD_VALUE.search(value):
            raise _malformed(f'header "{name}" has a CR, LF or NUL in its value')
        if name.lower() in _OWNED_HEADERS:
            continue
        headers.append((name.lower(), value))
    return headers


def _host_header(target: ApiTarget) -> str:
    host = _url_host(target.host)
    return host if _DEFAULT_PORTS.get(target.scheme) == target.port else f"{host}:{target.port}"


def _final_headers(declared: list[tuple[str, str]], body: bytes | None, content_type: str | None, target: ApiTarget) -> tuple[tuple[str, str], ...]:
    headers = list(declared)
    names = {name for name, _ in headers}
    if body is not None and content_type is not None and "content-type" not in names:
        headers.append(("content-type", content_type))
    if "accept-encoding" not in names:
        headers.append(("accept-encoding", "identity"))
    if body is not None:
        headers.append(("content-length", str(len(body))))
    headers.append(("host", _host_header(target)))  # last: nothing declared can rewrite it
    return tuple(headers)


def _request_size(method: str, url: str, headers: tuple[tuple[str, str], ...], body: bytes | None) -> int:
    split = urllib.parse.urlsplit(url)
    target = split.path + (f"?{split.query}" if split.query else "")
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers) + "\r\n"
    return len(head.encode("latin-1", errors="replace")) + (len(body) if body else 0)


def _target_of_url(url: str) -> ApiTarget:
    parsed = httpx.URL(url)
    scheme = parsed.scheme
    port = parsed.port if parsed.port is not None else _DEFAULT_PORTS.get(scheme, 0)
    return ApiTarget(scheme, parsed.host, port)


def _redirect_method(status: int, method: str) -> str:
    if status in (302, 303) and method != "HEAD":
        return "GET"
    if status == 301 and method == "POST":
        return "GET"
    return method


class HttpAdapter:
    """The real ``ProbePort`` for api requests under a ``ProbeTargetPolicy`` (module docstring).

    ``HttpAdapter(policy, targets=None, resolver=resolve_host, mechanism=send_hop)``. ``targets``
    maps an interfaceId to where its requests go; by default each interface goes to its first
    authorization's scheme, host and port.
    """

    def __init__(
        self,
        policy: ProbeTargetPolicy,
        *,
        targets: Mapping[str, ApiTarget] | None = None,
        resolver: Resolver = resolve_host,
        mechanism: HttpMechanism = send_hop,
    ) -> None:
        self.policy = policy
        derived: dict[str, ApiTarget] = {}
        for authorization in policy.authorizations:
            derived.setdefault(
                authorization.interface_id, ApiTarget(authorization.scheme, authorization.host, authorization.port)
            )
        if targets is not None:
            derived.update(targets)
        self.targets = derived
        self.resolver = resolver
        self.mechanism = mechanism
        # The policy is frozen, so a decision is a pure function of the resolved target: computed
        # once per distinct (interface, scheme, host, port, address, method). Resolution is not cached.
        self._decisions: dict[ResolvedTarget, ApiTargetDecision] = {}

    def _evaluate(self, target: ResolvedTarget) -> ApiTargetDecision:
        decision = self._decisions.get(target)
        if decision is None:
            decision = evaluate_api_target(self.policy, target)
            if len(self._decisions) < _DECISION_CACHE:
                self._decisions[target] = decision
        return decision

    def probe(self, request: ApiProbeRequest | dict[str, Any] | Any, *, abort: AbortSignal | None = None, **_: Any) -> ApiProbeObservation:
        """Run one request (module docstring) and return its observation, or raise a declared fault."""
        return self.probe_timed(request, abort=abort).observation

    def _decide(self, interface_id: str, target: ApiTarget, method: str) -> ApiTargetDecision:
        """Resolve the target's host and decide: the first address the policy allows, else the
        denial of the first address (0 resolved addresses is ``port-failure``). A target refused
        before the address rows (interface, scheme, host, port) is refused without a DNS lookup, so
        a redirect cannot make the adapter resolve a name the policy never authorized."""
        unresolved = self._evaluate(ResolvedTarget(interface_id, target.scheme, target.host, target.port, "", method))
        if unresolved.reason in _BEFORE_ADDRESS:
            return unresolved
        try:
            addresses = self.resolver(target.host, target.port)
        except OSError as exc:
            raise RuntimeFault("port-failure", "ProbeObservation", f'host "{target.host}" could not be resolved: {exc}') from None
        if not addresses:
            raise RuntimeFault("port-failure", "ProbeObservation", f'host "{target.host}" resolved to no address')
        first: ApiTargetDecision | None = None
        for address in addresses:
            decision = self._evaluate(ResolvedTarget(interface_id, target.scheme, target.host, target.port, address, method))
            if decision.allowed:
                return decision
            first = first or decision
        assert first is not None
        return first

    def probe_timed(self, request: ApiProbeRequest | dict[str, Any] | Any, *, abort: AbortSignal | None = None, **_: Any) -> TimedApiObservation:
        """``probe``, also returning the elapsed milliseconds of the whole exchange."""
        if abort is not None and abort.is_set():
            raise RuntimeFault("aborted", "ProbeRequest", "the caller aborted before the probe started")
        parsed = request if isinstance(request, _TYPED_REQUESTS) else read_probe_request(request)
        if not isinstance(parsed, ApiProbeRequest):
            raise RuntimeFault(
                "forbidden-target",
                "ProbeRequest",
                f"this adapter runs api requests only; no {parsed.kind} target is ever authorized",
                reason="interface-not-authorized",
            )
        target = self.targets.get(parsed.interface_id)
        if target is None:
            raise RuntimeFault(
                "forbidden-target",
                "ProbeRequest",
                f'no authorization names interface "{parsed.interface_id}"',
                reason="interface-not-authorized",
            )
        path = _path_of(parsed)
        query = _query_of(parsed)
        declared = _declared_headers(parsed)
        body, content_type = _body_of(parsed)
        decision = self._decide(parsed.interface_id, target, parsed.method)
        if not decision.allowed or decision.authorization is None or decision.canonical_address is None:
            raise decision.fault()
        caps: ProbeTargetAuthorization = decision.authorization
        url = f"{target.scheme}://{_url_host(target.host)}:{target.port}{path}" + (f"?{query}" if query else "")
        headers = _final_headers(declared, body, content_type, target)
        size = _request_size(parsed.method, url, headers, body)
        if size > caps.max_request_bytes:
            raise RuntimeFault(
                "budget-exhausted",
                _BUDGET_PATH,
                f"the request is {size} bytes, over maxRequestBytes ({caps.max_request_bytes}); nothing was sent",
            )
        started = time.monotonic()
        deadline = started + caps.max_elapsed_ms / 1000.0
        method = parsed.method
        redirects = 0
        while True:
            hop = HttpHop(
                method=method,
                url=url,
                host=target.host,
                port=target.port,
                address=_connectable(decision.canonical_address),
                headers=headers,
                body=body,
                deadline=deadline,
                max_elapsed_ms=caps.max_elapsed_ms,
                max_response_bytes=caps.max_response_bytes,
            )
            response = self._send(hop, abort)
            if response.body is not None or response.location is None:
                elapsed = int((time.monotonic() - started) * 1000)
                observation = assemble_api_observation(parsed, response.status, response.headers, response.body or b"")
                return TimedApiObservation(observation, elapsed)
            if self._redirects_exhausted(redirects, caps):
                raise RuntimeFault(
                    "budget-exhausted",
                    _BUDGET_PATH,
                    f"the exchange redirected more than maxRedirects ({caps.max_redirects}) times",
                )
            redirects += 1
            try:
                next_url = str(httpx.URL(url).join(response.location))
                next_target = _target_of_url(next_url)
            except (httpx.InvalidURL, ValueError) as exc:
                raise RuntimeFault(
                    "port-contract-violation", "ProbeObservation", f'redirect Location "{response.location}" is not a URL: {exc}'
                ) from None
            next_method = _redirect_method(response.status, method)
            if next_method != method:
                body, content_type = None, None
                declared = [(n, v) for n, v in declared if n != "content-type"]
            if (next_target.scheme, next_target.host.lower(), next_target.port) != (target.scheme, target.host.lower(), target.port):
                declared = [(n, v) for n, v in declared if n not in _CROSS_ORIGIN_DROPPED]
            decision = self._decide_redirect(parsed.interface_id, next_target, next_method)
            if not decision.allowed or decision.canonical_address is None:
                raise RuntimeFault(
                    "forbidden-target",
                    "ProbeRequest",
                    f"redirect {redirects} to {next_url} refused: {decision.detail}",
                    reason=decision.reason,
                )
            target, url, method = next_target, next_url, next_method
            headers = _final_headers(declared, body, content_type, target)

    def _decide_redirect(self, interface_id: str, target: ApiTarget, method: str) -> ApiTargetDecision:
        """Every redirect hop is decided afresh, exactly as the first (a seam for the non-vacuity test)."""
        return self._decide(interface_id, target, method)

    @staticmethod
    def _redirects_exhausted(followed: int, caps: ProbeTargetAuthorization) -> bool:
        """Whether one more redirect would pass ``maxRedirects`` (a seam for the non-vacuity test)."""
        return followed >= caps.max_redirects

    def _send(self, hop: HttpHop, abort: AbortSignal | None) -> HopResponse:
        try:
            return self.mechanism(hop, abort)
        except RuntimeFault:
            raise
        except Exception as exc:  # §3.4: any other mechanism error
            if abort is not None and abort.is_set():
                raise RuntimeFault("aborted", "ProbeObservation", "the caller aborted during the probe") from exc
            raise RuntimeFault(
                "port-failure", "ProbeObservation", f"the underlying mechanism threw {type(exc).__name__}: {exc}"
            ) from exc


def _connectable(canonical: str) -> str:
    """The socket address of a canonical spelling (IPv6 compressed, IPv4 as is)."""
    parsed = parse_address(canonical)
    if parsed is not None and parsed.family == 6:
        return str(ipaddress.IPv6Address(canonical))
    return canonical
