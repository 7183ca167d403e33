"""The sockets under one research fetch: only to the checked address, never past the deadline.

httpcore (httpx's own transport layer) opens connections through a ``NetworkBackend``; this
one wraps its standard ``SyncBackend`` for one page:

- ``connect_tcp`` connects only to the IP literal the guard pinned (``web_guard.Pinned``):
  the URL handed to httpcore already names it, so this is a second lock on the same door, not
  the mechanism (a stack that resolved a name here would be refused, never followed);
- every connect, read and write gets at most the time left before the page's deadline.
  httpx's timeouts bound each socket operation alone, so a server that sends one byte every
  few seconds (headers included) would hold a fetch for hours; here it is cut when the
  page's wall-clock budget ends (``ReadTimeout`` / ``WriteTimeout``, mapped to ``timeout``).
"""

from __future__ import annotations

import ssl
import time
import typing
from collections.abc import Iterable

import httpcore

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


def _left(deadline: float, timeout: float | None, error: type[Exception]) -> float:
    """``timeout`` cut to what remains before ``deadline`` (monotonic); raises ``error`` once
    nothing remains."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise error("the page's deadline passed")
    return remaining if timeout is None else min(timeout, remaining)


class DeadlineStream(httpcore.NetworkStream):
    """A connection whose every operation ends by ``deadline``."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: float) -> None:
        self._stream = stream
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(self._deadline, timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(self._deadline, timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        wait = _left(self._deadline, timeout, httpcore.ConnectTimeout)
        return DeadlineStream(
            self._stream.start_tls(ssl_context, server_hostname, wait), self._deadline
        )

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


class PinnedBackend(httpcore.NetworkBackend):
    """Connects to ``ip`` alone, each connection bounded by ``deadline`` (monotonic)."""

    def __init__(self, ip: str, deadline: float) -> None:
        self._ip = ip
        self._deadline = deadline
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        if host.strip("[]") != self._ip:
            raise httpcore.ConnectError(f"{host!r} is not the checked address")
        wait = _left(self._deadline, timeout, httpcore.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, wait, local_address, socket_options)
        return DeadlineStream(stream, self._deadline)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("the research fetch connects over TCP only")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
