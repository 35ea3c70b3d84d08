"""The api target policy (``probe.api_policy``), its address grammar (``probe.address``) and the
``kind = "api"`` entries of ``targets.toml``: every row of the decision table, every address class,
the ``::ffff:`` / NAT64 / IPv4-compatible forms, and the registry's refusals."""

from __future__ import annotations

from typing import Any

import pytest

from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.address import (
    CLASS_TABLE,
    classify_address,
    is_ip_literal,
    parse_address,
    stays_on_host,
)
from evalquality_core.probe.api_policy import (
    DECISION_TABLE,
    ResolvedTarget,
    evaluate_api_target,
    is_safe_method,
    parse_probe_target_policy,
)
from evalquality_core.probe.targets import API_TARGET_KEYS, cross_check_api_targets, parse_targets


@pytest.mark.parametrize(
    ("spelling", "address_class"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("0.0.0.0", "loopback"),
        ("::1", "loopback"),
        ("[::1]", "loopback"),
        ("::", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:7f00:1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("fd12::1", "private"),
        ("169.254.10.10", "link-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("169.254.169.254", "metadata"),
        ("::ffff:169.254.169.254", "metadata"),
        ("::ffff:a9fe:a9fe", "metadata"),
        ("64:ff9b::169.254.169.254", "metadata"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("::169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("64:ff9b::10.0.0.1", "private"),
        ("::127.0.0.1", "loopback"),
        ("172.32.0.1", "public"),
        ("8.8.8.8", "public"),
        ("2001:db8::1", "public"),
        ("010.0.0.1", "unparseable"),  # octal to inet_aton, decimal to a naive parser: refused
        ("1.2.3", "unparseable"),
        ("127.0.0.1%eth0", "unparseable"),
        ("::1%lo", "unparseable"),
        ("fe80::1%", "unparseable"),
        ("fe80::1%a%b", "unparseable"),
        ("::ffff:127.0.0.1%eth0", "unparseable"),
        ("localhost", "unparseable"),
        ("", "unparseable"),
        (" 127.0.0.1", "unparseable"),
    ],
)
def test_address_classes(spelling: str, address_class: str) -> None:
    assert classify_address(spelling) == address_class


def test_every_class_table_row_is_reachable() -> None:
    # Each row's network address classifies as that row's class (metadata before link-local/private).
    for network, address_class in CLASS_TABLE:
        assert classify_address(str(network.network_address)) == address_class, network


def test_mapped_forms_share_a_canonical_spelling_but_translated_forms_do_not() -> None:
    plain = parse_address("127.0.0.1")
    assert plain is not None
    assert parse_address("::ffff:127.0.0.1") == plain == parse_address("[::ffff:7f00:1]")
    nat64, compatible = parse_address("64:ff9b::7f00:1"), parse_address("::127.0.0.1")
    assert nat64 is not None and compatible is not None
    assert nat64.canonical != plain.canonical and compatible.canonical != plain.canonical
    # Both are classed loopback (the right answer for a denial) but a connection leaves the host.
    assert nat64.address_class == compatible.address_class == "loopback"
    assert not stays_on_host("64:ff9b::7f00:1") and not stays_on_host("::127.0.0.1")
    assert stays_on_host("::ffff:127.0.0.1") and stays_on_host("::1") and stays_on_host("127.9.9.9")
    assert not stays_on_host("10.0.0.1") and not stays_on_host("nonsense")


def test_ip_literals_are_never_names() -> None:
    assert is_ip_literal("010.0.0.1") and is_ip_literal("[::1]") and is_ip_literal("127.0.0.1")
    assert not is_ip_literal("svc.test") and not is_ip_literal("localhost")


def authorization(**overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "interfaceId": "notes",
        "scheme": "http",
        "host": "Svc.Test",
        "port": 8080,
        "addresses": ["127.0.0.1"],
        "methods": ["GET", "PATCH"],
        "safeMethods": ["GET", "DELETE"],
        "maxRedirects": 1,
        "maxElapsedMs": 1000,
        "maxRequestBytes": 100,
        "maxResponseBytes": 100,
    }
    entry.update(overrides)
    return entry


def target(**overrides: Any) -> ResolvedTarget:
    values: dict[str, Any] = {"interface_id": "notes", "scheme": "http", "host": "svc.test.", "port": 8080,
                              "address": "::ffff:127.0.0.1", "method": "GET"}
    values.update(overrides)
    return ResolvedTarget(**values)


POLICY = parse_probe_target_policy({"authorizations": [authorization()]})


def test_allow_matches_after_parsing_and_host_normalizing() -> None:
    decision = evaluate_api_target(POLICY, target())
    assert decision.allowed and decision.canonical_address == "127.0.0.1" and decision.address_class == "loopback"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"interface_id": "other"}, "interface-not-authorized"),
        ({"scheme": "https"}, "scheme-not-authorized"),
        ({"host": "svc.test.."}, "host-not-authorized"),
        ({"host": "evil.test"}, "host-not-authorized"),
        ({"port": 8081}, "port-not-authorized"),
        ({"address": "010.0.0.1"}, "address-unparseable"),
        ({"address": "127.0.0.2"}, "address-not-authorized"),
        ({"address": "::127.0.0.1"}, "address-not-authorized"),
        ({"address": "10.0.0.5"}, "address-not-authorized"),
        ({"method": "DELETE"}, "method-not-authorized"),
    ],
)
def test_each_denial_reason(change: dict[str, Any], reason: str) -> None:
    decision = evaluate_api_target(POLICY, target(**change))
    assert not decision.allowed and decision.reason == reason
    fault = decision.fault()
    assert fault.code == "forbidden-target" and fault.reason == reason and fault.artifact_path == "ProbeRequest"


def test_the_table_is_in_the_specified_order() -> None:
    assert [row.reason for row in DECISION_TABLE] == [
        "scheme-not-authorized", "host-not-authorized", "port-not-authorized",
        "address-unparseable", "address-not-authorized", "method-not-authorized",
    ]
    # Earlier rows win: a wrong scheme AND a wrong method is reported as the scheme.
    assert evaluate_api_target(POLICY, target(scheme="https", method="DELETE")).reason == "scheme-not-authorized"


def test_classes_never_allow_and_are_reported_with_the_denial() -> None:
    decision = evaluate_api_target(POLICY, target(address="169.254.169.254"))
    assert decision.reason == "address-not-authorized" and decision.address_class == "metadata"
    assert "class metadata" in decision.detail


def test_several_authorizations_first_allow_wins_else_first_denial() -> None:
    policy = parse_probe_target_policy({"authorizations": [
        authorization(methods=["GET"]),
        authorization(methods=["PATCH"], addresses=["127.0.0.1", "::1"]),
    ]})
    assert evaluate_api_target(policy, target(method="PATCH")).allowed
    assert evaluate_api_target(policy, target(method="PATCH", address="::1")).allowed
    denied = evaluate_api_target(policy, target(method="POST"))
    assert denied.reason == "method-not-authorized"


def test_an_empty_policy_authorizes_nothing() -> None:
    policy = parse_probe_target_policy({"authorizations": []})
    assert evaluate_api_target(policy, target()).reason == "interface-not-authorized"


def test_safe_methods_need_both_lists() -> None:
    auth = POLICY.authorizations[0]
    assert is_safe_method(auth, "GET") and not is_safe_method(auth, "DELETE") and not is_safe_method(auth, "PATCH")


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"scheme": "ftp"}, "/authorizations/0/scheme"),
        ({"port": 0}, "/authorizations/0/port"),
        ({"port": 65536}, "/authorizations/0/port"),
        ({"addresses": []}, "/authorizations/0/addresses"),
        ({"addresses": ["010.0.0.1"]}, "/authorizations/0/addresses"),
        ({"methods": []}, "/authorizations/0/methods"),
        ({"maxRedirects": -1}, "/authorizations/0/maxRedirects"),
        ({"maxElapsedMs": 0}, "/authorizations/0/maxElapsedMs"),
        ({"maxRequestBytes": 0}, "/authorizations/0/maxRequestBytes"),
        ({"maxResponseBytes": 0}, "/authorizations/0/maxResponseBytes"),
        ({"proxy": "x"}, "/authorizations/0/proxy"),
    ],
)
def test_policy_refusals_name_the_field(change: dict[str, Any], pointer: str) -> None:
    with pytest.raises(RuntimeFault) as raised:
        parse_probe_target_policy({"authorizations": [authorization(**change)]})
    assert raised.value.code == "schema-parse-failure" and pointer in raised.value.detail


API_TOML = """
[[target]]
kind = "api"
interface_id = "notes-api"
scheme = "http"
host = "127.0.0.1"
port = "{port}"
addresses = ["127.0.0.1"]
methods = ["GET", "PATCH"]
safe_methods = ["GET"]
max_redirects = 0
max_elapsed_ms = 5000
max_request_bytes = 65536
max_response_bytes = 1048576
"""


def test_targets_toml_api_entries_with_a_port_placeholder() -> None:
    registry = parse_targets(API_TOML, "t.toml")
    assert registry.entries == () and registry.placeholders == {"port"}
    policy = registry.to_api_policy({"port": "43210"})
    auth = policy.authorizations[0]
    assert (auth.interface_id, auth.port, auth.methods, auth.max_redirects) == ("notes-api", 43210, ["GET", "PATCH"], 0)
    with pytest.raises(RuntimeFault, match=r"no value given for placeholder\(s\) \{port\}"):
        registry.to_api_policy({})
    with pytest.raises(RuntimeFault, match="not a number"):
        registry.to_api_policy({"port": "eighty"})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('kind = "api"', 'kind = "grpc"'), "expected \"cli\""),
        (lambda t: t.replace("max_redirects = 0\n", ""), "lacks required key(s) max_redirects"),
        (lambda t: t + 'cwd = "."\n', "unknown key(s) cwd"),
        (lambda t: t.replace('port = "{port}"', 'port = "80{port}"'), "placeholder"),
        (lambda t: t.replace('scheme = "http"', 'scheme = "gopher"'), "scheme"),
        (lambda t: t.replace('addresses = ["127.0.0.1"]', 'addresses = ["127.1"]'), "addresses"),
    ],
)
def test_targets_toml_api_refusals(edit: Any, message: str) -> None:
    with pytest.raises(RuntimeFault) as raised:
        parse_targets(edit(API_TOML), "t.toml")
    assert raised.value.code == "schema-parse-failure" and message in raised.value.detail


def test_api_keys_are_documented_in_order() -> None:
    assert API_TARGET_KEYS[0] == "interface_id" and API_TARGET_KEYS[-1] == "max_response_bytes"


def test_api_cross_check_is_two_way() -> None:
    registry = parse_targets(API_TOML, "t.toml")
    contract = {"contractId": "c", "permittedInterfaces": [
        {"kind": "api", "logicalId": "notes-api", "operations": [{"method": "GET"}, {"method": "DELETE"}]},
        {"kind": "api", "logicalId": "unregistered-api", "operations": [{"method": "GET"}]},
    ]}
    coverage = cross_check_api_targets(registry, [contract])
    assert coverage.unregistered == (("c", "unregistered-api", "GET"),)
    assert coverage.unpermitted_subcommands == (("c", "notes-api", "DELETE", ()),)
    assert coverage.unused == ()
    assert cross_check_api_targets(registry, []).unused == (("notes-api", ""),)


def test_api_cross_check_problems_speak_of_methods() -> None:
    """``suite check`` shows these lines (it cross-checks cli, api and mcp entries alike)."""
    registry = parse_targets(API_TOML, "t.toml")
    contract = {"contractId": "c", "permittedInterfaces": [
        {"kind": "api", "logicalId": "notes-api", "operations": [{"method": "DELETE"}]},
        {"kind": "api", "logicalId": "unregistered-api", "operations": [{"method": "GET"}]},
    ]}
    assert cross_check_api_targets(registry, [contract]).problems() == [
        'contract "c" names interface "unregistered-api" method "GET", which the registry does not register',
        'contract "c" calls interface "notes-api" with method "DELETE", which the registry does not permit',
    ]
    assert cross_check_api_targets(registry, []).problems() == [
        'the registry registers interface "notes-api", which no contract names'
    ]
