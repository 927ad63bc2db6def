"""No open proxy by accident: the addresses beyond loopback a proxy listens on, and whether it asks for a password.

A proxy listening where other machines reach it (``--listen-host 0.0.0.0``, a
LAN address, an empty host: every address) serves whoever connects: their
requests leave from this machine, its own pages (http://pagerank.proxy/) show
them this store, and with ``--record`` their pages go into the user's record.
``pagerank-proxy`` listens there only with mitmproxy's ``--proxyauth`` (clients
give a password) or an explicit ``--no-auth`` (an open proxy, meant).

Loopback is 127.0.0.0/8, ``::1`` (and ``::ffff:127.x.x.x``) and the name
``localhost``; another name is beyond it unless every address it resolves to
is loopback.  mitmproxy's ``listen_host`` applies to every mode that names no
host of its own (``--mode regular@0.0.0.0:8081`` does).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence

__all__ = ["beyond_loopback", "exposed_hosts", "open_proxy_problem"]


def _loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.partition("%")[0])  # an IPv6 address may carry its interface: fe80::1%eth0
    except ValueError:
        return None


def beyond_loopback(host: str) -> bool:
    """Whether a listen address reaches beyond this machine: ``""`` (every address), an address outside
    loopback, or a name that resolves to one.  A name that does not resolve is not (mitmproxy cannot listen
    there, and says so)."""
    if not host:
        return True
    name = host.strip("[]")
    if name.lower().rstrip(".") == "localhost":
        return False
    address = _address(name)
    if address is not None:
        return not _loopback(address)
    try:
        found = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return False
    addresses = [_address(str(info[4][0])) for info in found]
    return not all(address is not None and _loopback(address) for address in addresses)


def exposed_hosts(listen_host: str | None, modes: Sequence[str]) -> list[str]:
    """The addresses beyond loopback that mitmproxy's servers would listen on, each once, from its
    ``listen_host`` and ``mode`` options.  Modes that bind no port (local, tun) and WireGuard (whose clients
    need its keys) are left aside, and so is a spec that does not parse (mitmproxy refuses it itself)."""
    from mitmproxy.proxy.mode_specs import ProxyMode, WireGuardMode

    found: list[str] = []
    for spec in modes or ["regular"]:
        try:
            mode = ProxyMode.parse(spec)
        except ValueError:
            continue
        if isinstance(mode, WireGuardMode) or mode.default_port is None:
            continue
        host = mode.listen_host(listen_host)
        if host not in found and beyond_loopback(host):
            found.append(host)
    return found


# What to do about it, as each way of starting the proxy says it: pagerank-proxy's flags, or mitmdump's options
PAGERANK_PROXY_ADVICE = "ask for a password with --proxyauth USER:PASS, or give --no-auth to serve without one"
MITMDUMP_ADVICE = (
    "listen on 127.0.0.1 (--listen-host 127.0.0.1), ask for a password with --proxyauth USER:PASS, "
    "or set pagerank_no_auth=true to serve without one"
)


def open_proxy_problem(
    hosts: Sequence[str], proxyauth: str | None, no_auth: bool, advice: str = PAGERANK_PROXY_ADVICE
) -> str | None:
    """Why the proxy must not listen on ``hosts`` (from :func:`exposed_hosts`) as it is told, or None: it may
    with a password (``proxyauth``, but not ``any``, which lets any password in), or with ``no_auth``."""
    if not hosts or no_auth or (proxyauth and proxyauth != "any"):
        return None
    where = " and ".join(host or "every address" for host in hosts)
    unless = "; --proxyauth any lets any password in" if proxyauth == "any" else ""
    return (
        f"listening on {where} (beyond loopback), this proxy would serve anyone who reaches it and show them "
        f"your store{unless}: {advice}"
    )
