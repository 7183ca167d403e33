"""Mail events: the mail provider's webhook at ``/`` (Resend, Svix-signed: delivered /
bounced / complained feed the circuit breaker, CONST-005, and the suppression list; an
inbound ``email.received`` is a reply, ``colony.flows.outbound.mail_events``, answered 202 and held
when no reader of received mail is configured, ``colony.flows.outbound.held_mail``), and the
unsubscribe links every message carries at ``/unsubscribe`` (issue 18).

``GET /unsubscribe?t=…`` (the footer link) shows a page with one button and changes nothing,
so a mail scanner that follows links unsubscribes no one; ``POST`` (that button, or a mail
client's RFC 8058 one-click ``List-Unsubscribe=One-Click``) unsubscribes. The signed link is
the only credential: it names the org and the address, and it expires.
"""

from __future__ import annotations

import html
from typing import Any

import flask
import functions_framework

from colony.runtime.compose.inbound import parts
from colony.runtime.deps import deps
from colony.runtime.edge import JsonRequest, MethodNotAllowed, http_json

UNSUBSCRIBE = "/unsubscribe"


@functions_framework.http
@http_json(methods=("GET", "POST"), paths=("/", UNSUBSCRIBE), forms=(UNSUBSCRIBE,))
def handle(request: JsonRequest) -> Any:
    d = deps(parts)
    if request.path == UNSUBSCRIBE:
        return _unsubscribe(d, request)
    if request.method != "POST":
        raise MethodNotAllowed("delivery events are POSTed", allow=("POST",))
    # lazy: the flow and the verifier load on the first request, not at cold start
    from colony.flows.outbound.mail_events import receive

    result = receive(d, d.rejections, request.raw.get_data(cache=True), request.headers)
    # accepted, not yet done: a reply held until inbound mail is configured
    return (result, 202) if result.get("status") == "held" else result


_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title>
</head><body style="font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto">
<h1 style="font-size:1.3rem">{title}</h1>{body}</body></html>"""


def _unsubscribe(d: Any, request: JsonRequest) -> flask.Response:
    # lazy: the flow loads with the first unsubscribe
    from colony.errors import ValidationFailed
    from colony.flows.outbound.sending import check_unsubscribe, unsubscribe

    token = request.args.get("t") or ""
    if not token or len(token) > 2000:
        raise ValidationFailed("the unsubscribe link has no token; use the link from the email")
    if request.method == "GET":  # a page, never a change: link scanners follow links
        check_unsubscribe(d, token, d.clock())
        action = html.escape(f"{UNSUBSCRIBE}?t={token}", quote=True)
        body = (
            f'<form method="post" action="{action}">'
            '<input type="hidden" name="List-Unsubscribe" value="One-Click">'
            '<button type="submit">Unsubscribe</button></form>'
        )
        return _page("Stop these emails?", body)
    unsubscribe(d, token, d.clock())
    return _page("You are unsubscribed", "<p>You will not receive these emails again.</p>")


def _page(title: str, body: str) -> flask.Response:
    response = flask.Response(
        _PAGE.format(title=html.escape(title), body=body), mimetype="text/html"
    )
    response.headers["Content-Security-Policy"] = "default-src 'none'; form-action 'self'"
    response.headers["Cache-Control"] = "no-store"
    return response
