"""The function edge through real functions-framework apps: JSON errors, push decoding,
rejections (fake and real database) and the composition root."""

from __future__ import annotations

import base64
import dataclasses
import json
import sys
import textwrap
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import flask
import functions_framework
import pytest
from cloudevents.http import CloudEvent

from colony.contracts.events import CampaignStart
from colony.errors import (
    CallerError,
    ConfigError,
    Conflict,
    ContextBudgetExceeded,
    DatabaseError,
    InternalError,
    NotFound,
    OrgScopeError,
    ProviderUnavailable,
    TemplateError,
    Unauthorized,
    UpstreamError,
    ValidationFailed,
)
from colony.runtime import deps as deps_module
from colony.runtime import edge
from colony.runtime.compose import assets as compose_assets
from colony.runtime.compose import model as compose_model
from colony.runtime.deps import Deps, Parts, build_deps, deps, set_deps_for_tests
from colony.runtime.edge import (
    MAX_BODY_BYTES,
    MemoryRejections,
    decode_push,
    error_response,
)
from colony.settings import Settings
from colony.store.rejections import DbRejections

SECRET = "prompt text: the customer's private notes"

HTTP_SOURCE = """
from colony.runtime.edge import http_json

ERROR = None  # set by the test
SEEN = []


@http_json(methods=("POST", "GET"), paths=("/", "/items"))
def api(req):
    SEEN.append(req)
    if ERROR is not None:
        raise ERROR
    if req.path == "/items":
        return {"created": req.body}, 201
    if req.method == "GET":
        return None
    return {"echo": req.body}
"""

PUBSUB_SOURCE = """
from colony.runtime.edge import MemoryRejections, pubsub_handler
from colony.settings import Settings

ERROR = None
CALLS = []
RECORDER = MemoryRejections()
SETTINGS = Settings()  # local: no OIDC token needed (tests/test_invoker.py checks them)


@pubsub_handler("campaign", recorder=lambda: RECORDER, config=lambda: SETTINGS)
def on_event(event, event_id):
    CALLS.append((event, event_id))
    if ERROR is not None:
        raise ERROR
"""


@pytest.fixture(autouse=True)
def _fresh_deps() -> Any:
    yield
    set_deps_for_tests(None)


@pytest.fixture
def load_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str, str, str], tuple[flask.Flask, ModuleType]]:
    """Write ``source`` to a file and build the real functions-framework app for ``target``."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # the framework appends the source dir

    def load(source: str, target: str, signature_type: str) -> tuple[flask.Flask, ModuleType]:
        name = f"fn_{uuid.uuid4().hex[:10]}"
        monkeypatch.setenv("K_SERVICE", name)  # as Cloud Run sets it: names the log lines
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        app = functions_framework.create_app(target, str(path), signature_type)
        module = sys.modules[name]
        monkeypatch.delitem(sys.modules, name)
        return app, module

    return load


@pytest.fixture
def http_fn(load_function: Any) -> tuple[Any, ModuleType]:
    app, module = load_function(HTTP_SOURCE, "api", "http")
    return app.test_client(), module


@pytest.fixture
def pubsub_fn(load_function: Any) -> tuple[Any, ModuleType]:
    app, module = load_function(PUBSUB_SOURCE, "on_event", "cloudevent")
    return app.test_client(), module


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    text = response.get_data(as_text=True)
    assert "Traceback" not in text and "<html" not in text.lower() and SECRET not in text
    return body["error"]


# ----------------------------------------------------------------------------- error mapping


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (ValidationFailed("field 'x' is required"), 400, "validation_failed"),
        (CallerError("bad"), 400, "bad_request"),
        (Unauthorized("no token"), 401, "unauthorized"),
        (OrgScopeError("not your org"), 403, "org_scope"),
        (NotFound("no item 'x'"), 404, "not_found"),
        (Conflict("already approved"), 409, "conflict"),
        (ConfigError(f"COLONY_X is {SECRET}"), 500, "config_error"),
        (
            TemplateError(f"template 'system' is missing variable(s): {SECRET}"),
            500,
            "template_error",
        ),
        (
            ContextBudgetExceeded(SECRET, section="entity", tokens=9, budget=1),
            500,
            "context_budget_exceeded",
        ),
        (DatabaseError(SECRET), 503, "database_error"),
        (ProviderUnavailable(SECRET), 503, "provider_unavailable"),
        (UpstreamError(SECRET), 503, "upstream_error"),
        (RuntimeError(SECRET), 500, "internal"),
        (KeyError(SECRET), 500, "internal"),
    ],
)
def test_error_response_maps_the_tree(error: Exception, status: int, code: str) -> None:
    body, got = error_response(error)
    assert (got, body["error"]["code"]) == (status, code)
    assert SECRET not in body["error"]["message"] and body["error"]["message"]
    if isinstance(error, CallerError):
        assert body["error"]["message"] == str(error)
    if isinstance(error, InternalError):  # ours to fix: one fixed sentence, as for a bug
        assert body["error"]["message"] == edge.INTERNAL_MESSAGE


# ----------------------------------------------------------------------------- HTTP functions


def test_json_round_trip_and_statuses(http_fn: tuple[Any, ModuleType]) -> None:
    client, module = http_fn
    response = client.post("/", json={"a": [1, "ü"]})
    assert response.status_code == 200 and response.get_json() == {"echo": {"a": [1, "ü"]}}
    response = client.post("/items/", json={"b": 2})
    assert response.status_code == 201 and response.get_json() == {"created": {"b": 2}}
    assert client.get("/").status_code == 204
    request = module.SEEN[0]
    assert (request.method, request.path, request.body) == ("POST", "/", {"a": [1, "ü"]})
    assert client.post("/", data=b"").status_code == 200  # no body: None, any content type


@pytest.mark.parametrize(
    "data", [b"{not json", b'{"a": NaN}', b"\xff\xfe", b"[" * 100_000, b'{"a": 1'], ids=repr
)
def test_malformed_json_is_400(http_fn: tuple[Any, ModuleType], data: bytes) -> None:
    client, module = http_fn
    response = client.post("/", data=data, content_type="application/json")
    assert_error(response, 400, "bad_json")
    assert module.SEEN == []


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin-1"],
)
def test_wrong_content_type_is_415(http_fn: tuple[Any, ModuleType], content_type: str) -> None:
    client, module = http_fn
    response = client.post("/", data=b'{"a": 1}', content_type=content_type)
    assert_error(response, 415, "unsupported_media_type")
    assert module.SEEN == []


def test_oversized_bodies_are_413_before_the_handler(http_fn: tuple[Any, ModuleType]) -> None:
    client, module = http_fn
    body = b'{"a": "' + b"x" * MAX_BODY_BYTES + b'"}'
    response = client.post("/", data=body, content_type="application/json")
    assert_error(response, 413, "request_entity_too_large")
    assert module.SEEN == []
    fits = client.post("/", data=b'{"a": "' + b"x" * 1000 + b'"}', content_type="application/json")
    assert fits.status_code == 200


def test_json_suffix_media_types_are_accepted(http_fn: tuple[Any, ModuleType]) -> None:
    client, _ = http_fn
    response = client.post("/", data=b'{"a": 1}', content_type="application/merge-patch+json")
    assert response.status_code == 200


def test_unknown_paths_and_methods_are_json(http_fn: tuple[Any, ModuleType]) -> None:
    client, module = http_fn
    assert_error(client.post("/nope", json={}), 404, "not_found")
    response = client.delete("/")
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["Allow"] == "POST, GET"
    # functions-framework's own routes answer through the same JSON handlers
    assert_error(client.get("/robots.txt"), 404, "not_found")
    assert module.SEEN == []


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (NotFound("no approval item 'x' in this org"), 404, "not_found"),
        (Conflict("the item was already approved"), 409, "conflict"),
        (OrgScopeError("the item belongs to another org"), 403, "org_scope"),
        (ValidationFailed("field 'body' is too long"), 400, "validation_failed"),
    ],
)
def test_caller_errors_keep_their_message(
    http_fn: tuple[Any, ModuleType], error: Exception, status: int, code: str
) -> None:
    client, module = http_fn
    module.ERROR = error
    assert assert_error(client.post("/", json={}), status, code)["message"] == str(error)


def test_unauthorized_asks_for_a_bearer(http_fn: tuple[Any, ModuleType]) -> None:
    client, module = http_fn
    module.ERROR = Unauthorized("send Authorization: Bearer <token>")
    response = client.post("/", json={})
    assert_error(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_upstream_errors_are_503_without_their_text(http_fn: tuple[Any, ModuleType]) -> None:
    client, module = http_fn
    module.ERROR = ProviderUnavailable(f"OpenAI said: {SECRET}", retry_after=2.5)
    response = client.post("/", json={})
    assert_error(response, 503, "provider_unavailable")
    assert response.headers["Retry-After"] == "3"
    module.ERROR = DatabaseError(f"PostgreSQL error: {SECRET}")
    assert_error(client.post("/", json={}), 503, "database_error")


@pytest.mark.parametrize("error", [RuntimeError(SECRET), KeyError(SECRET), ZeroDivisionError()])
def test_unexpected_exceptions_are_500_internal(
    http_fn: tuple[Any, ModuleType], error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    client, module = http_fn
    module.ERROR = error
    message = assert_error(client.post("/", json={}), 500, "internal")["message"]
    assert message == edge.INTERNAL_MESSAGE
    assert SECRET not in caplog.text  # logged by type and frames, not by message
    assert type(error).__name__ in caplog.text


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError(f"COLONY_DB_DSN={SECRET!r}"), "config_error"),
        (TemplateError(f"template {SECRET!r} got unexpected variable(s): x"), "template_error"),
        (
            ContextBudgetExceeded(SECRET, section="kc", tokens=9, budget=1),
            "context_budget_exceeded",
        ),
    ],
)
def test_our_own_faults_are_500_with_a_fixed_message(
    http_fn: tuple[Any, ModuleType], error: Exception, code: str, caplog: pytest.LogCaptureFixture
) -> None:
    client, module = http_fn
    module.ERROR = error
    message = assert_error(client.post("/", json={}), 500, code)["message"]
    assert message == edge.INTERNAL_MESSAGE
    assert f"POST / failed: {type(error).__name__} ({code})" in caplog.text  # an ERROR line
    assert SECRET not in caplog.text


def test_parse_validates_without_echoing_values() -> None:
    app = flask.Flask("t")
    with app.test_request_context("/", method="POST", json={"kind": "campaign.start"}):
        request = edge.JsonRequest(
            "POST",
            "/",
            flask.request.headers,
            flask.request.args,
            {"org_id": SECRET},
            flask.request,
        )
        with pytest.raises(ValidationFailed) as caught:
            request.parse(CampaignStart)
    assert "campaign_id" in str(caught.value) and SECRET not in str(caught.value)
    empty = edge.JsonRequest("POST", "/", request.headers, request.args, None, request.raw)
    with pytest.raises(ValidationFailed, match="JSON body is required"):
        empty.parse(CampaignStart)


# ----------------------------------------------------------------------------- Pub/Sub push

START = {"kind": "campaign.start", "org_id": "org-a", "campaign_id": "c-1", "run_id": "r-1"}


def b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.b64encode(raw).decode()


def push_body(
    data: str | None, message_id: str = "m-1", attributes: Mapping[str, str] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": message_id, "publishTime": "2026-01-01T00:00:00Z"}
    if data is not None:
        message["data"] = data
    if attributes is not None:
        message["attributes"] = dict(attributes)
    return {"message": message, "subscription": "projects/p/subscriptions/colony-campaign"}


def send_cloud_event(client: Any, body: Mapping[str, Any], event_id: str = "ce-1") -> Any:
    """A binary-mode CloudEvent, as Eventarc delivers a Pub/Sub message."""
    headers = {
        "ce-id": event_id,
        "ce-specversion": "1.0",
        "ce-source": "//pubsub.googleapis.com/projects/p/topics/colony-campaign",
        "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
    }
    return client.post("/", json=body, headers=headers)


def test_valid_event_reaches_the_flow(pubsub_fn: tuple[Any, ModuleType]) -> None:
    client, module = pubsub_fn
    response = send_cloud_event(client, push_body(b64(START)), event_id="ce-42")
    assert response.status_code == 200
    [(event, event_id)] = module.CALLS
    assert event == CampaignStart(**START) and event_id == "ce-42"
    assert module.RECORDER.rejections == []


def test_raw_push_envelope_is_decoded_too(pubsub_fn: tuple[Any, ModuleType]) -> None:
    client, module = pubsub_fn
    response = client.post("/", json=push_body(b64(START), message_id="m-77"))
    assert response.status_code == 200
    [(event, event_id)] = module.CALLS
    assert event.run_id == "r-1" and event_id == "m-77"


BAD_DELIVERIES = {
    "not_base64": (push_body("%%% not base64 %%%"), None),
    "not_json": (push_body(b64(b"\x00\x01 definitely not json")), None),
    "not_utf8": (push_body(b64(b"\xff\xfe{}")), None),
    "unknown_kind": (push_body(b64({**START, "kind": "campaign.explode"})), "org-a"),
    "no_kind": (push_body(b64({"org_id": "org-a"})), "org-a"),
    "missing_org": (push_body(b64({k: v for k, v in START.items() if k != "org_id"})), None),
    "blank_org": (push_body(b64({**START, "org_id": "   "})), "   "),
    "schema_invalid": (push_body(b64({**START, "extra": SECRET})), "org-a"),
    "not_object": (push_body(b64([1, 2])), None),
    "no_data": (push_body(None), None),
    "org_mismatch": (push_body(b64(START), attributes={"org_id": "org-b"}), "org-b"),
}
EXPECTED_CODES = {
    "not_utf8": "not_json",
    "no_kind": "unknown_kind",
    "blank_org": "missing_org",
    "not_object": "schema_invalid",
}


@pytest.mark.parametrize("case", sorted(BAD_DELIVERIES))
def test_bad_deliveries_are_acked_and_recorded(
    pubsub_fn: tuple[Any, ModuleType], case: str
) -> None:
    client, module = pubsub_fn
    body, claimed = BAD_DELIVERIES[case]
    response = send_cloud_event(client, body, event_id=f"ce-{case}")
    assert response.status_code == 200  # acknowledged: a retry cannot help
    assert module.CALLS == []
    [rejection] = module.RECORDER.rejections
    assert rejection.function == "campaign" and rejection.event_id == f"ce-{case}"
    assert rejection.claimed_org_id == claimed
    assert rejection.reason.startswith(EXPECTED_CODES.get(case, case) + ":")
    assert SECRET not in rejection.reason


def test_caller_error_from_the_flow_is_a_rejection(pubsub_fn: tuple[Any, ModuleType]) -> None:
    client, module = pubsub_fn
    module.ERROR = NotFound("no campaign 'c-1' in this org")
    assert send_cloud_event(client, push_body(b64(START))).status_code == 200
    [rejection] = module.RECORDER.rejections
    assert rejection.reason == "not_found: no campaign 'c-1' in this org"
    assert rejection.claimed_org_id == "org-a"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UpstreamError(SECRET), "upstream_error"),
        (DatabaseError(SECRET), "database_error"),
        (RuntimeError(SECRET), "internal"),
        # ours to fix: retried (and reported), never recorded as a rejection
        (ConfigError(SECRET), "config_error"),
        (TemplateError(SECRET), "template_error"),
        (
            ContextBudgetExceeded(SECRET, section="task", tokens=9, budget=1),
            "context_budget_exceeded",
        ),
    ],
)
def test_failures_answer_500_so_pubsub_retries(
    pubsub_fn: tuple[Any, ModuleType],
    error: Exception,
    code: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, module = pubsub_fn
    module.ERROR = error
    response = send_cloud_event(client, push_body(b64(START)), event_id="ce-9")
    assert_error(response, 500, code)
    assert len(module.CALLS) == 1 and module.RECORDER.rejections == []
    assert "campaign event ce-9" in caplog.text and type(error).__name__ in caplog.text
    assert SECRET not in caplog.text  # neither our log line nor the framework's quotes it
    assert caplog.text.count("event ce-9") == 1 and "crashed" not in caplog.text  # once


def test_pubsub_function_rejects_other_methods_as_json(pubsub_fn: tuple[Any, ModuleType]) -> None:
    client, _ = pubsub_fn
    assert_error(client.get("/"), 405, "method_not_allowed")


def test_not_a_cloud_event_is_json_400(pubsub_fn: tuple[Any, ModuleType]) -> None:
    client, module = pubsub_fn
    response = client.post("/", json={"hello": SECRET})
    assert_error(response, 400, "bad_request")
    assert module.CALLS == []


def test_decode_push_reads_ids_attributes_and_claims() -> None:
    attributes = {"org_id": "org-a", "trace": "t-1"}
    event = CloudEvent(
        {"type": "google.cloud.pubsub.topic.v1.messagePublished", "source": "//x", "id": "e-1"},
        push_body(b64(START), attributes=attributes),
    )
    decoded = decode_push(event)
    assert decoded.problem is None and decoded.payload == CampaignStart(**START)
    assert (decoded.event_id, decoded.org_id, dict(decoded.attributes)) == (
        "e-1",
        "org-a",
        attributes,
    )
    missing = decode_push(CloudEvent({"type": "t", "source": "s", "id": "e-2"}, {"x": 1}))
    assert missing.problem is not None and missing.problem.code == "bad_envelope"
    assert missing.event_id == "e-2"


def test_unknown_function_names_are_refused() -> None:
    with pytest.raises(ValidationFailed, match="unknown function"):
        edge.pubsub_handler("no-such-function", lambda event, event_id: None)


# ----------------------------------------------------------------------------- real database


def test_db_rejections_insert_only(testdb: Any, pubsub_fn: tuple[Any, ModuleType]) -> None:
    client, module = pubsub_fn
    db = testdb.app()
    module.RECORDER = DbRejections(db)
    response = send_cloud_event(client, push_body("@@@"), event_id="ce-db")
    assert response.status_code == 200
    owner = testdb.owner_connection()
    try:
        cur = owner.cursor()
        cur.execute("SELECT function, event_id, claimed_org_id, reason FROM rejected_deliveries")
        rows = cur.fetchall()
    finally:
        owner.close()
    assert [tuple(r) for r in rows] == [
        ("campaign", "ce-db", None, "not_base64: the message data is not base64")
    ]
    with pytest.raises(DatabaseError, match="42501"), db.transaction(None) as cur:
        cur.execute("SELECT count(*) FROM rejected_deliveries")


# ----------------------------------------------------------------------------- composition root


class FakeTransport:
    def __init__(self) -> None:
        self.published: list[tuple[str, bytes, Mapping[str, str]]] = []

    def publish(self, topic: str, data: bytes, attributes: Mapping[str, str]) -> str:
        self.published.append((topic, data, attributes))
        return f"msg-{len(self.published)}"

    def schedule(
        self, queue: str, target: str, body: bytes, *, task_id: str, delay_seconds: float = 0.0
    ) -> str:
        return task_id


def test_build_deps_fills_in_what_is_not_given(testdb: Any) -> None:
    transport, recorder = FakeTransport(), MemoryRejections()
    built = build_deps(
        testdb.settings, transport=transport, rejections=recorder, parts=compose_model.parts()
    )
    assert built.transport is transport and built.rejections is recorder
    assert built.knowledge is not None and built.llm.model
    assert built.clock().tzinfo is not None
    set_deps_for_tests(built)
    assert deps() is built
    default = build_deps(testdb.settings, db=built.db, transport=transport)
    assert isinstance(default.rejections, DbRejections)


def test_model_parts_are_built_on_first_use_and_a_missing_key_is_named_there(
    testdb: Any,
) -> None:
    keyless = dataclasses.replace(
        testdb.settings, llm_provider="openai", embedding_provider="openai", openai_api_key=None
    )
    model = compose_model.parts()
    built = build_deps(keyless, transport=FakeTransport(), parts=model)  # no provider built yet
    assert {"llm", "knowledge"}.isdisjoint(vars(built))
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is required when COLONY_LLM_PROVIDER"):
        built.llm  # noqa: B018  # the first use builds it
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is required when COLONY_EMBEDDING"):
        built.knowledge  # noqa: B018
    # given parts (tests) are used as they are, and a built part is built once
    given = build_deps(testdb.settings, db=built.db, transport=FakeTransport(), parts=model)
    assert given.llm is given.llm and given.knowledge is given.knowledge
    reused = build_deps(
        keyless, db=built.db, transport=FakeTransport(), llm=given.llm, knowledge=given.knowledge
    )
    assert reused.llm is given.llm and reused.knowledge is given.knowledge
    # a part the function was not composed with is refused, naming it
    bare = build_deps(testdb.settings, db=built.db, transport=FakeTransport())
    with pytest.raises(ConfigError, match="not composed with 'blobs'"):
        bare.blobs  # noqa: B018


def test_a_deps_built_before_its_composition_is_composed_on_first_naming(testdb: Any) -> None:
    """The edge may build the process's Deps to record a rejected delivery before the
    function's first request names its parts; that request composes it, keeping the pool."""
    set_deps_for_tests(build_deps(testdb.settings, transport=FakeTransport()))
    try:
        first = deps()
        assert first.parts is None
        composed = deps(compose_model.parts)
        assert composed.parts is not None and composed.parts.llm is not None
        assert composed.db is first.db and deps() is composed
        assert deps(compose_assets.parts) is composed  # a process serves one function
    finally:
        set_deps_for_tests(None)


def test_default_recorder_is_the_process_deps(testdb: Any, load_function: Any) -> None:
    recorder = MemoryRejections()
    set_deps_for_tests(build_deps(testdb.settings, transport=FakeTransport(), rejections=recorder))
    source = PUBSUB_SOURCE.replace(", recorder=lambda: RECORDER", "")
    app, _ = load_function(source, "on_event", "cloudevent")
    assert send_cloud_event(app.test_client(), push_body("!!")).status_code == 200
    assert [r.reason.split(":")[0] for r in recorder.rejections] == ["not_base64"]


def test_deps_are_built_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SENTRY_DSN", "COLONY_ENV", "COLONY_DB_MODE"):
        monkeypatch.delenv(name, raising=False)
    built: list[Settings] = []
    gate = threading.Event()

    def fake_build(settings: Settings, parts: Parts | None = None) -> Deps:
        gate.wait(5)
        built.append(settings)
        return Deps(settings, None, FakeTransport(), MemoryRejections())  # type: ignore[arg-type]

    monkeypatch.setattr(deps_module, "build_deps", fake_build)
    set_deps_for_tests(None)
    results: list[Deps] = []
    threads = [threading.Thread(target=lambda: results.append(deps())) for _ in range(8)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(10)
    assert len(built) == 1 and len(results) == 8
    assert all(result is results[0] for result in results)
