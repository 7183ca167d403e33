"""The starters that cannot hold a port for the tool they start (the Google emulators'
``run_watched``, chromedriver's ``headless_chromium``) when another process takes that port
first: the clash is provoked on purpose, by a port picker that hands out a port a rival socket
in this test already listens on, and each start recovers on the next port. A tool that exits
for its own reasons is reported at once, with its output."""

from __future__ import annotations

import socket
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from colony.local.browser import headless_chromium
from colony.testing import emulators
from colony.testing.emulators import EmulatorFailed, run_watched
from colony.testing.loopback import ATTEMPTS, HOST, closed_port, held_elsewhere, reserve


class Picker:
    """Hands out ``first`` (in order), then free ports; ``given`` is every port handed out."""

    def __init__(self, *first: int) -> None:
        self._first = list(first)
        self.given: list[int] = []

    def __call__(self) -> int:
        port = self._first.pop(0) if self._first else closed_port()
        self.given.append(port)
        return port


@pytest.fixture
def rival() -> Iterator[int]:
    """A port another process's server holds: listening, never answering."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def http_server(directory: Path) -> Callable[[int], list[str]]:
    """Python's own HTTP server serving ``directory``: exits when its port is taken."""

    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "http.server", "-b", HOST, "-d", str(directory), str(port)]

    return command


def test_a_taken_port_is_a_restart_on_another_port(rival: int, tmp_path: Path) -> None:
    (tmp_path / "served-by-ours.txt").write_text("ours")
    picks = Picker(rival)
    with run_watched(
        "http.server", http_server(tmp_path), emulators.http_ok, timeout=60, ports=picks
    ) as port:
        listing = urllib.request.urlopen(f"http://{HOST}:{port}/", timeout=10).read()
    assert picks.given == [rival, port]
    assert b"served-by-ours.txt" in listing


@pytest.mark.parametrize("tool", ["gcp-storage-emulator", "gcloud-tasks-emulator"])
def test_the_emulators_recover_from_a_taken_port(rival: int, tool: str) -> None:
    """Neither tool exits when its port is taken (each runs on, not listening), and the
    rival accepts the tasks emulator's readiness probe (a TCP connect): the start still
    sees the port is another process's, and moves on."""
    picks = Picker(rival)
    if tool == "gcp-storage-emulator":
        with emulators.storage_emulator("bucket-a", ports=picks) as url:
            listing = urllib.request.urlopen(f"{url}/storage/v1/b", timeout=10).read()
        assert b"bucket-a" in listing
    else:
        import grpc
        from google.cloud import tasks_v2
        from google.cloud.tasks_v2.services.cloud_tasks.transports import CloudTasksGrpcTransport

        with emulators.tasks_emulator(ports=picks) as host, grpc.insecure_channel(host) as channel:
            client = tasks_v2.CloudTasksClient(transport=CloudTasksGrpcTransport(channel=channel))
            queues = client.list_queues(parent="projects/p/locations/l", timeout=10)
            assert list(queues) == []  # answered over gRPC: the emulator, not the rival
    assert len(picks.given) == 2 and picks.given[0] == rival


def test_a_port_taken_on_every_attempt_gives_up_naming_them(tmp_path: Path) -> None:
    held = [reserve() for _ in range(ATTEMPTS)]  # bound, as another start holds one
    try:
        ports = [s.getsockname()[1] for s in held]
        picks = Picker(*ports)
        with (
            pytest.raises(EmulatorFailed) as failed,
            run_watched(
                "http.server", http_server(tmp_path), emulators.http_ok, timeout=60, ports=picks
            ),
        ):
            pass
    finally:
        for sock in held:
            sock.close()
    assert str(failed.value) == (
        f"http.server: another process held its port on each of 3 attempts (ports {ports})"
    )


def test_a_tool_that_exits_at_once_is_reported_at_once_with_its_output() -> None:
    picks = Picker()
    started = time.monotonic()
    with (
        pytest.raises(EmulatorFailed) as failed,
        run_watched(
            "a broken tool",
            lambda port: [sys.executable, "-c", "import sys; sys.exit('boom: no licence')"],
            emulators.http_ok,
            timeout=600,
            ports=picks,
        ),
    ):
        pass
    assert time.monotonic() - started < 120  # not the 600 s it was allowed
    assert str(failed.value).startswith("a broken tool exited with code 1 before it was ready:")
    assert "boom: no licence" in str(failed.value)
    assert len(picks.given) == 1  # its port was free: no clash, so no second try
    assert not held_elsewhere(picks.given[0])


def test_chromedriver_recovers_from_a_taken_port(rival: int) -> None:
    """chromedriver exits when its port is taken ("IPv4 port not available"): a new port."""
    picks = Picker(rival)
    driver = headless_chromium(ports=picks)
    try:
        driver.get("data:text/html,<title>ours</title>")
        assert driver.title == "ours"
    finally:
        driver.quit()
    assert len(picks.given) == 2 and picks.given[0] == rival
