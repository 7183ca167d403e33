"""Cloud Logging lines (``colony.observability.logs``), what the edge logs, and ``colony logs``.

The in-process tests read the JSON lines the handler writes to stderr (pytest captures it);
one test runs a real local function server and reads its ``.colony/logs`` file back.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from colony.errors import NotFound, ProviderError
from colony.local import cli
from colony.local.functions import FunctionServers
from colony.local.log_view import lines, log_file, render, show
from colony.observability import logs
from colony.observability.logs import (
    SPAN_FIELD,
    TRACE_FIELD,
    CloudLoggingFormatter,
    bind,
    configure_logging,
    request_scope,
    safe_traceback,
    trace_of,
)
from colony.runtime.deps import set_deps_for_tests
from colony.runtime.edge import MAX_BODY_BYTES
from colony.runtime.steps import step
from colony.testing.telemetry import QueuedSentryTransport, queued_sentry
from tests.apps import SourceLoader, source_loader
from tests.conftest import APP_ROLE, PgDB, wait_for

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{SPAN}-01"

HTTP_SOURCE = """
from colony.runtime.edge import http_json


@http_json
def api(req):
    return {"ok": True}
"""

PUBSUB_SOURCE = """
import logging

from colony.runtime.edge import MemoryRejections, pubsub_handler
from colony.settings import Settings
from colony.runtime.steps import step

DB = []  # set by the test
RECORDER = MemoryRejections()
SETTINGS = Settings()  # local: no OIDC token needed (tests/test_invoker.py checks them)


@pubsub_handler("campaign", recorder=lambda: RECORDER, config=lambda: SETTINGS)
def on_event(event, event_id):
    logging.getLogger("colony.flows.test").info("starting %s", event.run_id)
    if DB:
        step(DB[0], event.org_id, event.run_id, "anti_icp", lambda: {"n": 2})
"""

CRASH_SOURCE = """
import flask

from colony.runtime.edge import http_json

SECRET = []  # set by the test


@flask.current_app.before_request
def broken():
    raise RuntimeError(SECRET[0])


@http_json
def api(req):
    return {"ok": True}
"""

START = {"kind": "campaign.start", "org_id": "org-a", "campaign_id": "c-1", "run_id": "r-1"}


def planted() -> str:
    return f"payload-{uuid.uuid4().hex}"


def push(data: dict[str, Any], message_id: str = "m-1") -> dict[str, Any]:
    raw = base64.b64encode(json.dumps(data).encode()).decode()
    return {"message": {"data": raw, "messageId": message_id}, "subscription": "s"}


def entries(text: str) -> list[dict[str, Any]]:
    """Our JSON lines in captured output (each line must parse: nothing is split)."""
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if "severity" in entry:
                found.append(entry)
    return found


def record(message: str, *args: Any, level: int = logging.INFO, exc: Any = None) -> str:
    """Format one record as the handler would."""
    made = logging.LogRecord("colony.test", level, __file__, 1, message, args, exc)
    return CloudLoggingFormatter().format(made)


@pytest.fixture(autouse=True)
def _fresh_deps() -> Iterator[None]:
    yield
    set_deps_for_tests(None)


@pytest.fixture
def load_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SourceLoader:
    return source_loader(tmp_path, monkeypatch)


@pytest.fixture
def sentry(monkeypatch: pytest.MonkeyPatch) -> Iterator[QueuedSentryTransport]:
    monkeypatch.setenv("SENTRY_RELEASE", "test")
    with queued_sentry() as transport:
        yield transport


# ----------------------------------------------------------------------------- the format


@pytest.mark.parametrize(
    ("headers", "trace", "span", "sampled"),
    [
        ({"traceparent": TRACEPARENT}, TRACE_ID, SPAN, True),
        ({"traceparent": f"00-{TRACE_ID}-{SPAN}-00"}, TRACE_ID, SPAN, False),
        (
            {"X-Cloud-Trace-Context": f"{TRACE_ID.upper()}/12345;o=1"},
            TRACE_ID,
            f"{12345:016x}",
            True,
        ),
        ({"X-Cloud-Trace-Context": TRACE_ID}, TRACE_ID, None, None),
        # W3C's header wins over Google's older one
        ({"traceparent": TRACEPARENT, "X-Cloud-Trace-Context": "a" * 32}, TRACE_ID, SPAN, True),
        ({"traceparent": f"00-{'0' * 32}-{SPAN}-01"}, None, None, None),
        ({"traceparent": TRACEPARENT + '\n{"severity": "x"}'}, None, None, None),
        ({"X-Cloud-Trace-Context": "not a trace"}, None, None, None),
        ({}, None, None, None),
    ],
)
def test_the_trace_comes_from_the_request_headers(
    headers: dict[str, str], trace: str | None, span: str | None, sampled: bool | None
) -> None:
    found = trace_of(headers, "proj-1")
    assert found.trace == (f"projects/proj-1/traces/{trace}" if trace else None)
    assert (found.span_id, found.sampled) == (span, sampled)


def test_a_line_carries_the_function_ids_and_trace_of_its_request_only() -> None:
    with (
        request_scope("qualification", "proj-1", {"traceparent": TRACEPARENT}),
        bind(org_id="org-a", run_id="r-1"),
        bind(event_id="e-1"),
    ):
        inside = json.loads(record("scored %d contacts", 3, level=logging.WARNING))
    after = json.loads(record("idle"))
    assert {k: inside[k] for k in ("severity", "message", "function", "org_id", "run_id")} == {
        "severity": "WARNING",
        "message": "scored 3 contacts",
        "function": "qualification",
        "org_id": "org-a",
        "run_id": "r-1",
    }
    assert inside["event_id"] == "e-1" and inside[SPAN_FIELD] == SPAN
    assert inside[TRACE_FIELD] == f"projects/proj-1/traces/{TRACE_ID}"
    assert inside["time"].endswith("Z") and inside["logger"] == "colony.test"
    assert not {"org_id", "run_id", "event_id", TRACE_FIELD} & set(after)


def _fail_with(secret: str) -> None:
    try:
        {}[secret]
    except KeyError as cause:
        raise ProviderError(f"the provider quoted {secret}") from cause


def test_a_traceback_stays_in_its_one_line_with_frames_and_types_but_no_message() -> None:
    secret = planted()
    try:
        _fail_with(secret)
    except ProviderError:
        line = record("call failed", level=logging.ERROR, exc=sys.exc_info())
    assert "\n" not in line  # one JSON object, one line
    message = json.loads(line)["message"]
    assert message.startswith("call failed\nTraceback (most recent call last):\n")
    assert "in _fail_with" in message and "KeyError" in message
    assert "The above exception was the direct cause of the following exception:" in message
    assert message.endswith("ProviderError: provider_error")
    assert secret not in line
    assert safe_traceback(ValueError(secret)) == "Traceback (most recent call last):\nValueError"


def test_configuring_twice_installs_one_handler_and_lets_colony_info_through() -> None:
    configure_logging()
    configure_logging("another")
    ours = [h for h in logging.getLogger().handlers if isinstance(h, logs._StderrHandler)]
    assert len(ours) == 1
    assert logging.getLogger("colony.flows.anything").isEnabledFor(logging.INFO)
    # other libraries stay at the root's level (httpx logs every URL at INFO)
    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)


# ----------------------------------------------------------------------------- at the edge


def test_http_lines_name_the_function_by_k_service_and_carry_the_trace(
    load_function: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLONY_GCP_PROJECT", "proj-http")
    client, _, name = load_function(HTTP_SOURCE, "api", "http")
    capsys.readouterr()
    headers = {"traceparent": TRACEPARENT}
    response = client.post("/", data=b"{nope", content_type="application/json", headers=headers)
    assert response.status_code == 400
    (line,) = entries(capsys.readouterr().err)
    assert (line["severity"], line["message"]) == ("INFO", "POST / -> 400 bad_json")
    assert line["function"] == name
    assert line[TRACE_FIELD] == f"projects/proj-http/traces/{TRACE_ID}"


def test_event_lines_carry_the_event_org_and_run_and_are_cleared_after(
    load_function: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    client, _, _ = load_function(PUBSUB_SOURCE, "on_event", "cloudevent")
    capsys.readouterr()
    headers = {"X-Cloud-Trace-Context": f"{TRACE_ID}/1;o=1"}
    assert client.post("/", json=push(START, "m-7"), headers=headers).status_code == 200
    logging.getLogger("colony.flows.test").info("between requests")
    inside, after = entries(capsys.readouterr().err)
    assert inside["message"] == "starting r-1"
    ids = (inside["function"], inside["event_id"], inside["org_id"], inside["run_id"])
    assert ids == ("campaign", "m-7", "org-a", "r-1")
    assert inside[TRACE_FIELD].endswith(f"/traces/{TRACE_ID}")
    assert after["message"] == "between requests"
    assert not {"event_id", "org_id", "run_id", TRACE_FIELD} & set(after)


@pytest.mark.parametrize("kind", ["http", "cloudevent"])
def test_an_oversized_body_is_one_line_without_a_traceback(
    load_function: Any,
    kind: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, target = (HTTP_SOURCE, "api") if kind == "http" else (PUBSUB_SOURCE, "on_event")
    client, _, _ = load_function(source, target, kind)
    capsys.readouterr()
    caplog.clear()
    body = b'{"a": "' + b"x" * MAX_BODY_BYTES + b'"}'
    response = client.post("/", data=body, content_type="application/json")
    assert response.status_code == 413
    assert response.get_json()["error"]["code"] == "request_entity_too_large"
    (only,) = caplog.records
    assert only.levelno == logging.INFO
    assert only.getMessage() == "POST / -> 413 request_entity_too_large"
    assert only.exc_info is None
    (line,) = entries(capsys.readouterr().err)
    assert "Traceback" not in line["message"]


def test_a_duplicate_delivery_finding_its_step_busy_is_one_warning_and_a_retry(
    testdb: PgDB,
    load_function: Any,
    sentry: QueuedSentryTransport,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = testdb.app()
    with db.transaction("org-a") as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES ('org-a', 'A')")
    client, module, _ = load_function(PUBSUB_SOURCE, "on_event", "cloudevent")
    module.DB.append(db)
    seen: dict[str, Any] = {}

    def first_delivery() -> dict[str, int]:
        """Still computing the step when Pub/Sub delivers the same message again."""
        capsys.readouterr()
        caplog.clear()
        seen["response"] = client.post("/", json=push(START, "m-dup"))
        seen["records"] = list(caplog.records)
        seen["err"] = capsys.readouterr().err
        return {"n": 1}

    assert step(db, "org-a", "r-1", "anti_icp", first_delivery) == {"n": 1}

    response = seen["response"]
    assert response.status_code == 503  # not acknowledged: Pub/Sub redelivers later
    assert response.get_json()["error"]["code"] == "step_busy"
    warnings = [r for r in seen["records"] if r.levelno >= logging.WARNING]
    (warning,) = warnings
    assert warning.levelno == logging.WARNING and warning.exc_info is None
    assert "campaign event m-dup" in warning.getMessage()
    assert "StepBusy (step_busy)" in warning.getMessage()
    (line,) = [e for e in entries(seen["err"]) if e["severity"] != "INFO"]
    assert (line["severity"], line["event_id"], line["run_id"]) == ("WARNING", "m-dup", "r-1")
    assert "Traceback" not in line["message"]
    assert sentry.events() == [] and sentry.queued == []  # expected: not reported
    # the redelivery, once the first has finished, replays the stored output
    assert client.post("/", json=push(START, "m-dup")).status_code == 200


def test_a_crash_outside_the_decorators_is_one_line_and_one_event(
    load_function: Any, sentry: QueuedSentryTransport, capsys: pytest.CaptureFixture[str]
) -> None:
    client, module, _ = load_function(CRASH_SOURCE, "api", "http")
    secret = planted()
    module.SECRET.append(secret)
    capsys.readouterr()
    response = client.post("/", json={})
    assert response.status_code == 500
    assert response.get_json()["error"]["code"] == "internal"
    (line,) = entries(capsys.readouterr().err)
    assert line["severity"] == "ERROR"
    assert line["message"].startswith("POST / crashed: RuntimeError\nTraceback")
    assert "in broken" in line["message"] and secret not in line["message"]
    (event,) = sentry.events()  # reported by the crash hook: no error_scope saw it
    assert event["exception"]["values"][-1]["type"] == "RuntimeError"
    assert secret.encode() not in sentry.serialized()


# ----------------------------------------------------------------------------- colony logs


def test_render_shows_time_severity_ids_and_the_traceback_indented() -> None:
    line = json.dumps(
        {
            "severity": "ERROR",
            "message": "event e-1 failed: DatabaseError (database_error)\nTraceback (most"
            ' recent call last):\n  File "x.py", line 1, in f\nDatabaseError: database_error',
            "time": "2026-12-01T06:29:36.343473Z",
            "function": "qualification",
            "org_id": "org-a",
            "event_id": "e-1",
            TRACE_FIELD: f"projects/p/traces/{TRACE_ID}",
        }
    )
    assert render(line + "\n").split("\n") == [
        f"2026-12-01 06:29:36.343 ERROR    org=org-a event=e-1 trace={TRACE_ID} event e-1 failed:"
        " DatabaseError (database_error)",
        "    Traceback (most recent call last):",
        '      File "x.py", line 1, in f',
        "    DatabaseError: database_error",
    ]
    assert render("[2026-12-01 06:00:00 +0000] [7] [INFO] Booting worker\n") == (
        "[2026-12-01 06:00:00 +0000] [7] [INFO] Booting worker"
    )
    assert render('{"not": "ours"}') == '{"not": "ours"}'


def test_unknown_functions_and_missing_logs_name_the_known_functions(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match=r"no function named 'qualify'.*qualification"):
        log_file(tmp_path, "qualify")
    (tmp_path / "chat.log").write_text("")
    with pytest.raises(NotFound, match=r"no log for 'approval'.*logs exist for: chat.*reembed"):
        log_file(tmp_path, "approval")


def test_colony_logs_follows_a_growing_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.log"
    first, second = record("first"), record("second")
    path.write_text(first + "\n")
    shown: list[str] = []
    stop = threading.Event()
    follower = threading.Thread(
        target=show, args=(tmp_path, "chat", shown.append), kwargs={"follow": True, "stop": stop}
    )
    follower.start()
    try:
        wait_for(lambda: len(shown) == 1, timeout=10, what="the existing line")
        with path.open("a") as log:
            log.write(second[:20])  # a line still being written is held back...
            log.flush()
            log.write(second[20:] + "\n")  # ...until its newline arrives
        wait_for(lambda: len(shown) == 2, timeout=10, what="the appended line")
    finally:
        stop.set()
        follower.join(10)
    assert not follower.is_alive()
    assert shown == [render(first), render(second)]  # whole lines, never a fragment
    assert shown[1].endswith("INFO     second")
    assert list(lines(path)) == [first + "\n", second + "\n"]


def test_local_servers_write_json_lines_that_colony_logs_shows(
    testdb: PgDB,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A real local server (``FunctionServers``): its lines land in ``.colony/logs`` as JSON,
    named by ``K_SERVICE``, with the trace; an oversized body is one line there too."""
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_DELIVERY_WEBHOOK_SECRET": "whsec_dGVzdC1zZWNyZXQtZm9yLWxvZ3MtdGVzdA==",
        "COLONY_GCP_PROJECT": "proj-local",
    }
    event = {"org_id": "org-a", "outbox_id": "o-1", "event": "delivered", "event_id": "x"}
    with (
        FunctionServers(env, ["delivery-events"], log_dir=tmp_path / "logs") as servers,
        httpx.Client(timeout=30) as http,
    ):
        url = servers.urls["delivery-events"]
        unsigned = http.post(url, json=event, headers={"traceparent": TRACEPARENT})
        assert unsigned.status_code == 401
        body = b'{"a": "' + b"x" * MAX_BODY_BYTES + b'"}'
        huge = http.post(url, content=body, headers={"Content-Type": "application/json"})
        assert huge.status_code == 413
    text = (tmp_path / "logs" / "delivery-events.log").read_text()
    assert "Traceback" not in text
    ours = entries(text)
    assert [(e["severity"], e["message"]) for e in ours] == [
        ("INFO", "POST / -> 401 unauthorized"),
        ("INFO", "POST / -> 413 request_entity_too_large"),
    ]
    assert {e["function"] for e in ours} == {"delivery-events"}
    assert ours[0][TRACE_FIELD] == f"projects/proj-local/traces/{TRACE_ID}"

    monkeypatch.setenv("COLONY_DATA_DIR", str(tmp_path))
    capsys.readouterr()
    assert cli.main(["logs", "delivery-events"]) == 0
    shown = capsys.readouterr().out
    assert f"INFO     trace={TRACE_ID} POST / -> 401 unauthorized" in shown
    assert "INFO     POST / -> 413 request_entity_too_large" in shown
    assert cli.main(["logs", "no-such-function"]) == 2
    assert "the functions are: admin, approval, campaign" in capsys.readouterr().err
