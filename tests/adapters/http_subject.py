"""The api conformance subject for the real HTTP adapter against a real loopback server.

Names resolve through the subject's own table (``svc.test`` → 127.0.0.1, ``private.test`` → 10.0.0.5,
…), so the denied-class cases ask the real policy about real address classes. Traffic never leaves
the host: the counting mechanism refuses (and counts) any hop whose address does not stay on this
host, so a broken adapter that *would* connect to 10.0.0.5 fails its case without a packet leaving.
``make_subject`` takes mutation hooks so the non-vacuity test can break exactly one behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from evalquality_core.adapters.http import ApiTarget, HopResponse, HttpAdapter, HttpHop, send_hop
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.address import stays_on_host
from evalquality_core.probe.api_conformance import ApiProbeSubject, DeniedAddressRequests
from evalquality_core.probe.api_policy import ProbeTargetPolicy, parse_probe_target_policy
from evalquality_core.probe.conformance import PortInstance, Scenario
from tests.adapters.http_server import LoopbackServer
from tests.ports import server_port

SERVICE = "notes-svc"
NAMES = {
    "svc.test": ["127.0.0.1"],
    "other-loopback.test": ["127.0.0.2"],
    "private.test": ["10.0.0.5"],
    "link-local.test": ["169.254.10.10"],
    "metadata.test": ["169.254.169.254"],
}


def resolver(host: str, port: int) -> list[str]:
    """The subject's DNS: a fixed table; an address literal is itself."""
    if host in NAMES:
        return list(NAMES[host])
    if host.replace(".", "").isdigit() or ":" in host:
        return [host]
    raise OSError(f"{host}: no such name in the test table")


def authorization(interface: str, host: str, port: int, **overrides: Any) -> dict[str, Any]:
    """One wire-shaped authorization, every address it names a loopback one."""
    entry: dict[str, Any] = {
        "interfaceId": interface,
        "scheme": "http",
        "host": host,
        "port": port,
        "addresses": ["127.0.0.1"],
        "methods": ["GET", "POST", "PATCH"],
        "safeMethods": ["GET"],
        "maxRedirects": 2,
        "maxElapsedMs": 600,
        "maxRequestBytes": 8192,
        "maxResponseBytes": 4096,
    }
    entry.update(overrides)
    return entry


def request(path: str, *, interface: str = SERVICE, probe_id: str = "leg-1", method: str = "GET",
            query: dict[str, Any] | None = None, header: dict[str, str] | None = None,
            body: dict[str, Any] | None = None, path_values: dict[str, Any] | None = None) -> dict[str, Any]:
    """A wire-shaped api request."""
    return {
        "kind": "api",
        "probeId": probe_id,
        "interfaceId": interface,
        "operationId": "call",
        "method": method,
        "pathTemplate": path,
        "channels": {
            "path": path_values or {},
            "query": query or {},
            "header": header or {},
            "body": body or {"kind": "absent"},
        },
    }


def subject_policy(port: int) -> ProbeTargetPolicy:
    """The policy of the thirteen api cases."""
    return parse_probe_target_policy({"authorizations": [
        authorization(SERVICE, "svc.test", port),
        authorization("denied-loopback", "other-loopback.test", port),
        authorization("denied-private", "private.test", port),
        authorization("denied-link-local", "link-local.test", port),
        authorization("denied-metadata", "metadata.test", port),
        authorization("denied-scheme", "svc.test", port, scheme="https"),
    ]})


def free_port() -> int:
    """A loopback port nothing listens on, below the ephemeral range (tests/ports.py)."""
    return server_port()


class CountingMechanism:
    """Counts hops; a hop whose address would leave the host is counted and refused, never sent."""

    def __init__(self, inner: Callable[[HttpHop, Any], HopResponse] = send_hop) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, hop: HttpHop, abort: Any) -> HopResponse:
        self.calls += 1
        if not stays_on_host(hop.address):
            raise RuntimeFault("port-failure", "ProbeObservation", f"test guard: {hop.address} is off this host; not sent")
        return self.inner(hop, abort)


def _rewrite_path(hop: HttpHop, path: str) -> HttpHop:
    base = hop.url.split("/", 3)
    return replace(hop, url="/".join(base[:3]) + path)


def scenario_mechanism(scenario: Scenario) -> Callable[[HttpHop, Any], HopResponse]:
    """What the sample request meets in each shared-six scenario (the subject rewrites the hop)."""
    if scenario == "fails":  # nothing answers: the port is closed
        closed = free_port()

        def to_closed_port(hop: HttpHop, abort: Any) -> HopResponse:
            url = hop.url.replace(f":{hop.port}/", f":{closed}/", 1)
            return send_hop(replace(hop, url=url, port=closed), abort)

        return to_closed_port
    if scenario == "in-band-error":  # the server answers a status no observation can carry
        return lambda hop, abort: send_hop(_rewrite_path(hop, "/status?code=600"), abort)
    if scenario == "hangs":
        return lambda hop, abort: send_hop(_rewrite_path(hop, "/hang"), abort)
    return send_hop


Wrap = Callable[[Callable[[HttpHop, Any], HopResponse]], Callable[[HttpHop, Any], HopResponse]]


def make_subject(
    server: LoopbackServer,
    *,
    name: str = "HTTP adapter",
    scenario_mechanism_wrap: Wrap | None = None,
    scenario_port: Callable[[Any], Any] | None = None,
    policy_mechanism_wrap: Wrap | None = None,
    policy_port: Callable[[Any], Any] | None = None,
    adapter_class: type[HttpAdapter] = HttpAdapter,
) -> ApiProbeSubject:
    """The subject over ``server``; the hooks wrap the mechanism or the port of the shared six
    (``scenario_*``) or of the thirteen api cases (``policy_*``), or swap the adapter class."""
    port = server.port
    policy = subject_policy(port)
    targets = {"denied-scheme": ApiTarget("http", "svc.test", port)}

    def build(scenario: Scenario) -> PortInstance:
        scenario_policy = parse_probe_target_policy(
            {"authorizations": [authorization(SERVICE, "svc.test", port, maxElapsedMs=3000)]}
        )
        counting = CountingMechanism(scenario_mechanism(scenario))
        mechanism: Any = counting if scenario_mechanism_wrap is None else scenario_mechanism_wrap(counting)
        adapter: Any = adapter_class(scenario_policy, resolver=resolver, mechanism=mechanism)
        if scenario_port is not None:
            adapter = scenario_port(adapter)
        return PortInstance(port=adapter, underlying_calls=lambda: counting.calls)

    def build_under_policy() -> PortInstance:
        counting = CountingMechanism(send_hop)
        mechanism: Any = counting if policy_mechanism_wrap is None else policy_mechanism_wrap(counting)
        adapter: Any = adapter_class(policy, targets=targets, resolver=resolver, mechanism=mechanism)
        if policy_port is not None:
            adapter = policy_port(adapter)
        return PortInstance(port=adapter, underlying_calls=lambda: counting.calls)

    own = f"http://127.0.0.1:{port}/ok"  # same server, but host 127.0.0.1 is not the authorized "svc.test"
    return ApiProbeSubject(
        name=name,
        sample_request=request("/ok"),
        build=build,
        policy=policy,
        build_under_policy=build_under_policy,
        authorized_request=request("/ok", probe_id="authorized"),
        unmapped_request=request("/ok", interface="no-such-interface"),
        denied_address_requests=DeniedAddressRequests(
            loopback=request("/ok", interface="denied-loopback"),
            private=request("/ok", interface="denied-private"),
            link_local=request("/ok", interface="denied-link-local"),
            metadata=request("/ok", interface="denied-metadata"),
        ),
        unauthorized_method_request=request("/ok", method="DELETE"),
        unauthorized_scheme_request=request("/ok", interface="denied-scheme"),
        redirecting_request=request("/redirect-to", query={"url": own}),
        over_redirect_request=request("/redirect-chain/0"),
        oversize_response_request=request("/oversize", query={"n": 100000}),
        slow_request=request("/slow", query={"ms": 3000}),
        faulting_request=request("/fault"),
    )
