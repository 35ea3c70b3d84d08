"""The HTTP adapter against a real loopback server: what goes on the wire, what comes back, and the
attacks (Host rewrite, header injection, DNS rebinding, redirects, proxies from the environment,
floods, slow answers, abort)."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from evalquality_core.adapters.http import HopResponse, HttpAdapter, HttpHop, send_hop
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.api_policy import parse_probe_target_policy
from tests.adapters.http_server import LoopbackServer
from tests.adapters.http_subject import CountingMechanism, authorization, free_port, request, resolver


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


def adapter_for(server: LoopbackServer, **overrides: Any) -> tuple[HttpAdapter, CountingMechanism]:
    policy = parse_probe_target_policy({"authorizations": [authorization("notes-svc", "svc.test", server.port, **overrides)]})
    counting = CountingMechanism(send_hop)
    return HttpAdapter(policy, resolver=resolver, mechanism=counting), counting


def echo(server: LoopbackServer, **kwargs: Any) -> dict[str, Any]:
    adapter, _ = adapter_for(server)
    observation = adapter.probe(request("/echo", **kwargs))
    assert observation.body.kind == "json"
    return observation.body.value  # type: ignore[union-attr, return-value]


def test_host_header_is_the_target_whatever_is_declared(server: LoopbackServer) -> None:
    # Set last by the adapter (h11 writes it first on the wire, as RFC 9110 recommends).
    for spelling in ("Host", "host", "HOST"):
        seen = echo(server, header={spelling: "evil.test", "X-Trace": "1"})
        hosts = [value for name, value in seen["headers"] if name == "host"]
        assert hosts == [f"svc.test:{server.port}"]
        assert ["x-trace", "1"] in seen["headers"]


def test_framing_headers_are_the_adapters(server: LoopbackServer) -> None:
    seen = echo(server, method="POST", header={"Content-Length": "999", "Transfer-Encoding": "chunked"},
                body={"kind": "json", "value": {"title": "Revised"}})
    names = [name for name, _ in seen["headers"]]
    assert "transfer-encoding" not in names and names.count("content-length") == 1
    assert seen["body"] == '{"title":"Revised"}' and seen["bodyLength"] == 19
    assert ["content-type", "application/json"] in seen["headers"]


def test_raw_body_goes_byte_for_byte_with_its_content_type(server: LoopbackServer) -> None:
    raw = bytes(range(256))
    seen = echo(server, method="POST", body={"kind": "raw", "base64": base64.b64encode(raw).decode(), "contentType": "application/octet-stream"})
    assert seen["body"].encode("latin-1") == raw
    assert ["content-type", "application/octet-stream"] in seen["headers"]


def test_path_and_query_are_encoded_not_interpreted(server: LoopbackServer) -> None:
    seen = echo(server, query={"q": ["a b", 1, True], "x": "../../etc"})
    assert seen["query"] == "q=a%20b&q=1&q=true&x=..%2F..%2Fetc"
    adapter, calls = adapter_for(server)
    observation = adapter.probe(request("/notes/{id}", path_values={"id": "../../admin?x=1#f"}))
    assert observation.status == 404 and server.hits[-1][1] == "/notes/..%2F..%2Fadmin%3Fx%3D1%23f"


@pytest.mark.parametrize(
    ("kwargs", "detail"),
    [
        ({"header": {"X-Evil": "a\r\nHost: evil.test"}}, "CR, LF or NUL"),
        ({"header": {"Bad Name": "v"}}, "not an HTTP token"),
        ({"path": "/notes/{id}"}, 'path parameter "id"'),
        ({"path_values": {"id": "n-1"}}, 'names no parameter'),
        ({"path": "//evil.test/x"}, None),
        ({"path": "/ok?x=1"}, "not an absolute path"),
        ({"path": "relative"}, "not an absolute path"),
    ],
)
def test_unsendable_requests_are_refused_before_any_call(server: LoopbackServer, kwargs: dict[str, Any], detail: str | None) -> None:
    adapter, calls = adapter_for(server)
    path = kwargs.pop("path", "/ok")
    if detail is None:  # a path that looks like an authority is still a path on the authorized host
        observation = adapter.probe(request(path, **kwargs))
        assert observation.status == 404 and calls.calls == 1
        assert server.hits[-1][2]["host"] == f"svc.test:{server.port}"  # the authorized server answered
        return
    with pytest.raises(RuntimeFault) as raised:
        adapter.probe(request(path, **kwargs))
    assert raised.value.code == "schema-parse-failure" and detail in raised.value.detail
    assert calls.calls == 0


def test_request_size_is_capped_before_the_first_hop(server: LoopbackServer) -> None:
    adapter, calls = adapter_for(server, maxRequestBytes=200)
    with pytest.raises(RuntimeFault) as raised:
        adapter.probe(request("/echo", method="POST", body={"kind": "json", "value": {"t": "x" * 300}}))
    assert raised.value.code == "budget-exhausted" and "maxRequestBytes (200)" in raised.value.detail
    assert calls.calls == 0


def test_observation_headers_and_body_tags(server: LoopbackServer) -> None:
    adapter, _ = adapter_for(server)
    cookies = adapter.probe(request("/cookies"))
    assert "set-cookie" not in cookies.headers and cookies.headers["x-multi"] == "one, two"
    assert adapter.probe(request("/empty")).body.kind == "absent"
    assert adapter.probe(request("/text")).body.model_dump() == {"kind": "text", "value": "plain words"}
    assert adapter.probe(request("/json-as-text")).body.kind == "text"
    head = adapter.probe(request("/fault"))
    assert head.status == 500 and head.body.kind == "json"


def test_response_cap_is_strict(server: LoopbackServer) -> None:
    adapter, _ = adapter_for(server, maxResponseBytes=1000)
    assert adapter.probe(request("/oversize", query={"n": 1000})).body.kind == "text"  # exactly the cap
    with pytest.raises(RuntimeFault) as raised:
        adapter.probe(request("/oversize", query={"n": 1001}))
    assert raised.value.code == "budget-exhausted"


def test_elapsed_covers_the_whole_exchange_even_a_trickle(server: LoopbackServer) -> None:
    adapter, _ = adapter_for(server, maxElapsedMs=300, maxResponseBytes=100000)
    started = time.monotonic()
    with pytest.raises(RuntimeFault) as raised:
        adapter.probe(request("/trickle"))  # one byte every 50 ms: no single read ever times out
    assert raised.value.code == "budget-exhausted" and "maxElapsedMs (300ms)" in raised.value.detail
    assert time.monotonic() - started < 2.0


def test_relative_redirect_is_followed_and_rechecked(server: LoopbackServer) -> None:
    adapter, calls = adapter_for(server)
    observation = adapter.probe(request("/redirect-to", query={"url": "/ok"}))
    assert observation.status == 200 and calls.calls == 2


def test_303_turns_a_write_into_a_read_and_drops_the_body(server: LoopbackServer) -> None:
    adapter, calls = adapter_for(server)
    observation = adapter.probe(request("/redirect-to", method="POST", query={"url": "/echo", "status": 303},
                                        body={"kind": "json", "value": {"a": 1}}))
    seen = observation.body.value  # type: ignore[union-attr]
    assert seen["method"] == "GET" and seen["bodyLength"] == 0  # type: ignore[index]
    assert calls.calls == 2


def test_307_keeps_method_and_body(server: LoopbackServer) -> None:
    adapter, _ = adapter_for(server)
    observation = adapter.probe(request("/redirect-to", method="POST", query={"url": "/echo", "status": 307},
                                        body={"kind": "json", "value": {"a": 1}}))
    seen = observation.body.value  # type: ignore[union-attr]
    assert seen["method"] == "POST" and seen["body"] == '{"a":1}'  # type: ignore[index]


def test_redirect_to_an_unauthorized_address_is_refused_after_one_call(server: LoopbackServer) -> None:
    adapter, calls = adapter_for(server)
    for url in (f"http://127.0.0.1:{server.port}/ok", "http://private.test/ok", "http://169.254.169.254/latest/meta-data/",
                f"http://svc.test:{free_port()}/ok", f"https://svc.test:{server.port}/ok", "file:///etc/passwd"):
        calls.calls = 0
        with pytest.raises(RuntimeFault) as raised:
            adapter.probe(request("/redirect-to", query={"url": url}))
        assert raised.value.code == "forbidden-target", url
        assert calls.calls == 1, url


def test_max_redirects_zero_means_none(server: LoopbackServer) -> None:
    adapter, calls = adapter_for(server, maxRedirects=0)
    with pytest.raises(RuntimeFault) as raised:
        adapter.probe(request("/redirect-to", query={"url": "/ok"}))
    assert raised.value.code == "budget-exhausted" and calls.calls == 1


def test_dns_is_pinned_to_the_validated_address(server: LoopbackServer) -> None:
    # A rebinding resolver: the first answer is the authorized address, every later one is private.
    answers = iter([["127.0.0.1"]])

    def rebinding(host: str, port: int) -> list[str]:
        return next(answers, ["10.0.0.5"])

    policy = parse_probe_target_policy({"authorizations": [authorization("notes-svc", "svc.test", server.port)]})
    hops: list[HttpHop] = []

    def recording(hop: HttpHop, abort: Any) -> HopResponse:
        hops.append(hop)
        return send_hop(hop, abort)

    observation = HttpAdapter(policy, resolver=rebinding, mechanism=recording).probe(request("/ok"))
    assert observation.status == 200 and [hop.address for hop in hops] == ["127.0.0.1"]
    # The hop itself cannot be sent anywhere but its address: a pinned pool refuses another host.
    with pytest.raises(RuntimeFault) as raised:
        send_hop(HttpHop("GET", f"http://other.test:{server.port}/ok", "svc.test", server.port, "127.0.0.1",
                         (("host", "other.test"),), None, time.monotonic() + 2, 2000, 1000))
    assert raised.value.code == "port-failure" and "not the validated target" in raised.value.detail


def test_first_allowed_address_wins_when_a_name_has_several(server: LoopbackServer) -> None:
    policy = parse_probe_target_policy({"authorizations": [authorization("notes-svc", "svc.test", server.port)]})
    adapter = HttpAdapter(policy, resolver=lambda host, port: ["10.0.0.5", "127.0.0.1"], mechanism=CountingMechanism())
    assert adapter.probe(request("/ok")).status == 200
    denied = HttpAdapter(policy, resolver=lambda host, port: ["10.0.0.5", "169.254.169.254"], mechanism=CountingMechanism())
    with pytest.raises(RuntimeFault) as raised:
        denied.probe(request("/ok"))
    assert raised.value.reason == "address-not-authorized" and "class private" in raised.value.detail


def test_environment_proxies_are_never_used(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, dead)
    monkeypatch.setenv("NO_PROXY", "")
    adapter, _ = adapter_for(server)
    assert adapter.probe(request("/ok")).status == 200


def test_abort_mid_exchange_is_prompt(server: LoopbackServer) -> None:
    adapter, _ = adapter_for(server, maxElapsedMs=10000)
    abort = threading.Event()
    threading.Timer(0.2, abort.set).start()
    started = time.monotonic()
    with pytest.raises(RuntimeFault) as raised:
        adapter.probe(request("/hang"), abort=abort)
    assert raised.value.code == "aborted" and time.monotonic() - started < 1.2


def test_nothing_answering_is_port_failure(server: LoopbackServer) -> None:
    policy = parse_probe_target_policy({"authorizations": [authorization("notes-svc", "svc.test", free_port())]})
    with pytest.raises(RuntimeFault) as raised:
        HttpAdapter(policy, resolver=resolver).probe(request("/ok"))
    assert raised.value.code == "port-failure" and raised.value.artifact_path == "ProbeObservation"


def test_other_kinds_are_refused(server: LoopbackServer) -> None:
    adapter, calls = adapter_for(server)
    cli = {"kind": "cli", "probeId": "p", "interfaceId": "notes-svc", "operationId": "o", "executable": "x",
           "subcommandPath": [], "channels": {"argument": {}, "option": {}, "environment": {}, "stdin": {"kind": "absent"}}}
    with pytest.raises(RuntimeFault) as raised:
        adapter.probe(cli)
    assert raised.value.code == "forbidden-target" and raised.value.reason == "interface-not-authorized" and calls.calls == 0
    with pytest.raises(RuntimeFault) as malformed:
        adapter.probe({"kind": "api"})
    assert malformed.value.code == "schema-parse-failure"


# --- one client per thread, reused: nothing carries over from one hop to the next -----------------------


def test_every_hop_opens_its_own_connection_and_sends_no_cookie_it_was_given(server: LoopbackServer) -> None:
    adapter, _ = adapter_for(server)
    adapter.probe(request("/cookies"))  # answers two Set-Cookie headers
    first, second = echo(server), echo(server)
    assert first["peerPort"] != second["peerPort"]  # no keep-alive: a new connection each time
    assert not [name for name, _ in first["headers"] + second["headers"] if name == "cookie"]


def test_a_short_deadline_after_a_long_one_is_still_enforced(server: LoopbackServer) -> None:
    # The watchdog sleeps until the earliest deadline it knows; a later hop that needs it sooner wakes it.
    patient, _ = adapter_for(server, maxElapsedMs=60000)
    assert patient.probe(request("/ok")).status == 200
    hasty, _ = adapter_for(server, maxElapsedMs=300, maxResponseBytes=100000)
    started = time.monotonic()
    with pytest.raises(RuntimeFault) as raised:
        hasty.probe(request("/trickle"))
    assert raised.value.code == "budget-exhausted" and time.monotonic() - started < 2.0
    abort = threading.Event()
    threading.Timer(0.2, abort.set).start()
    started = time.monotonic()
    with pytest.raises(RuntimeFault) as aborted:
        patient.probe(request("/hang"), abort=abort)
    assert aborted.value.code == "aborted" and time.monotonic() - started < 1.2


def test_adapters_on_many_threads_reach_only_their_own_servers() -> None:
    with LoopbackServer() as one, LoopbackServer() as two:
        failures: list[str] = []

        def drive(running: LoopbackServer) -> None:
            adapter, _ = adapter_for(running)
            for index in range(15):
                seen = adapter.probe(request("/echo", query={"i": index})).body.value
                hosts = [value for name, value in seen["headers"] if name == "host"]  # type: ignore[index]
                if hosts != [f"svc.test:{running.port}"] or seen["query"] != f"i={index}":  # type: ignore[index]
                    failures.append(f"{running.port}: {seen}")

        threads = [threading.Thread(target=drive, args=(running,)) for running in (one, two, one, two)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert failures == []
        assert len(one.hits) == len(two.hits) == 30


def test_a_denial_stays_a_denial_when_asked_again(server: LoopbackServer) -> None:
    adapter, calls = adapter_for(server)
    for _ in range(3):
        with pytest.raises(RuntimeFault) as raised:
            adapter.probe(request("/ok", method="DELETE"))
        assert raised.value.reason == "method-not-authorized"
        assert adapter.probe(request("/ok")).status == 200
    assert calls.calls == 3
