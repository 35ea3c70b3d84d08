"""The address grammar of the api target policy: one canonical spelling and one class per address.

preflight-adapter.md §4.9 (policy decision order) and the reference's address grammar (AD-35). Pure;
parsing is the standard library's ``ipaddress``, which refuses the ambiguous spellings a resolver
might read two ways (``010.0.0.1``: octal to ``inet_aton``, decimal to a naive parser) — such a
string is ``unparseable``, and an unparseable address is always denied.

Rules, in the order they apply:

* A surrounding ``[...]`` (URL spelling of IPv6) is removed.
* A ``%zone`` suffix is allowed on a link-local IPv6 address only; an empty zone, two zones, or a
  zone on any other address (IPv4 included) is ``unparseable``. Zones do not change the canonical
  form, so an authorization naming ``fe80::1`` matches ``fe80::1%eth0``.
* An IPv4-mapped address (``::ffff:a.b.c.d``, dotted or hex) *is* that IPv4 address: canonical form
  and class both. An authorization naming ``127.0.0.1`` therefore matches ``::ffff:127.0.0.1``.
* The NAT64 prefix ``64:ff9b::/96`` and the deprecated IPv4-compatible ``::/96`` (except ``::`` and
  ``::1``) are *classified* as their embedded IPv4 address (``64:ff9b::a9fe:a9fe`` is ``metadata``),
  but keep their IPv6 canonical form: naming ``127.0.0.1`` never authorizes ``::127.0.0.1``. Either
  form leaves the host through a translator, so neither stays on the host.

Classes (reported with every decision; none ever allows anything) are the ``CLASS_TABLE`` rows, first
match wins: metadata before link-local and private because the metadata endpoints sit inside them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

__all__ = [
    "ADDRESS_CLASSES",
    "CLASS_TABLE",
    "AddressClass",
    "ParsedAddress",
    "classify_address",
    "is_ip_literal",
    "parse_address",
    "stays_on_host",
]

AddressClass = Literal["loopback", "private", "link-local", "metadata", "public", "unparseable"]
ADDRESS_CLASSES: tuple[AddressClass, ...] = ("loopback", "private", "link-local", "metadata", "public", "unparseable")

_Net = ipaddress.IPv4Network | ipaddress.IPv6Network

#: (network, class), first match wins. IPv4 rows also classify the embedded address of NAT64 and
#: IPv4-compatible IPv6 forms. Anything matching no row is ``public``.
CLASS_TABLE: tuple[tuple[_Net, AddressClass], ...] = (
    (ipaddress.ip_network("169.254.169.254/32"), "metadata"),  # cloud instance metadata (IPv4)
    (ipaddress.ip_network("fd00:ec2::254/128"), "metadata"),  # cloud instance metadata (IPv6)
    (ipaddress.ip_network("127.0.0.0/8"), "loopback"),
    (ipaddress.ip_network("0.0.0.0/32"), "loopback"),  # the unspecified address routes to the host
    (ipaddress.ip_network("::1/128"), "loopback"),
    (ipaddress.ip_network("::/128"), "loopback"),
    (ipaddress.ip_network("169.254.0.0/16"), "link-local"),
    (ipaddress.ip_network("fe80::/10"), "link-local"),
    (ipaddress.ip_network("10.0.0.0/8"), "private"),
    (ipaddress.ip_network("172.16.0.0/12"), "private"),
    (ipaddress.ip_network("192.168.0.0/16"), "private"),
    (ipaddress.ip_network("100.64.0.0/10"), "private"),  # carrier-grade NAT
    (ipaddress.ip_network("fc00::/7"), "private"),  # unique local
)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPATIBLE = ipaddress.ip_network("::/96")


@dataclass(frozen=True)
class ParsedAddress:
    """A readable address: its family, its one canonical spelling, and its class."""

    family: Literal[4, 6]
    canonical: str
    address_class: AddressClass


def _table_class(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> AddressClass:
    for network, address_class in CLASS_TABLE:
        if address.version == network.version and address in network:
            return address_class
    return "public"


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a NAT64 or IPv4-compatible form carries in its low 32 bits, if any."""
    if address in _NAT64 or (address in _COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


@lru_cache(maxsize=4096)
def parse_address(text: str) -> ParsedAddress | None:
    """Parse one address spelling (rules above); ``None`` when it is not a readable address.
    Pure, so its answers are memoized (a policy's addresses are parsed on every decision)."""
    bare = text[1:-1] if len(text) >= 2 and text.startswith("[") and text.endswith("]") else text
    zone: str | None = None
    if "%" in bare:
        bare, zone = bare.split("%", 1)
        if not zone or "%" in zone:
            return None
    if not bare or bare != bare.strip():
        return None
    if ":" not in bare:
        if zone is not None:
            return None
        try:
            v4 = ipaddress.IPv4Address(bare)
        except ValueError:
            return None
        return ParsedAddress(4, str(v4), _table_class(v4))
    try:
        v6 = ipaddress.IPv6Address(bare)
    except ValueError:
        return None
    if v6.ipv4_mapped is not None:
        if zone is not None:
            return None
        mapped = v6.ipv4_mapped
        return ParsedAddress(4, str(mapped), _table_class(mapped))
    canonical = v6.exploded
    address_class = _table_class(v6)
    if address_class == "public":
        embedded = _embedded_ipv4(v6)
        if embedded is not None:
            address_class = _table_class(embedded)
    if zone is not None and address_class != "link-local":
        return None
    return ParsedAddress(6, canonical, address_class)


def classify_address(text: str) -> AddressClass:
    """The class of an address spelling, ``unparseable`` when it cannot be read."""
    parsed = parse_address(text)
    return "unparseable" if parsed is None else parsed.address_class


def stays_on_host(text: str) -> bool:
    """Whether a connection to this literal stays on this host: IPv4 loopback (mapped spellings
    included), ``::1``, and the unspecified addresses. NAT64 and IPv4-compatible forms of a loopback
    address do not: they go through a translator first."""
    parsed = parse_address(text)
    if parsed is None or parsed.address_class != "loopback":
        return False
    if parsed.family == 4:
        return True
    return parsed.canonical in (ipaddress.IPv6Address("::1").exploded, ipaddress.IPv6Address("::").exploded)


def is_ip_literal(host: str) -> bool:
    """Whether a URL host is spelled as an address rather than a name (so it is never sent to DNS).

    Anything made only of digits and dots, or holding a ``:``, counts: ``010.0.0.1`` is a literal
    (and unparseable), never a name a resolver may read as octal.
    """
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return ":" in bare or (bare != "" and all(ch.isdigit() or ch == "." for ch in bare))
