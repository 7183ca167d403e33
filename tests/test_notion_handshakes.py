"""The Notion verification handshake is unauthenticated, so what it writes is bounded and
rate-limited (issue 14 item 2): a flood stores at most ``HANDSHAKES_PER_WINDOW`` per window
(the rest get 429 JSON) and the table keeps at most ``HANDSHAKES_KEPT`` rows, the newest; a
legitimate handshake still works once the window has passed. Real PostgreSQL, the real
notion-webhook function (over HTTP, and as its functions-framework app with a clock the test
moves)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from colony.errors import DatabaseError
from colony.flows.knowledge.notion_webhook import (
    HANDSHAKE_WINDOW_SECONDS,
    HANDSHAKES_KEPT,
    HANDSHAKES_PER_WINDOW,
)
from colony.local.functions import FunctionServers
from colony.runtime.deps import set_deps_for_tests
from colony.settings import Settings
from colony.store import fetch_all
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import registered_app
from tests.conftest import APP_ROLE, PgDB


def stored_tokens(testdb: PgDB) -> list[str]:
    owner = testdb.owner_connection()
    try:
        rows = fetch_all(
            owner.cursor(), "SELECT verification_token FROM notion_verifications ORDER BY id"
        )
    finally:
        owner.close()
    return [r["verification_token"] for r in rows]


def test_a_flood_of_handshakes_over_http_is_refused_past_the_bound(
    testdb: PgDB, tmp_path: Path
) -> None:
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
    }
    with (
        FunctionServers(env, ["notion-webhook"], log_dir=tmp_path) as servers,
        httpx.Client(timeout=60) as http,
    ):
        url = servers.urls["notion-webhook"]
        replies = [
            http.post(url, json={"verification_token": f"flood-{n}"})
            for n in range(HANDSHAKES_PER_WINDOW * 3)
        ]
    statuses = [r.status_code for r in replies]
    assert statuses == [200] * HANDSHAKES_PER_WINDOW + [429] * (HANDSHAKES_PER_WINDOW * 2)
    for refused in replies[HANDSHAKES_PER_WINDOW:]:
        assert refused.headers["content-type"] == "application/json"
        assert refused.json()["error"]["code"] == "rate_limited"
        assert int(refused.headers["Retry-After"]) >= 1
        assert "flood" not in refused.text  # the token is never echoed
    assert stored_tokens(testdb) == [f"flood-{n}" for n in range(HANDSHAKES_PER_WINDOW)]


@pytest.fixture
def moving_clock(testdb: PgDB) -> Iterator[list[datetime]]:
    now = [datetime(2026, 12, 1, 9, 0, tzinfo=UTC)]
    deps = local_deps(Settings.from_env({}), testdb.app(), InlineTransport(), clock=lambda: now[0])
    set_deps_for_tests(deps)
    yield now
    set_deps_for_tests(None)


def test_rows_kept_are_bounded_and_a_legit_handshake_still_works(
    testdb: PgDB, moving_clock: list[datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = registered_app("notion-webhook", monkeypatch)
    window = timedelta(seconds=HANDSHAKE_WINDOW_SECONDS + 1)
    accepted: list[str] = []
    windows = HANDSHAKES_KEPT // HANDSHAKES_PER_WINDOW + 2  # more than the table keeps
    for w in range(windows):
        for n in range(HANDSHAKES_PER_WINDOW * 2):
            token = f"flood-{w}-{n}"
            reply = client.post("/", json={"verification_token": token})
            if reply.status_code == 200:
                accepted.append(token)
            else:
                assert reply.status_code == 429, reply.get_data()
                assert reply.get_json()["error"]["code"] == "rate_limited"
        assert len(stored_tokens(testdb)) <= HANDSHAKES_KEPT
        moving_clock[0] += window
    assert len(accepted) == windows * HANDSHAKES_PER_WINDOW > HANDSHAKES_KEPT
    assert stored_tokens(testdb) == accepted[-HANDSHAKES_KEPT:]  # the oldest were pruned

    # the window has passed: Notion's real handshake is stored, as the newest row
    reply = client.post("/", json={"verification_token": "secret_legit"})
    assert reply.status_code == 200 and reply.get_json() == {"status": "verification_received"}
    kept = stored_tokens(testdb)
    assert kept[-1] == "secret_legit" and len(kept) == HANDSHAKES_KEPT


def test_the_application_role_cannot_write_around_the_bound(testdb: PgDB) -> None:
    db = testdb.app()
    with pytest.raises(DatabaseError, match="42501"), db.transaction(None) as cur:
        cur.execute("INSERT INTO notion_verifications (verification_token) VALUES ('x')")
    with pytest.raises(DatabaseError, match="42501"), db.transaction(None) as cur:
        cur.execute("DELETE FROM notion_verifications")
    # and the function clamps its bounds: a huge per-window or keep argument changes nothing
    at = datetime(2026, 12, 1, tzinfo=UTC)
    with db.transaction(None) as cur:
        for n in range(105):
            cur.execute(
                "SELECT record_notion_verification(%s, %s, 100000, 60, 100000)", (f"t{n}", at)
            )
    assert len(stored_tokens(testdb)) == 100
