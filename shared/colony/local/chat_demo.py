"""``make run``'s chat step, and the small SSE client the demo, the tests and the bench share.

``run_chat_demo`` talks to the running chat function like the /overview page does (a turn, a
gated campaign launch approved inline, the resumed answer), then serves the page until
Ctrl-C, printing its URL with a ready-to-use local token.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class SseEvent:
    id: int | None
    type: str
    data: dict[str, Any]


def read_sse(lines: Iterator[str]) -> Iterator[SseEvent]:
    """Parse a ``text/event-stream`` (comments and ``retry:`` skipped)."""
    kind: str = "message"
    ident: int | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield SseEvent(ident, kind, json.loads("\n".join(data)))
            kind, ident, data = "message", None, []
        elif line.startswith(":") or line.startswith("retry:"):
            continue
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("id:"):
            ident = int(line[3:].strip())
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def post_turn(
    http: httpx.Client,
    base: str,
    token: str,
    message: str,
    session_id: str | None = None,
    *,
    stop_after: int | None = None,
) -> tuple[str, list[SseEvent]]:
    """POST a turn and read its stream to ``done`` (or only ``stop_after`` events)."""
    body: dict[str, Any] = {"message": message}
    if session_id:
        body["session_id"] = session_id
    headers = {"Authorization": f"Bearer {token}"}
    with http.stream("POST", f"{base}/turns", json=body, headers=headers) as response:
        if response.status_code != 200:
            response.read()
            raise httpx.HTTPStatusError(response.text, request=response.request, response=response)
        session = response.headers["X-Colony-Session"]
        events: list[SseEvent] = []
        for event in read_sse(response.iter_lines()):
            events.append(event)
            if event.type == "done" or (stop_after and len(events) >= stop_after):
                break
    return session, events


def follow(
    http: httpx.Client,
    base: str,
    token: str,
    session_id: str,
    after: int,
    *,
    until_done: bool = True,
) -> list[SseEvent]:
    """Replay (and follow) a session's events after ``after`` until the next ``done``."""
    headers = {"Authorization": f"Bearer {token}", "Last-Event-ID": str(after)}
    url = f"{base}/sessions/{session_id}/events" + ("?until=done" if until_done else "")
    with http.stream("GET", url, headers=headers) as response:
        response.raise_for_status()
        return list(read_sse(response.iter_lines()))


def answer_text(events: list[SseEvent]) -> str:
    """The answer the deltas spell (a ``reset`` delta replaces the text before it)."""
    text = ""
    for event in events:
        if event.type == "delta":
            text = event.data["text"] if event.data.get("reset") else text + event.data["text"]
    return text


def run_chat_demo(
    settings: Any, servers: Any, token: str, say: Callable[[str], None], *, serve: bool = True
) -> None:
    """The scenario's chat step: one question, one gated launch approved inline, then the
    page served until Ctrl-C (``servers`` already runs the chat function)."""
    base = servers.urls["chat"]
    with httpx.Client(timeout=120) as http:
        session, events = post_turn(http, base, token, "What does our pipeline look like?")
        say(f"chat session {session}: asked for the pipeline →")
        say(f"  tool: {[e.data['name'] for e in events if e.type == 'tool_call']}")
        say(f"  answer: {answer_text(events)[:300]}")
        _, events = post_turn(
            http,
            base,
            token,
            "Launch a Referral campaign for T2 prospects P-003 and P-004",
            session,
        )
        card = next((e.data["approval"] for e in events if e.type == "approval_required"), None)
        if card:
            say(f"  the launch waits for approval: {card['summary']} (item {card['id']})")
            decision = http.post(
                f"{base}/approvals",
                json={"item_id": card["id"], "action": "approve"},
                headers={"Authorization": f"Bearer {token}"},
            )
            say(f"  approved inline: {decision.json()}")
            resumed = follow(http, base, token, session, events[-1].id or 0)
            say(f"  resumed: {answer_text(resumed)[:300]}")
    url = f"{base}/overview#token={token}"
    say(f"the /overview page is served at {base}/overview")
    say(f"  open (token included): {url}")
    say(f"  local token (Authorization: Bearer …): {token}")
    if serve:
        say("serving until Ctrl-C…")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            say("stopped.")
