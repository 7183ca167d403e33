"""functions-framework's registry of decorated functions does not carry over between tests.

``create_app`` prefers the type a decorator registered under the function's *name* to the
signature type it is given, and every one of our entry points is named ``handle``. The first
test loads a real Pub/Sub function (a ``cloud_event`` ``handle``); the second, run after it in
the same process (one file stays on one worker), serves an HTTP ``handle``. Without the
``_fresh_function_registry`` fixture (tests/conftest.py) the second is served as a CloudEvent
function and answers its plain JSON POST with 400; this is how
``test_error_categories`` once failed, depending on which tests shared its worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from functions_framework import _function_registry

from tests.apps import registered_app, source_loader

HTTP_SOURCE = """
def handle(request):
    return {"echo": request.get_json()["n"]}
"""


def test_a_pubsub_function_registers_its_handle_as_a_cloud_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered_app("qualification", monkeypatch)
    assert _function_registry.REGISTRY_MAP.get("handle") == "cloudevent"


def test_a_later_http_handle_is_served_as_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "handle" not in _function_registry.REGISTRY_MAP
    client, _, _ = source_loader(tmp_path, monkeypatch)(HTTP_SOURCE, "handle", "http")
    response = client.post("/", json={"n": 7})
    assert response.status_code == 200 and response.get_json() == {"echo": 7}
