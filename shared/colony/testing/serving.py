"""A ``socketserver`` served on a thread of its own, started and stopped the same way by every
local HTTP stand-in (``WireServer``, ``WebServer``)."""

from __future__ import annotations

import socketserver
import threading


class ServingThread:
    """Serves ``server`` from the moment it is made until ``close()``."""

    def __init__(self, server: socketserver.BaseServer, name: str) -> None:
        self.server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},  # bounds how long close() waits for the loop
            name=name,
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        """Stop the loop, close the listening socket (joining the handler threads of a server
        that blocks on close), then join the loop's thread."""
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()
