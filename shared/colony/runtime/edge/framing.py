"""Requests whose HTTP framing is broken: answered with our JSON error shape, never a 5xx.

A deployed function is served by gunicorn (functions-framework's ``GunicornApplication``, a
threaded worker), which finds broken framing at two moments:

- **Before the app**, in the request line and headers: bytes a request line may not hold, a
  ``Content-Length`` that is not a number (or two of them), headers past gunicorn's size
  limits. gunicorn answers these itself (``Worker.handle_error``) through
  ``gunicorn.util.write_error``, an HTML page quoting the offending input.
  ``install_framing_replies`` swaps in ``write_json_error``: the same status, then
  ``{"error": {"code", "message"}}`` with the code named by the status and a fixed sentence.
- **Inside the app, lazily**: a chunked body is decoded while it is read, so a chunk size
  that is not hex, a chunk without its CRLF or a body cut short raises from
  ``request.get_data()`` in whichever code reads first: ours (``http_json``, the CloudEvent
  check) or functions-framework's ``after_request`` hook that drains the body after our reply.
  ``CappedRequest`` (``colony.runtime.edge.responses``) turns ``BODY_FRAMING_ERRORS`` into
  ``MalformedBody``, a 400 ``malformed_body`` (before, they surfaced as a 500), and so a body
  that ends early: cut short, or shorter than its ``Content-Length``, which gunicorn hands
  over as if it were whole. gunicorn then closes the connection, since where the next
  request would start is unknown. CloudEvent apps read a body nothing else read in an
  ``after_request`` hook, as functions-framework does for HTTP apps, so the error is found
  while we can still answer it.

gunicorn's status is kept (400 for most framing, 431 for headers too large, 500 for a fault
of its own) but for one: a ``Transfer-Encoding`` it does not implement, which it answers 501
as RFC 9112 suggests (a SHOULD), is a 400 ``unsupported_transfer_coding`` here. The request
is the client's mistake, and a 5xx would count it as ours on every error-rate alert (issue 31
item 3: no 5xx from bad framing). ``Connection: close`` is kept: only the body is ours.

What the layer does not let us change:

- There is no configuration seam. functions-framework builds gunicorn's settings from a fixed
  dict (its ``GunicornApplication`` reads no config file and no ``GUNICORN_CMD_ARGS``), and
  Cloud Functions runs ``functions-framework`` itself, so neither a worker class of ours nor
  a server hook can be configured. Replacing ``gunicorn.util.write_error`` is the one seam;
  it depends on that private function's ``(sock, status, reason, message)`` signature and its
  call in ``Worker.handle_error``, which ``tests/test_framing.py`` checks against the pinned
  gunicorn.
- A request gunicorn refuses never reaches the app, so no log line of ours (function, trace)
  records it; gunicorn's own warning is below the ``error`` level functions-framework sets.
- gunicorn drops hop-by-hop headers from the app's reply, so our 400 for a malformed body
  says ``Connection: keep-alive``; gunicorn closes the connection after it all the same.
- Were a reply sent before the body is read and the reply streamed (none is: ``http_json``
  reads the body before its handler runs), gunicorn's drain would find the error after it
  and write its own reply, ours in JSON, behind the first on the connection.
- In Cloud Run every request first passes Google's front end, which parses HTTP itself and
  answers the framing it rejects with Google's own page; only what it forwards reaches us.
- ``functions-framework --debug`` serves with werkzeug's server instead (local only): a bad
  chunk there reads as a body that ended early (still a 400 ``malformed_body``), and what
  that server refuses before the app gets its own HTML page.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util as gunicorn_util
from gunicorn.http.errors import ParseException
from werkzeug.http import HTTP_STATUS_CODES

from colony.error_bodies import INTERNAL_MESSAGE, error_body
from colony.errors import CallerError

# What gunicorn's chunked body reader raises while the app reads: a bad chunk size,
# extension or terminator, a malformed trailer. A body that ends before its last chunk raises
# ``NoMoreData``, an ``OSError``, which werkzeug's stream turns into ``ClientDisconnected``.
BODY_FRAMING_ERRORS: tuple[type[BaseException], ...] = (ParseException,)

# The sentence a bare status answers with (a werkzeug ``HTTPException``, a refusal of
# gunicorn's): never the exception's or gunicorn's text, which may quote the request.
STATUS_MESSAGES = {
    400: "the request could not be understood",
    403: "the request is forbidden",
    404: "there is nothing at this path",
    405: "this method is not allowed here",
    413: "the request body is too large",
    414: "the request line is too long",
    415: "the request body must be JSON",
    417: "the request's Expect header cannot be met",
    431: "the request's headers are too large",
}


UNSUPPORTED_CODING = "the request's transfer coding is not supported; send it chunked or whole"


class MalformedBody(CallerError):
    """The request body's framing is broken (chunked encoding), so it cannot be read."""

    code = "malformed_body"


def status_code_name(status: int) -> str:
    """The error code a bare status answers with: ``bad_request`` for 400,
    ``request_header_fields_too_large`` for 431 (werkzeug's name for it, snake-cased)."""
    name = HTTP_STATUS_CODES.get(status) or ("Bad Request" if status < 500 else "Server Error")
    return name.lower().replace(" ", "_").replace("'", "")


def status_body(status: int) -> dict[str, Any]:
    """The error body for a bare status; a 5xx is ``internal``."""
    if status >= 500:
        return error_body("internal", INTERNAL_MESSAGE)
    message = STATUS_MESSAGES.get(status) or HTTP_STATUS_CODES.get(status, "request refused")
    return error_body(status_code_name(status), message)


def write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """Drop-in for ``gunicorn.util.write_error``: the same status, our JSON body.

    ``reason`` and ``mesg`` are gunicorn's, and unused: the message may quote the request, and
    gunicorn pairs its 501 with "Bad Request". The reason phrase comes from the status."""
    if status_int == 501:  # an unknown transfer coding: the client's, not a fault of ours
        answer = error_body("unsupported_transfer_coding", UNSUPPORTED_CODING)
        status_int = 400
    else:
        answer = status_body(status_int)
    body = json.dumps(answer, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status_int} {HTTP_STATUS_CODES.get(status_int, 'Error')}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    gunicorn_util.write_nonblock(sock, head.encode("latin-1") + body)


def install_framing_replies() -> None:
    """Make gunicorn answer the requests it refuses before the app with ``write_json_error``.

    Called when the function's module loads inside functions-framework's ``create_app``: that
    is before gunicorn forks its worker, which inherits the replaced function. Idempotent."""
    gunicorn_util.write_error = write_json_error
