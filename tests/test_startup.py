"""A deployed function's start-up holds the cycle collector back until its first invocation
returns, then freezes what start-up made (``colony.startup``); nowhere else does anything."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from colony import startup
from tests.apps import source_loader

REPO = Path(__file__).resolve().parents[1]

HTTP_SOURCE = """
from colony.runtime.edge import http_json


@http_json
def api(req):
    return {"ok": True}
"""


@pytest.fixture
def collector() -> Iterator[tuple[int, int, int]]:
    """This process's collector as it was, put back afterwards (thresholds, frozen objects)."""
    before = gc.get_threshold()
    yield before
    gc.unfreeze()
    gc.set_threshold(*before)
    startup._restore = None


def test_outside_cloud_run_nothing_changes(collector: tuple[int, int, int]) -> None:
    assert startup.begin({"K_SERVICE": "chat"}) is False  # the test harnesses set only this
    assert gc.get_threshold() == collector
    startup.settled()
    assert gc.get_threshold() == collector and gc.get_freeze_count() == 0


def test_the_first_invocation_ends_start_up(
    collector: tuple[int, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert startup.begin({"K_REVISION": "chat-00001-abc"}) is True
    assert gc.get_threshold() == (startup.START_UP_THRESHOLD, *collector[1:])
    client, _, _ = source_loader(tmp_path, monkeypatch)(HTTP_SOURCE, "api", "http")
    assert gc.get_threshold()[0] == startup.START_UP_THRESHOLD  # loading main is start-up

    assert client.post("/", json={}).get_json() == {"ok": True}
    assert gc.get_threshold() == collector
    frozen = gc.get_freeze_count()
    assert frozen > 0  # what start-up loaded is out of later collections' way

    client.post("/", json={})  # nothing is frozen again (what was may since have been freed)
    assert gc.get_threshold() == collector and gc.get_freeze_count() <= frozen


@pytest.mark.parametrize(("revision", "young"), [("", 700), ("send-00003-xyz", 100_000)])
def test_importing_the_package_begins_start_up_in_cloud_run_only(revision: str, young: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "K_REVISION"}
    if revision:
        env["K_REVISION"] = revision
    code = "import gc, colony; print(gc.get_threshold()[0])"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(REPO / "shared")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(out.stdout) == young
