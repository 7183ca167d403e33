"""A supervised local function server killed outright comes back on its port (issue 38 item
3: the chaos soak's SIGKILLs, as Cloud Run replaces a dead instance). Real functions-framework
servers; nothing is mocked."""

from __future__ import annotations

import os
import signal

import httpx
import pytest

from colony.errors import ConfigError
from colony.local.functions import FunctionServers
from colony.local.supervisor import Supervisor
from colony.testing.loopback import accepts
from tests.conftest import wait_for

ENV = {"COLONY_DB_MODE": "dsn", "COLONY_DB_DSN": "postgresql://nobody@127.0.0.1:9/none"}


def _answers(url: str) -> int | None:
    try:
        return httpx.post(url, content=b"not an envelope", timeout=5).status_code
    except httpx.HTTPError:
        return None


def test_a_killed_server_is_started_again_on_its_port() -> None:
    with FunctionServers(ENV, ["campaign", "send"]) as servers, Supervisor(servers) as keeper:
        url, port = servers.urls["campaign"], int(servers.urls["campaign"].rsplit(":", 1)[1])
        before = servers.processes()
        assert _answers(url) == 400  # a push it cannot read: refused, not served by a 5xx
        os.killpg(before["campaign"], signal.SIGKILL)  # the whole instance, as Cloud Run loses it
        wait_for(
            lambda: servers.processes()["campaign"] != before["campaign"] and accepts(port),
            timeout=60,
            what="the campaign server to be started again",
        )
        assert wait_for(lambda: _answers(url), timeout=30, what="an answer") == 400
        assert keeper.restarts() == {"campaign": 1, "send": 0}
        assert servers.processes()["send"] == before["send"]  # the others were left alone
        servers.check()  # supervised: a restarted server is not reported as dead


def test_unsupervised_servers_still_report_an_exit() -> None:
    with FunctionServers(ENV, ["campaign"]) as servers:
        pid = servers.pid("campaign")
        os.killpg(pid, signal.SIGKILL)
        wait_for(lambda: servers._processes["campaign"].poll() is not None, what="the exit")
        with pytest.raises(ConfigError, match="'campaign'"):
            servers.check()
