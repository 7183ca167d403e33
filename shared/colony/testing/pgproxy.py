"""``CountingProxy``: a TCP relay to PostgreSQL that counts the client's round trips.

Benchmarks (``bench/chat.py``, ``bench/steps.py``) and tests point a connection at
``127.0.0.1:<port>`` instead of the server's unix socket; every byte is relayed unchanged,
and each Query ('Q', the simple-query protocol) or Sync ('S', the end of an extended-protocol
exchange) the client sends is counted: the client then waits for ReadyForQuery, so each is
one round trip to the server, measured rather than estimated.
"""

from __future__ import annotations

import socket
import struct
import threading
from urllib.parse import urlparse

from colony.store.connection import parse_dsn

_NEGOTIATION = (80877103, 80877104)  # SSLRequest, GSSENCRequest


class CountingProxy:
    """TCP → PostgreSQL unix socket relay counting the client's Query ('Q') and Sync ('S')
    messages: each is one round trip to the server."""

    def __init__(self, unix_path: str) -> None:
        self.unix_path = unix_path
        self.dsn = ""  # set by ``in_front_of``
        self.round_trips = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @classmethod
    def in_front_of(cls, dsn: str) -> CountingProxy:
        """A proxy to the unix-socket server ``dsn`` names; ``proxy.dsn`` reaches the same
        role and database through it (no TLS: the relay ends at a local socket)."""
        proxy = cls(parse_dsn(dsn)["unix_sock"])
        url = urlparse(dsn)
        proxy.dsn = f"postgresql://{url.username}@127.0.0.1:{proxy.port}{url.path}?sslmode=disable"
        return proxy

    def _accept(self) -> None:
        while True:
            client, _ = self._server.accept()
            # Without this, Nagle's algorithm holds small replies for a delayed ACK (~40 ms).
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.unix_path)
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()
            threading.Thread(target=self._count, args=(client, upstream), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def _count(self, source: socket.socket, sink: socket.socket) -> None:
        buffer, started = b"", False
        try:
            while data := source.recv(65536):
                # Counted before it is forwarded: were it forwarded first, the server could
                # answer and the client read the answer before this thread counted the Sync,
                # and a test would see one round trip too few (it did, on a loaded machine).
                buffer += data
                while True:
                    if not started:  # untyped packets: int32 length first, no type byte
                        if len(buffer) < 8:
                            break
                        size, code = struct.unpack("!ii", buffer[:8])
                        if len(buffer) < size:
                            break
                        # An SSL / GSS encryption request precedes the real startup packet.
                        buffer, started = buffer[size:], code not in _NEGOTIATION
                        continue
                    if len(buffer) < 5:
                        break
                    kind, (size,) = buffer[:1], struct.unpack("!i", buffer[1:5])
                    if len(buffer) < 1 + size:
                        break
                    if kind in (b"Q", b"S"):
                        with self._lock:
                            self.round_trips += 1
                    buffer = buffer[1 + size :]
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()
