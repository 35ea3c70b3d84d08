"""Benchmark: per-request overhead of the HTTP adapter against a bare ``httpx`` request.

Both sides send ``GET /ok`` to the same loopback server (a child process, so its work does not share
our interpreter) over a fresh connection each time: the bare side is ``client.get(url)`` on one
``httpx.Client`` that keeps no idle connection (so every request connects, as the adapter's do;
building a Client per request would charge the bare side its SSL-context setup and flatter us);
the adapter adds the request parse, the policy decision, the pinned transport, the watchdog that
watches abort and the deadline, the capped streaming read and the observation's schema check.
Requests alternate between the sides so host drift affects both alike, in several rounds. Prints,
per side, the median over every request and the repeated minimum (the lowest of the rounds'
medians: the figure least distorted by a loaded host), with both ratios (aim: ≤ 1.3).

Run: python benchmarks/bench_http_adapter.py [requests] [rounds]   (default 200 per side, 7 rounds)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import httpx
from results import record

from evalquality_core.adapters.http import HttpAdapter
from evalquality_core.probe.api_policy import parse_probe_target_policy

SERVER = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        body = b'{"ok":true,"note":{"id":"n-1","title":"Original"}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""

REQUEST = {
    "kind": "api", "probeId": "bench-leg", "interfaceId": "bench", "operationId": "get", "method": "GET",
    "pathTemplate": "/ok", "channels": {"path": {}, "query": {}, "header": {}, "body": {"kind": "absent"}},
}


def main() -> None:
    """Start the server, alternate the sides, print medians and ratios, stop the server."""
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        url = f"http://127.0.0.1:{port}/ok"
        adapter = HttpAdapter(parse_probe_target_policy({"authorizations": [{
            "interfaceId": "bench", "scheme": "http", "host": "127.0.0.1", "port": port, "addresses": ["127.0.0.1"],
            "methods": ["GET"], "safeMethods": ["GET"], "maxRedirects": 0, "maxElapsedMs": 10000,
            "maxRequestBytes": 65536, "maxResponseBytes": 1 << 20,
        }]}))
        fresh = httpx.Client(trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))
        for _ in range(20):  # warm every path
            adapter.probe(REQUEST)
            fresh.get(url)
        bare: list[list[float]] = []
        ours: list[list[float]] = []
        for _ in range(rounds):
            bare.append([])
            ours.append([])
            for _ in range(count):
                start = time.perf_counter()
                fresh.get(url).read()
                bare[-1].append(time.perf_counter() - start)
                start = time.perf_counter()
                adapter.probe(REQUEST)
                ours[-1].append(time.perf_counter() - start)
        fresh.close()
    finally:
        server.kill()
        server.wait()
    bare_median = statistics.median(t for one in bare for t in one)
    ours_median = statistics.median(t for one in ours for t in one)
    bare_min = min(statistics.median(one) for one in bare)
    ours_min = min(statistics.median(one) for one in ours)
    print(
        f"GET /ok over loopback, {rounds} rounds x {count} requests each, bare httpx (fresh connection each) vs adapter:\n"
        f"  median:         bare {bare_median * 1000:.3f} ms, adapter {ours_median * 1000:.3f} ms: ratio {ours_median / bare_median:.2f}\n"
        f"  repeated min:   bare {bare_min * 1000:.3f} ms, adapter {ours_min * 1000:.3f} ms: ratio {ours_min / bare_min:.2f} (aim <= 1.3)"
    )
    record(__file__, baseline="a bare httpx GET to the same loopback server, fresh connection each",
           ratios={"adapter / bare median (aim <= 1.3)": ours_median / bare_median,
                   "adapter / bare repeated min": ours_min / bare_min},
           figures={"rounds": rounds, "requests per round": count, "bare median ms": bare_median * 1000,
                    "adapter median ms": ours_median * 1000})


if __name__ == "__main__":
    main()
