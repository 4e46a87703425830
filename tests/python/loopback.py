"""Ports on loopback: free ones for a test's servers, and which addresses a port listens on."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path


def free_ports(count: int) -> list[int]:
    """Ports the kernel just handed out on loopback: not the defaults a developer may use."""
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sockets.append(sock)
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def listening_addresses(port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Addresses with a socket listening on `port`, from the kernel's tables (no `ss` needed)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)  # 32-bit words in host (little-endian) order
            found.append(
                ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
            )
    return found


def is_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback
