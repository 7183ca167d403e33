"""No 5xx from bad framing (issue 31 item 3): every registered function, served by the real
``functions-framework`` (gunicorn) as it is deployed, answers broken HTTP framing with our
JSON error shape, sent raw over a socket since no HTTP client will write it.

Malformed chunked bodies are generated from a fixed seed and reach the app, which answers
400 ``malformed_body``, whether our code reads the body first or a refusal (a wrong method)
comes before it. Framing gunicorn refuses before the app (request line, ``Content-Length``,
header sizes) gets gunicorn's status with our body (``colony.runtime.edge.framing``). Either
way the reply is the only one on the connection and never quotes the request.
"""

from __future__ import annotations

import ast
import http.client
import inspect
import json
import random
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gunicorn import util as gunicorn_util
from gunicorn.workers import base as gunicorn_base

from colony.local.functions import FunctionServers
from colony.registry.functions import FUNCTIONS
from colony.runtime.edge.framing import write_json_error

MARKER = "zq-marker"  # in every malformed request; never in a reply
SEED = 31


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str | None
    body: bytes
    after: bytes  # whatever the server sent after the reply, before closing


def exchange(base_url: str, request: bytes) -> Reply:
    """Send ``request`` raw, close our sending side (a truncated body ends there), read the
    one reply and anything after it until the server closes the connection."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = response.read()
        after = b""
        while chunk := sock.recv(65536):
            after += chunk
    return Reply(response.status, response.getheader("Content-Type"), body, after)


def error_of(reply: Reply, what: str) -> dict[str, Any]:
    """The reply's ``error`` object, once it is our JSON shape and the only reply."""
    assert reply.content_type == "application/json", what
    assert reply.after == b"", what  # no second, unrequested reply on the connection
    assert MARKER.encode() not in reply.body, what
    parsed = json.loads(reply.body)
    assert set(parsed) == {"error"} and set(parsed["error"]) == {"code", "message"}, what
    return dict(parsed["error"])


def bad_chunked_bodies(seed: int = SEED) -> list[tuple[str, bytes]]:
    """Chunked bodies whose framing is broken, one or more per way of breaking it, drawn
    from ``seed``: (label, bytes after the headers)."""
    rng = random.Random(seed)
    data = f'{{"note": "{MARKER}"}}'.encode()
    size = b"%x" % len(data)
    not_hex = "ghijklmnopqrstuvwxyzGHIJ+_ .,:%"
    cases: list[tuple[str, bytes]] = []
    for n in range(3):
        junk = "".join(rng.choice(not_hex) for _ in range(rng.randint(1, 6))).encode()
        cases.append((f"non_hex_size_{n}", junk + b"\r\n" + data + b"\r\n0\r\n\r\n"))
    cases.append(("negative_size", b"-" + size + b"\r\n" + data + b"\r\n0\r\n\r\n"))
    cases.append(("empty_size", b"\r\n" + data + b"\r\n0\r\n\r\n"))
    huge = b"f" * rng.randint(17, 40)  # more than any int64: waits for bytes never sent
    cases.append(("overflowing_size", huge + b"\r\n" + data + b"\r\n0\r\n\r\n"))
    endless = b"1" * rng.randint(9_000, 12_000)  # a size line past gunicorn's line limit
    cases.append(("size_line_too_long", endless + b"\r\n" + data))
    for n in range(2):
        wrong = bytes(rng.choice(b"XYZ\n ") for _ in range(2))
        cases.append((f"missing_crlf_{n}", size + b"\r\n" + data + wrong + b"0\r\n\r\n"))
    cut = rng.randint(1, len(data) - 1)
    cases.append(("truncated_chunk", size + b"\r\n" + data[:cut]))
    cases.append(("no_last_chunk", size + b"\r\n" + data + b"\r\n"))
    cases.append(("no_final_crlf", size + b"\r\n" + data + b"\r\n0\r\n"))
    cases.append(("bare_lf", size + b"\n" + data + b"\n0\n\n"))
    cases.append(("bad_extension", size + b";\x01=" + MARKER.encode() + b"\r\n" + data))
    return cases


CHUNKED = bad_chunked_bodies()


def chunked_request(request_line: bytes, body: bytes) -> bytes:
    return (
        request_line
        + b"Host: localhost\r\nContent-Type: application/json\r\n"
        + b"Transfer-Encoding: chunked\r\n\r\n"
        + body
    )


@dataclass(frozen=True)
class Served:
    urls: dict[str, str]
    logs: Path  # <name>.log: each function's log lines

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Every registered function, as deployed (gunicorn), started once for the module. No
    request here gets as far as a handler, so the database is a URL nothing listens at: the
    composition root (built by an internal function's caller check) only needs to parse it."""
    env = {
        "COLONY_ENV": "local",
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": "postgresql://colony_app@127.0.0.1:9/colony",
    }
    logs = tmp_path_factory.mktemp("logs")
    with FunctionServers(env, log_dir=logs) as started:
        yield Served(started.urls, logs)


def refusing_line(name: str) -> bytes:
    """A request line each function refuses before reading the body: the wrong method for a
    Pub/Sub push function (405), a path no HTTP function serves (404)."""
    if FUNCTIONS[name].trigger == "pubsub":
        return b"GET / HTTP/1.1\r\n"
    return b"PUT /no/such/path HTTP/1.1\r\n"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_malformed_chunked_body_is_a_json_400(name: str, servers: Served) -> None:
    url = servers.urls[name]
    for line in (b"POST / HTTP/1.1\r\n", refusing_line(name)):
        for case, body in CHUNKED:
            what = f"{name} {line.split()[0].decode()} {case}"
            reply = exchange(url, chunked_request(line, body))
            assert reply.status == 400, (what, reply)
            assert error_of(reply, what)["code"] == "malformed_body", what
    # refusals, one line each: no crash, no traceback (its line is written before the reply)
    log = servers.log(name)
    assert log.count("-> 400 malformed_body") >= 2 * len(CHUNKED), log[-2000:]
    assert "Traceback" not in log and '"ERROR"' not in log, log[-2000:]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_well_framed_chunked_body_is_read(name: str, servers: Served) -> None:
    """The control: the same framing done right is decoded, and refused for what it says."""
    body = b"4\r\nnot \r\n4\r\njson\r\n0\r\n\r\n"
    reply = exchange(servers.urls[name], chunked_request(b"POST / HTTP/1.1\r\n", body))
    error = error_of(reply, name)
    assert 400 <= reply.status < 500 and error["code"] != "malformed_body", (name, reply)


def test_a_body_shorter_than_its_content_length_is_a_json_400(
    servers: Served,
) -> None:
    """gunicorn hands over what arrived before the client stopped sending; a handler must
    not read it as the whole body (here it would parse: ``{}``)."""
    for name in sorted(FUNCTIONS):
        request = (
            b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 40\r\n\r\n{}"
        )
        reply = exchange(servers.urls[name], request)
        assert reply.status == 400, (name, reply)
        assert error_of(reply, name)["code"] == "malformed_body", name


def _headers(*lines: bytes) -> bytes:
    return b"".join(line + b"\r\n" for line in lines) + b"\r\n"


BODY = b'{"a": 1}'
HOST = b"Host: localhost"
TYPE = b"Content-Type: application/json"
# (request, status, code): refused by gunicorn before the app sees anything.
REFUSED_BY_THE_SERVER: dict[str, tuple[bytes, int, str]] = {
    "content_length_not_a_number": (
        b"POST / HTTP/1.1\r\n" + _headers(HOST, TYPE, b"Content-Length: 8" + MARKER.encode()),
        400,
        "bad_request",
    ),
    "content_length_negative": (
        b"POST / HTTP/1.1\r\n" + _headers(HOST, TYPE, b"Content-Length: -8") + BODY,
        400,
        "bad_request",
    ),
    "two_content_lengths": (
        b"POST / HTTP/1.1\r\n"
        + _headers(HOST, TYPE, b"Content-Length: 8", b"Content-Length: 9")
        + BODY,
        400,
        "bad_request",
    ),
    "content_length_and_chunked": (
        b"POST / HTTP/1.1\r\n"
        + _headers(HOST, TYPE, b"Content-Length: 8", b"Transfer-Encoding: chunked")
        + BODY,
        400,
        "bad_request",
    ),
    "header_too_large": (
        b"POST / HTTP/1.1\r\n"
        + _headers(HOST, TYPE, b"X-Big: " + MARKER.encode() * 1000, b"Content-Length: 8")
        + BODY,
        431,
        "request_header_fields_too_large",
    ),
    "too_many_headers": (
        b"POST / HTTP/1.1\r\n"
        + _headers(HOST, TYPE, *(b"X-H%d: %s" % (n, MARKER.encode()) for n in range(150)))
        + BODY,
        431,
        "request_header_fields_too_large",
    ),
    "nul_in_path": (
        b"POST /" + MARKER.encode() + b"\x00 HTTP/1.1\r\n" + _headers(HOST, TYPE),
        400,
        "bad_request",
    ),
    "control_bytes_in_path": (
        b"POST /\x7f\x1b" + MARKER.encode() + b" HTTP/1.1\r\n" + _headers(HOST, TYPE),
        400,
        "bad_request",
    ),
    "space_in_path": (
        b"POST /a " + MARKER.encode() + b" HTTP/1.1\r\n" + _headers(HOST, TYPE),
        400,
        "bad_request",
    ),
    "bad_header_name": (
        b"POST / HTTP/1.1\r\n" + _headers(HOST, TYPE, b"X(" + MARKER.encode() + b"): 1"),
        400,
        "bad_request",
    ),
    "bad_http_version": (
        b"POST / HTTP/9." + MARKER.encode() + b"\r\n" + _headers(HOST, TYPE),
        400,
        "bad_request",
    ),
    # RFC 9112 6.1 suggests 501 (a SHOULD); the client's mistake is a 400 here, never a 5xx
    "unknown_transfer_coding": (
        b"POST / HTTP/1.1\r\n" + _headers(HOST, TYPE, b"Transfer-Encoding: " + MARKER.encode()),
        400,
        "unsupported_transfer_coding",
    ),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_framing_the_server_refuses_gets_our_json_shape(name: str, servers: Served) -> None:
    for case, (request, status, code) in REFUSED_BY_THE_SERVER.items():
        what = f"{name} {case}"
        reply = exchange(servers.urls[name], request)
        assert reply.status == status, (what, reply)
        assert error_of(reply, what)["code"] == code, what


def test_the_reply_writer_still_fits_gunicorns() -> None:
    """``install_framing_replies`` replaces a private gunicorn function: a gunicorn that
    calls it, or defines it, with other arguments must fail here, not at a bad request."""
    tree = ast.parse(inspect.getsource(gunicorn_util))
    (theirs,) = (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "write_error")
    ours = list(inspect.signature(write_json_error).parameters)
    assert [a.arg for a in theirs.args.args] == ours
    caller = inspect.getsource(gunicorn_base.Worker.handle_error)
    assert "util.write_error(client, status_int, reason, mesg)" in caller
