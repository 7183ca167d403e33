"""No 5xx for bad input: every registered function, loaded from its real ``main.py``, answers
malformed requests with a JSON 4xx, or (a Pub/Sub push that is an envelope but a bad one)
acknowledges it with a 2xx and records it in ``rejected_deliveries``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from colony.registry.functions import FUNCTIONS
from colony.runtime.deps import build_deps, set_deps_for_tests
from colony.runtime.edge import MAX_BODY_BYTES
from colony.settings import Settings
from colony.store import fetch_all
from colony.testing.inline import InlineTransport
from tests.apps import registered_app
from tests.conftest import APP_ROLE, PgDB

CLOUD_EVENT = {
    "ce-id": "ce-1",
    "ce-specversion": "1.0",
    "ce-source": "//pubsub.googleapis.com/projects/p/topics/t",
    "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
}
JSON = "application/json"
CE_JSON = "application/cloudevents+json"

NO_SOURCE = {k: v for k, v in CLOUD_EVENT.items() if k != "ce-source"}
PUSH = b'{"message": {"data": "e30=", "messageId": "m-1"}}'
BIG = b'{"a": "' + b"x" * MAX_BODY_BYTES + b'"}'
GARBAGE = b'{"message": {"data": "/+5ub3QganNvbg==", "messageId": "m-2"}, "subscription": "s"}'

# name → (body, content type, extra headers, method)
MALFORMED: dict[str, tuple[bytes, str | None, dict[str, str], str]] = {
    "binary": (b"\xff\xfe\x00\x81binary\x00", JSON, {}, "POST"),
    "binary_cloud_event": (
        b"\x89PNG\r\n\x1a\n\x00",
        "application/octet-stream",
        CLOUD_EVENT,
        "POST",
    ),
    "truncated_json": (PUSH[:-3], JSON, {}, "POST"),
    "json_array": (b"[1, 2, 3]", JSON, {}, "POST"),
    "json_string": (b'"hello"', JSON, {}, "POST"),
    "nan": (b'{"message": NaN}', JSON, {}, "POST"),
    "deeply_nested": (b"[" * 100_000, JSON, {}, "POST"),
    "wrong_content_type": (PUSH, "text/plain", {}, "POST"),
    "form": (b"a=1&b=2", "application/x-www-form-urlencoded", {}, "POST"),
    "latin1_charset": (b'{"a": "\xe9"}', "application/json; charset=latin-1", {}, "POST"),
    "bogus_ce_headers": (b"{}", JSON, {"ce-specversion": "9.9", "ce-id": "x"}, "POST"),
    "ce_headers_without_source": (b'{"message": {}}', JSON, NO_SOURCE, "POST"),
    "structured_event_missing_fields": (b'{"specversion": "1.0"}', CE_JSON, {}, "POST"),
    "background_event_bad_context": (b'{"context": 5, "data": {}}', JSON, {}, "POST"),
    "empty": (b"", JSON, {}, "POST"),
    "oversized": (BIG, JSON, {}, "POST"),
    "wrong_method": (b"{}", JSON, {}, "PUT"),
    "push_of_garbage": (GARBAGE, JSON, {}, "POST"),  # a push: acknowledged, recorded
}


@pytest.fixture
def deps_for(testdb: PgDB) -> Iterator[PgDB]:
    """The process's deps on a fresh database, configured like a deployment: every secret a
    function checks is set, so nothing fails as misconfigured (a 500 we would rightly give)."""
    settings = Settings.from_env(
        {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
            "COLONY_EMBEDDING_DIM": str(testdb.dim),
            "COLONY_DELIVERY_WEBHOOK_SECRET": "whsec_ZGVsaXZlcnktc2VjcmV0LWZvci10ZXN0cw==",
            "COLONY_DRIVE_CHANNEL_TOKEN": "drive-token",
            "COLONY_DRIVE_BASE_URL": "http://127.0.0.1:9",  # never reached: no Google creds
            "COLONY_NOTION_SIGNING_SECRET": "notion-secret",
            "COLONY_NOTION_TOKEN": "notion-token",
            "COLONY_APPROVAL_TOKEN_KEY": "approval-key",
            "COLONY_CLERK_WEBHOOK_SECRET": "whsec_Y2xlcmstd2ViaG9vay1zZWNyZXQ=",
            "COLONY_HUBSPOT_CLIENT_SECRET": "hubspot-app-secret",
        }
    )
    built = build_deps(settings, transport=InlineTransport())
    set_deps_for_tests(built)
    yield testdb
    set_deps_for_tests(None)
    built.db.close()


def rejections(testdb: PgDB) -> list[dict[str, Any]]:
    owner = testdb.owner_connection()
    try:
        return fetch_all(owner.cursor(), "SELECT function, reason FROM rejected_deliveries")
    finally:
        owner.close()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_malformed_requests_never_get_a_5xx(
    name: str, deps_for: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = registered_app(name, monkeypatch)
    push = FUNCTIONS[name].trigger == "pubsub"
    acknowledged = []
    for case, (body, content_type, headers, method) in MALFORMED.items():
        before = len(rejections(deps_for))
        response = client.open(
            "/", method=method, data=body, content_type=content_type, headers=headers
        )
        what = f"{name} / {case}: {response.status_code} {response.get_data()[:200]!r}"
        assert response.status_code < 500, what
        if 200 <= response.status_code < 300:
            # only a push may be acknowledged, and only once it is recorded as rejected
            assert push, what
            recorded = rejections(deps_for)[before:]
            assert [r["function"] for r in recorded] == [name], what
            acknowledged.append(case)
        else:
            assert 400 <= response.status_code < 500, what
            assert response.mimetype == "application/json", what
            error = response.get_json()["error"]
            assert set(error) == {"code", "message"} and error["code"], what
    assert acknowledged == (["push_of_garbage"] if push else [])
