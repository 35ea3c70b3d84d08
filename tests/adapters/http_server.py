"""A real loopback HTTP server for the HTTP adapter's tests and its conformance subject.

``LoopbackServer(tls=None)`` binds 127.0.0.1 on an ephemeral port and serves on a thread until
``close()`` (also a context manager); given a server-side ``ssl.SSLContext`` it serves https. Routes:

``/ok`` 200 JSON · ``/fault`` 500 JSON · ``/text`` 200 text/plain · ``/json-as-text`` JSON under
text/plain · ``/empty`` 204 · ``/cookies`` two Set-Cookie and two X-Multi headers · ``/echo`` the
request (method, path, query, headers, body as latin-1 text, body length, the client's port) as JSON ·
``/redirect-to?url=U&status=S`` a redirect to U · ``/redirect-chain/N`` redirects to N+1 forever ·
``/oversize?n=B`` B bytes · ``/slow?ms=T`` answers after T ms · ``/hang`` never answers (until close)
· ``/status?code=C`` answers with status C (600 included) · ``/trickle`` one byte every 50 ms.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: bytes, content_type: str = "application/json", extra: list[tuple[str, str]] | None = None) -> None:
        self.send_response_only(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra or []:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _route(self) -> None:
        self.server.hits.append((self.command, self.path, dict(self.headers.items())))
        split = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(split.query))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = split.path
        if path == "/ok":
            self._send(200, b'{"ok":true}')
        elif path == "/fault":
            self._send(500, b'{"ok":false,"error":"boom"}')
        elif path == "/text":
            self._send(200, b"plain words", "text/plain; charset=utf-8")
        elif path == "/json-as-text":
            self._send(200, b'{"a":1}', "text/plain")
        elif path == "/empty":
            self.send_response_only(204)
            self.end_headers()
        elif path == "/cookies":
            self._send(200, b"{}", extra=[("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("X-Multi", "one"), ("X-Multi", "two")])
        elif path == "/echo":
            echoed = {
                "method": self.command,
                "path": split.path,
                "rawPath": self.path,
                "query": split.query,
                "headers": [[k.lower(), v] for k, v in self.headers.items()],
                "body": body.decode("latin-1"),
                "bodyLength": len(body),
                "peerPort": self.client_address[1],  # tells connections apart
            }
            self._send(200, json.dumps(echoed).encode())
        elif path == "/redirect-to":
            self._send(int(query.get("status", "302")), b"", extra=[("Location", query["url"])])
        elif path.startswith("/redirect-chain/"):
            step = int(path.rsplit("/", 1)[1])
            self._send(302, b"", extra=[("Location", f"/redirect-chain/{step + 1}")])
        elif path == "/oversize":
            self._send(200, b"x" * int(query.get("n", "100000")), "text/plain")
        elif path == "/slow":
            time.sleep(int(query.get("ms", "2000")) / 1000)
            self._send(200, b'{"slow":true}')
        elif path == "/hang":
            self.server.stop.wait(30)
        elif path == "/status":
            self._send(int(query.get("code", "200")), b'{"status":"odd"}')
        elif path == "/trickle":
            self.send_response_only(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            for _ in range(1000):
                if self.server.stop.wait(0.05):
                    return
                self.wfile.write(b"x")
                self.wfile.flush()
        else:
            self._send(404, b'{"error":"not found"}')

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _route


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    hits: list[tuple[str, str, dict[str, str]]]
    stop: threading.Event

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that hung up (a cap, an abort) is expected here, not news


class LoopbackServer:
    """A running server on 127.0.0.1:<ephemeral>; ``hits`` lists (method, path, headers) received."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        if tls is not None:  # https: the handshake runs in the handler's thread, on its first read
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True, do_handshake_on_connect=False)
        self._server.hits = []
        self._server.stop = threading.Event()
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def hits(self) -> list[tuple[str, str, dict[str, str]]]:
        """Every request received so far."""
        return self._server.hits

    def close(self) -> None:
        """Stop serving and release the port (wakes ``/hang`` and ``/trickle``)."""
        self._server.stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
