"""The /overview page and its scripts, served as they are from the chat function (static, no
templating but Clerk's Frontend API origin on ``<body>``), with the headers that keep them
what they are: a Content-Security-Policy that lets the page reach only this origin and Clerk,
no caching (page and scripts change together), no content sniffing."""

from __future__ import annotations

import html
from pathlib import Path

import flask

PAGE = Path(__file__).with_name("overview.html")
# The page's scripts, served from the same origin (the CSP's script-src 'self').
SCRIPTS = {
    "/overview/views.js": Path(__file__).with_name("views.js"),
    "/overview/kc.js": Path(__file__).with_name("kc.js"),
    "/overview/records.js": Path(__file__).with_name("records.js"),
    "/overview/setup.js": Path(__file__).with_name("setup.js"),
}


def page(clerk: str | None) -> flask.Response:
    body = PAGE.read_bytes()
    connect = "'self'"
    if clerk:  # an origin (settings check it); the page refreshes session tokens there
        attribute = f'<body data-clerk-frontend-api="{html.escape(clerk, quote=True)}">'
        body = body.replace(b"<body>", attribute.encode(), 1)
        connect += " " + clerk
    response = flask.Response(body, mimetype="text/html")
    # The page makes no request anywhere but here and Clerk (SPEC: the machines have no network).
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; "
        f"style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src {connect}"
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def script(source: Path) -> flask.Response:
    response = flask.Response(source.read_bytes(), mimetype="text/javascript")
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-store"  # as the page: both change together
    return response
