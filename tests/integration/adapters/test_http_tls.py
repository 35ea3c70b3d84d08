"""https through the HTTP adapter against a real TLS loopback server: the socket goes to the pinned
address while SNI, the Host header and the certificate check all use the host name; a certificate for
another name is ``port-failure`` (nothing is observed). Certificates are made here, with ``cryptography``
(a dependency of Prefect), for a throwaway CA the adapter is made to trust for the test."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from evalquality_core.adapters import http
from evalquality_core.adapters.http import HttpAdapter
from evalquality_core.faults import RuntimeFault
from evalquality_core.probe.api_policy import parse_probe_target_policy
from tests.adapters.http_server import LoopbackServer
from tests.adapters.http_subject import authorization, request, resolver


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem(key: Any) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def make_ca_and_leaf(folder: Path, dns_name: str) -> tuple[Path, Path, Path]:
    """A CA certificate, and a leaf for ``dns_name`` signed by it: (ca.pem, leaf.pem, leaf.key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(_name("eval-quality test CA")).issuer_name(_name("eval-quality test CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder().subject_name(_name(dns_name)).issuer_name(ca.subject)
        .public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "leaf.pem", folder / "leaf.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(_pem(leaf_key))
    return paths


class TlsServer:
    """A loopback https server presenting ``leaf`` that records the SNI of every handshake."""

    def __init__(self, leaf: Path, key: Path) -> None:
        self.server_names: list[str | None] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(leaf, key)
        context.sni_callback = lambda _sock, name, _ctx: self.server_names.append(name)
        self.loopback = LoopbackServer(tls=context)


@pytest.fixture
def trusting(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Make the adapter trust a throwaway CA (and nothing else) for this test, on this thread."""
    def install(ca: Path) -> None:
        monkeypatch.setattr(http, "_SSL_CONTEXT", [ssl.create_default_context(cafile=str(ca))])
        monkeypatch.setattr(http._THREAD, "clients", {}, raising=False)  # a client built earlier keeps its trust
    return install


def _adapter(port: int) -> HttpAdapter:
    policy = parse_probe_target_policy({"authorizations": [authorization("notes-svc", "svc.test", port, scheme="https")]})
    return HttpAdapter(policy, resolver=resolver)


def test_https_pins_the_address_and_keeps_sni_host_and_certificate_on_the_name(tmp_path: Path, trusting: Any) -> None:
    ca, leaf, key = make_ca_and_leaf(tmp_path, "svc.test")
    trusting(ca)
    server = TlsServer(leaf, key)
    try:
        observation = _adapter(server.loopback.port).probe(request("/echo"))
    finally:
        server.loopback.close()
    assert observation.status == 200 and observation.body.kind == "json"
    hosts = [value for name, value in observation.body.value["headers"] if name == "host"]  # type: ignore[index]
    assert hosts == [f"svc.test:{server.loopback.port}"]
    assert server.server_names == ["svc.test"]  # SNI: the name, although the socket went to 127.0.0.1


def test_a_certificate_for_another_name_is_port_failure_with_nothing_observed(tmp_path: Path, trusting: Any) -> None:
    ca, leaf, key = make_ca_and_leaf(tmp_path, "other.test")
    trusting(ca)
    server = TlsServer(leaf, key)
    try:
        with pytest.raises(RuntimeFault) as raised:
            _adapter(server.loopback.port).probe(request("/echo"))
    finally:
        server.loopback.close()
    assert raised.value.code == "port-failure" and "CERTIFICATE_VERIFY_FAILED" in raised.value.detail
    assert server.server_names == ["svc.test"] and server.loopback.hits == []
