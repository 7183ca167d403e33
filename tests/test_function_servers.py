"""``FunctionServers`` (``colony.local.functions``) against real functions-framework servers:
a port is held from the moment its URL is made until its server serves it, so nothing can
take it in between; a server that exits, on start-up or later, is reported at once with the
end of its output."""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from colony.errors import ConfigError
from colony.local.functions import BundleSource, FunctionServers
from colony.local.progress import wait_until
from colony.testing.loopback import HOST, foreign_listener, held_elsewhere

# No request here reaches a handler's database: a URL nothing listens at is enough to start.
ENV = {
    "COLONY_ENV": "local",
    "COLONY_DB_MODE": "dsn",
    "COLONY_DB_DSN": "postgresql://colony_app@127.0.0.1:9/colony",
}


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_the_port_is_held_from_its_url_until_its_server_serves_it(tmp_path: Path) -> None:
    """The race the servers used to lose: between choosing a port and the server binding it,
    another process takes it. Here that other process tries at the worst moment (URLs made,
    servers not started) the way gunicorn binds (``SO_REUSEADDR``), and is refused; the
    function then serves its URL, and only its own processes listen there."""
    servers = FunctionServers(ENV, ["approval"], log_dir=tmp_path)
    port = port_of(servers.urls["approval"])
    with socket.socket() as rival:
        rival.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with pytest.raises(OSError) as refused:
            rival.bind((HOST, port))
    assert refused.value.errno == errno.EADDRINUSE

    with servers, httpx.Client(timeout=30) as http:
        answer = http.get(f"{servers.urls['approval']}/no/such/path")
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "not_found"  # the function's own error body
        assert not foreign_listener(port, [servers.pid("approval")])
    assert not held_elsewhere(port)  # let go on stop


def broken_bundle(root: Path) -> BundleSource:
    """A function source that fails on import, as one missing its configuration does."""
    root.mkdir()
    (root / "main.py").write_text(
        "import sys\n"
        "sys.stderr.write('starting the broken function\\n')\n"
        "raise RuntimeError('boom: COLONY_SOMETHING is not set')\n"
    )
    return BundleSource(python=Path(sys.executable), directory=root)


def test_a_server_that_exits_on_start_up_is_reported_at_once_with_its_output(
    tmp_path: Path,
) -> None:
    """The broken one is the last to start and the start may wait ten minutes: its exit is
    reported as it happens, with the end of its output, and the healthy one is stopped."""
    servers = FunctionServers(
        ENV,
        ["approval", "delivery-events"],
        log_dir=tmp_path / "logs",
        startup_timeout=600,
        bundles={"delivery-events": broken_bundle(tmp_path / "bundle")},
    )
    healthy = port_of(servers.urls["approval"])
    started = time.monotonic()
    with pytest.raises(ConfigError) as failed:
        servers.start()
    assert time.monotonic() - started < 120  # not the 600 s the start was allowed
    message = str(failed.value)
    assert message.startswith("function 'delivery-events' exited with code 1;")
    assert "RuntimeError: boom: COLONY_SOMETHING is not set" in message
    assert "starting the broken function" in message
    assert not held_elsewhere(healthy)  # the healthy server was stopped with it


def test_a_server_that_dies_while_a_demo_waits_ends_the_wait_at_once(tmp_path: Path) -> None:
    """``check`` as a wait's ``alive``: the wait ends with the dead server's exit, not with
    its own timeout."""
    with FunctionServers(ENV, ["approval"], log_dir=tmp_path) as servers:
        servers.check()  # running: nothing to report
        os.killpg(servers.pid("approval"), signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(ConfigError, match=r"function 'approval' exited with code -9"):
            wait_until("an effect that never comes", lambda: None, 600, alive=servers.check)
        assert time.monotonic() - started < 120


def test_the_servers_start_once(tmp_path: Path) -> None:
    servers = FunctionServers(ENV, ["approval"], log_dir=tmp_path)
    with servers:
        pass
    with pytest.raises(RuntimeError, match="started already"):
        servers.start()
