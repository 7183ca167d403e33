"""Ports on 127.0.0.1 for the servers that tests and local runs start, and who holds them.

The race this module exists for: a port chosen by binding port 0 and letting it go, with a
server started on it later, is free for anyone in between. Parallel pytest workers and other
checkouts on this machine start servers all the time; one of them is handed the same port,
our server fails to bind ("Address already in use") and whoever waits for it waits in vain,
or talks to the other process's server instead. So a port is held from the moment it is
chosen, in one of three ways (best first):

1. a server in this process binds port 0 itself and reads back the port it got
   (``ImapServer``, ``SmtpServer``);
2. a subprocess that can take a socket is handed one bound here (``reserve``) and held ever
   since (``FunctionServers``: gunicorn's socket activation);
3. a tool that only binds by itself (the Google emulators) is watched while it starts: if
   another process holds its port (``foreign_listener``, ``held_elsewhere``) it is stopped
   and started again on a new port, a bounded number of times (``emulators``).

``closed_port`` is for the other use of a free port: an address nothing listens on, which a
test connects to in order to see a refusal. A server started on it later is the race above,
unless its start is watched as in 3.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable

HOST = "127.0.0.1"
ATTEMPTS = 3  # ports a watched start tries: one clash is rare, three in a row a fault
_TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's state column


def closed_port(host: str = HOST) -> int:
    """A port nothing listens on now (bound, then let go): for refusals; a server started
    on it may find it taken (see the module docstring)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def reserve(host: str = HOST) -> socket.socket:
    """A TCP socket bound to a free port and not listening: the caller owns it and closes it.

    Without ``SO_REUSEADDR`` no other socket can bind the port while it is open (Linux lets
    two sockets share a port only when both set it), and the kernel hands it to nobody's
    port 0; a server given this socket listens on it without binding anything itself.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
    except OSError:
        sock.close()
        raise
    return sock


def accepts(port: int, timeout: float = 1.0, host: str = HOST) -> bool:
    """Whether something accepts a TCP connection on ``port`` now."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def held_elsewhere(port: int, host: str = HOST) -> bool:
    """Whether some socket holds ``port`` now (listening, or bound without SO_REUSEADDR).

    ``SO_REUSEADDR`` on the probe lets it bind past connections left in TIME_WAIT (a dead
    server's, or our own readiness probes'), so only a real holder makes it fail.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
        return False


def foreign_listener(port: int, pids: Iterable[int]) -> bool:
    """Whether a process outside ``pids`` listens on TCP ``port`` (Linux ``/proc``; False
    where it cannot be read, so a caller relies on its own probe there)."""
    listening = _listening_inodes(port)
    if not listening:
        return False
    ours: set[str] = set()
    for pid in pids:
        ours |= _socket_inodes(pid)
    return bool(listening - ours)


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in _TCP_TABLES:
        try:
            with open(table) as rows:
                lines = rows.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
            fields = line.split()
            if fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets ``pid`` has open (``socket:[inode]`` links in its fd table)."""
    found: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            found.add(target[len("socket:[") : -1])
    return found
