"""The edge of every deployed function: JSON over HTTP (``http``), Pub/Sub push decoding
(``pubsub``), error → status mapping (``responses``) and requests whose HTTP framing is broken,
including those the server refuses before the app sees them (``framing``). A function's
``main.py`` imports what it needs from here.

HTTP functions wrap a handler with ``http_json``; Pub/Sub functions wrap a flow with
``pubsub_handler``. Both map errors the same way (``error_response``), and every error body is
``{"error": {"code": "<snake_case>", "message": "<sentence>"}}`` — never HTML, never a
traceback, never an exception's text unless it is one of our caller-facing messages. A body
whose chunked framing is broken, or that ends early, is a 400 ``malformed_body``.

Every function the registry does not mark ``public`` accepts only the invoker's Google OIDC
token (``invoker``: audience its own URL, issuer Google, email the invoker account; not
locally): ``pubsub_handler`` checks it on every push before decoding, and a Cloud Tasks or
Scheduler target passes ``http_json(caller=invoker_only(name))``. A refused caller gets 401
JSON and nothing is run or stored (a refused push is not acknowledged either: a real message
refused by a misconfiguration is redelivered and dead-lettered, never lost).

Pub/Sub acknowledges any 2xx and redelivers on anything else, so ``pubsub_handler`` answers:

- a delivery that can never succeed (not base64, not JSON, unknown kind, schema-invalid, no
  org) or a flow's ``CallerError``: recorded in ``rejected_deliveries`` and acknowledged;
- an ``UpstreamError``, an ``InternalError`` (ours to fix: config, template, budget) or any
  other exception: re-raised, so functions-framework answers 500 and Pub/Sub retries (then
  dead-letters after its bounded attempts). Nothing is swallowed. The flow runs knowing its
  delivery attempt (``colony.runtime.delivery``), so it can record a failure before the last
  one gives up;
- an expected failure (``ColonyError.expected``: a duplicate delivery finding its step busy):
  503, so Pub/Sub redelivers it later, once the first delivery has stored the step's output;
- a request that is no delivery at all (not UTF-8 JSON, neither a CloudEvent nor a push, too
  large): a JSON 4xx before the framework tries to convert it (``install_json_errors``).

Logs carry ids, error types and codes (``error_summary``), never payloads or messages that
might quote one. Both decorators configure Cloud Logging's JSON lines when the function module
loads (``colony.observability.logs``), tag every line of a request with its function, trace and
(for events) org, run and event ids, and flush queued telemetry (Langfuse spans, Sentry events)
before the invocation returns: Cloud Functions may throttle the CPU once the response is sent.
An expected failure (``ColonyError.expected``, e.g. a duplicate delivery finding its step busy)
is one WARNING line, not an error with a traceback, and is still answered non-2xx so the
platform retries it later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.lazy import lazy_names

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.error_bodies import INTERNAL_MESSAGE
    from colony.runtime.edge.http import JsonRequest, http_json
    from colony.runtime.edge.pubsub import (
        Decoded,
        MemoryRejections,
        Problem,
        decode_push,
        delivery_attempt,
        pubsub_handler,
    )
    from colony.runtime.edge.responses import (
        MAX_BODY_BYTES,
        BadJson,
        MethodNotAllowed,
        UnsupportedMediaType,
        error_response,
        install_json_errors,
        json_response,
    )

# Loaded on first use (PEP 562): an HTTP function's main.py takes ``http_json`` and does not
# load the Pub/Sub edge (its delivery and redelivery rules, and the ports they name).
_HOMES = {
    "INTERNAL_MESSAGE": "colony.error_bodies",
    "JsonRequest": "colony.runtime.edge.http",
    "http_json": "colony.runtime.edge.http",
    "Decoded": "colony.runtime.edge.pubsub",
    "MemoryRejections": "colony.runtime.edge.pubsub",
    "Problem": "colony.runtime.edge.pubsub",
    "decode_push": "colony.runtime.edge.pubsub",
    "delivery_attempt": "colony.runtime.edge.pubsub",
    "pubsub_handler": "colony.runtime.edge.pubsub",
    "MAX_BODY_BYTES": "colony.runtime.edge.responses",
    "BadJson": "colony.runtime.edge.responses",
    "MethodNotAllowed": "colony.runtime.edge.responses",
    "UnsupportedMediaType": "colony.runtime.edge.responses",
    "error_response": "colony.runtime.edge.responses",
    "install_json_errors": "colony.runtime.edge.responses",
    "json_response": "colony.runtime.edge.responses",
}

__all__ = [
    "INTERNAL_MESSAGE",
    "MAX_BODY_BYTES",
    "BadJson",
    "Decoded",
    "JsonRequest",
    "MemoryRejections",
    "MethodNotAllowed",
    "Problem",
    "UnsupportedMediaType",
    "decode_push",
    "delivery_attempt",
    "error_response",
    "http_json",
    "install_json_errors",
    "json_response",
    "pubsub_handler",
]


__getattr__ = lazy_names(__name__, _HOMES)
