"""The chat function's HTTP surface (``functions/chat/main.py`` hands every request here).

    GET  /overview                  the page (static; it asks for a bearer token itself, or
                                    with COLONY_CLERK_FRONTEND_API refreshes Clerk session
                                    tokens there: ``<body data-clerk-frontend-api>``)
    GET  /overview/views.js         the page's pipeline, funnel, brief and tool-result views
                                    (static, same origin: the CSP's script-src 'self')
    POST /turns                     {"session_id"?, "message"} → SSE stream of the turn
    POST /sessions                  a new session → {"session_id"}
    GET  /sessions/<id>             its turns and last event id
    GET  /sessions/<id>/events      SSE: replay after Last-Event-ID (or ?after=), then follow
                                    (``?until=done`` ends the stream after the next ``done``)
    GET  /brief                     today's daily brief (its text and its five sections), or null
    GET  /pipeline                  deals and their value by stage, the largest of each named
    GET  /campaigns                 the recent campaigns' funnels: contacts → qualified →
                                    drafted → approved → sent → replied
    GET  /campaigns/events          SSE: ``funnels`` (the same) on connect and again whenever
                                    a count changes (the hub's ``colony_campaigns``)
    GET  /approvals[?kind=&campaign=&limit=&mine=1]
                                    pending approval items as detailed cards, newest first
                                    (``pending_cards``; at most 500; a deployment kit's link
                                    is signed afresh), with counts per kind and campaign,
                                    each card saying whose queue it is in (``mine=1``: only
                                    the signed-in person's, and ``pending_mine`` counted)
    POST /approvals                 {"item_id", "action", "reason"?, "edited"?, "proposal"?}
                                    → the approval flow, as the page's signed-in person
                                    (channel ``ui``, or ``chat-confirmed`` confirming a
                                    proposal card); an item someone else already decided is
                                    a 409 whose ``error.decided`` says who, how and when
    GET  /approvals/events          SSE: ``ready``, then ``changed`` as items are added or
                                    decided anywhere (their id, status, who and when, and
                                    the new counts), or ``reload`` when the stream fell behind
    GET  /audit[?item_id=&limit=]   the org's audit log, newest first
    GET  /imports                   the org's five newest import jobs (counts and status)
    GET  /alerts                    what needs a person now (``flows.outbound.alerts``): a
                                    paused sending domain and the TXT records that mend it,
                                    what the breaker paused, mail waiting for a postal address
    POST /alerts/resume             {"kind", "target"}: an org admin resumes what the breaker
                                    paused (audited; 403 for anyone else)
    GET  /usage[?month=YYYY-MM]     what the org spent on model calls in a month (UTC): in all,
                                    by agent, campaign and day, unpriced calls, and for the
                                    current month the budget's standing (the page's banner)
    GET|POST|PUT|DELETE /kc…        the Knowledge Core editor (``colony.chat.kc_routes``)
    GET  /prospects[/<id>], /deals[/<id>], /calls[/<id>]
                                    prospects, deals and calls as records
                                    (``colony.chat.records_routes``)
    GET|PUT /setup…                 the org's ICP, sequences and settings, for its admins
                                    (``colony.chat.setup_routes``)
    GET  /overview/kc.js, /overview/records.js, /overview/setup.js
                                    the page's Knowledge, Prospects and Setup views (static)
    GET|PUT /notifications[/slack]  the person's own notification settings; POST
                                    /slack/interactions: Slack's Approve / Reject clicks
                                    (``colony.chat.notify_routes``)
    GET  /explain/<output id>       the model calls behind an approval item, a chat turn or
                                    a brief, and what their context was built from (the
                                    card's "Why?" panel; ``colony explain`` prints the same)

Everything but the page needs ``Authorization: Bearer <JWT>`` with the org in its claims.
Errors before a stream starts are JSON (SPEC §10); inside a stream they are ``error`` events.
A turn runs on a worker thread: it finishes (and persists every event) even if the client
disconnects, and the response only relays its events.
"""

from __future__ import annotations

import contextvars
import importlib
import json
import logging
import queue
import re
import threading
from collections.abc import Iterator
from typing import Any

import flask

from colony.chat import notify_routes, page
from colony.chat.hub import hub_for
from colony.contracts.deliverability import SendingResume
from colony.errors import Forbidden, NotFound, ValidationFailed, error_summary
from colony.flows.approvals.approval_queue import audit_trail, pending_cards, queue_changes
from colony.flows.chat import (
    check_message,
    create_session,
    require_session,
    today_brief,
    transcript,
)
from colony.flows.chat import events as ev
from colony.flows.deps import FlowDeps
from colony.flows.insights.explain import explain
from colony.flows.insights.workbench import funnels, pipeline
from colony.flows.outbound import breaker
from colony.flows.outbound.alerts import alerts
from colony.flows.tenants.import_progress import recent as recent_imports
from colony.flows.tenants.usage import report as usage_report
from colony.runtime.auth import is_org_admin, verify_bearer
from colony.runtime.edge import JsonRequest, MethodNotAllowed, error_response

log = logging.getLogger("colony.chat")

HEARTBEAT_SECONDS = 15.0
APPROVALS_SHOWN = 50
APPROVALS_MAX = 500
# Route groups in modules of their own, each loaded on its group's first request rather than
# with the page (issue 32 item 4): the path's first segment → the module whose
# ``handle(deps, who, request)`` serves it and everything under it.
_RECORDS = "colony.chat.records_routes"
_GROUPS = {
    "/kc": "colony.chat.kc_routes",
    "/prospects": _RECORDS,
    "/deals": _RECORDS,
    "/calls": _RECORDS,
    "/notifications": "colony.chat.notify_routes",
}
# The admins' Setup routes verify the bearer themselves: a refusal, even of the token, is
# recorded as the admin API records it.
_SETUP = "colony.chat.setup_routes"
_SESSION = re.compile(r"^/sessions/([A-Za-z0-9_.:-]{1,200})(/events)?$")
_EXPLAIN = re.compile(r"^/explain/([A-Za-z0-9_.:-]{1,200})$")
_STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_END = object()


def handle(deps: FlowDeps, request: JsonRequest) -> Any:
    path, method = request.path, request.method
    if path == "/overview":
        _allow(method, "GET")
        return page.page(deps.settings.clerk_frontend_api)
    if path in page.SCRIPTS:
        _allow(method, "GET")
        return page.script(page.SCRIPTS[path])
    if path == notify_routes.INTERACTIONS:  # Slack-signed, no bearer
        return notify_routes.interactions(deps, request)
    if path.split("/", 2)[1] == "setup":
        return importlib.import_module(_SETUP).handle(deps, request)
    who = verify_bearer(request.authorization, deps.settings)
    if group := _GROUPS.get("/" + path.split("/", 2)[1]):
        return importlib.import_module(group).handle(deps, who, request)
    if path == "/turns":
        _allow(method, "POST")
        return _turn(deps, who.org_id, who.user_id, request)
    if path == "/sessions":
        _allow(method, "POST")
        return {"session_id": create_session(deps, who.org_id, who.user_id)}, 201
    if path == "/brief":
        _allow(method, "GET")
        return {"brief": today_brief(deps, who.org_id)}
    if path == "/pipeline":
        _allow(method, "GET")
        return pipeline(deps, who.org_id)
    if path == "/campaigns":
        _allow(method, "GET")
        return funnels(deps, who.org_id)
    if path == "/campaigns/events":
        _allow(method, "GET")
        return _funnel_events(deps, who.org_id)
    if path == "/approvals":
        _allow(method, "GET", "POST")
        return _approvals(deps, who.org_id, who.user_id, request)
    if path == "/approvals/events":
        _allow(method, "GET")
        return _approval_events(deps, who.org_id)
    if path == "/audit":
        _allow(method, "GET")
        return _audit(deps, who.org_id, request)
    if path == "/imports":
        _allow(method, "GET")
        return {"imports": recent_imports(deps, who.org_id, limit=5)}
    if path == "/alerts":
        _allow(method, "GET")
        return alerts(deps, who.org_id)
    if path == "/alerts/resume":
        _allow(method, "POST")
        if not is_org_admin(who.claims):  # a person with the authority: the org's admin
            raise Forbidden("resuming sending needs the organisation's admin role")
        asked = request.parse(SendingResume)
        return breaker.resume(deps, who.org_id, asked.kind, asked.target, who.user_id, "ui")
    if path == "/usage":
        _allow(method, "GET")
        return usage_report(deps, who.org_id, request.args.get("month"))
    why = _EXPLAIN.match(path)
    if why:
        _allow(method, "GET")
        return explain(deps, who.org_id, why.group(1))
    match = _SESSION.match(path)
    if match:
        _allow(method, "GET")
        if match.group(2):
            return _follow(deps, who.org_id, match.group(1), request)
        return transcript(deps, who.org_id, match.group(1))
    raise NotFound("there is nothing at this path")


def _allow(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)


def _turn(deps: FlowDeps, org_id: str, user_id: str, request: JsonRequest) -> flask.Response:
    # lazy: the turn (hydration, tools, the model stack) loads with the first one; the page
    # and its views load without it when the instance starts (issue 32 item 4)
    from colony.contracts.chat import TurnRequest
    from colony.flows.chat import run_turn

    body = request.parse(TurnRequest)
    message = check_message(deps, body.message)
    if body.session_id is None:
        session_id = create_session(deps, org_id, user_id)
    else:
        session_id = body.session_id
        require_session(deps, org_id, session_id)
    relay: queue.Queue[Any] = queue.Queue()
    ended = threading.Event()

    def sink(stored: Any) -> None:
        for event in stored:
            relay.put(event)
            if event.type == "done":
                ended.set()

    def work() -> None:
        try:
            run_turn(deps, org_id, user_id, session_id, message, sink=sink)
        except Exception as error:  # persisted events are intact; log, and tell this client
            log.error("chat turn in session %s crashed: %s", session_id, error_summary(error))
            if not ended.is_set():  # the turn could not even record its own end
                relay.put(error_response(error)[0])
        finally:
            relay.put(_END)

    # in a copy of the request's context: the invocation's model window holds for the turn
    turn = contextvars.copy_context()
    threading.Thread(target=turn.run, args=(work,), name="chat-turn", daemon=True).start()

    def stream() -> Iterator[str]:
        yield f"retry: 2000\n: session {session_id}\n\n"
        while True:
            try:
                item = relay.get(timeout=HEARTBEAT_SECONDS)
            except queue.Empty:
                yield ev.sse_comment("waiting")
                continue
            if item is _END:
                return
            if isinstance(item, dict):  # a crash outside the turn's own error handling
                yield f"event: error\ndata: {json.dumps(item)}\n\n"
                continue
            yield item.sse()

    headers = {**_STREAM_HEADERS, "X-Colony-Session": session_id}
    return flask.Response(stream(), mimetype="text/event-stream", headers=headers)


def _follow(deps: FlowDeps, org_id: str, session_id: str, request: JsonRequest) -> flask.Response:
    after = ev.parse_last_event_id(
        [request.headers.get("Last-Event-ID"), request.args.get("after")]
    )
    until = request.args.get("until")
    if until not in (None, "done"):
        raise ValidationFailed("until must be 'done' or absent")
    require_session(deps, org_id, session_id)
    # The pool's own factory (a connection like the pool's, no new client per request).
    hub = hub_for(deps.db.connect)

    def stream() -> Iterator[str]:
        yield "retry: 2000\n\n"
        last = after
        while True:
            with deps.db.transaction(org_id) as cur:
                batch = ev.after(cur, session_id, last)
            for event in batch:
                yield event.sse()
                last = event.seq
                if until == "done" and event.type == "done":
                    return
            if batch:
                continue  # there may be more than one page
            if not hub.wait_past(session_id, last, HEARTBEAT_SECONDS):
                yield ev.sse_comment("keep-alive")

    return flask.Response(stream(), mimetype="text/event-stream", headers=_STREAM_HEADERS)


def _approvals(deps: FlowDeps, org_id: str, user_id: str, request: JsonRequest) -> Any:
    if request.method == "GET":
        kind = request.args.get("kind") or None
        campaign = request.args.get("campaign") or None
        for name, value, most in (("kind", kind, 40), ("campaign", campaign, 200)):
            if value is not None and len(value) > most:
                raise ValidationFailed(f"{name} must be at most {most} characters")
        raw = request.args.get("limit") or str(APPROVALS_SHOWN)
        if not raw.isdigit() or not 1 <= int(raw) <= APPROVALS_MAX:
            raise ValidationFailed(f"limit must be an integer in 1..{APPROVALS_MAX}")
        mine = request.args.get("mine") or "0"
        if mine not in ("0", "1"):
            raise ValidationFailed("mine must be 0 or 1")
        return pending_cards(
            deps,
            org_id,
            kind=kind,
            campaign_id=campaign,
            limit=int(raw),
            detail=True,
            viewer=user_id,
            mine=mine == "1",
        )
    # lazy: deciding (each kind's edit rules and the contracts they check) loads with the
    # first decision; the page, its queue and the audit log load without it (issue 32 item 4)
    from colony.contracts.chat import DecisionRequest
    from colony.flows.approvals.approval import Actor, decide

    body = request.parse(DecisionRequest)
    actor = Actor(user_id, "ui")
    if body.proposal is not None:
        # lazy: the chat's tools load with the first proposal a person confirms (as the turn)
        from colony.flows.chat import proposed

        p = body.proposal
        if body.edited is not None or not proposed(
            deps, org_id, p.session_id, p.call_id, body.item_id, body.action
        ):
            raise ValidationFailed("the proposal does not exist or proposed another decision")
        actor = Actor(user_id, "chat-confirmed")
    return decide(
        deps,
        org_id,
        body.item_id,
        body.action,
        actor=actor,
        edited=body.edited,
        reason=body.reason,
    )


def _approval_events(deps: FlowDeps, org_id: str) -> flask.Response:
    """The queue's live changes: the hub wakes the stream when an item of the org is added or
    decided anywhere; the stream reads those items' state under the org's scope."""
    hub = hub_for(deps.db.connect)
    start = hub.approvals_seq(org_id)

    def stream() -> Iterator[str]:
        yield "retry: 2000\n\n"
        yield _sse("ready", queue_changes(deps, org_id, []))
        last = start
        while True:
            if not hub.wait_items(org_id, last, HEARTBEAT_SECONDS):
                yield ev.sse_comment("keep-alive")
                continue
            ids, last, complete = hub.items_after(org_id, last)
            if not complete:
                yield _sse("reload", {})
                continue
            yield _sse("changed", queue_changes(deps, org_id, ids))

    return flask.Response(stream(), mimetype="text/event-stream", headers=_STREAM_HEADERS)


def _funnel_events(deps: FlowDeps, org_id: str) -> flask.Response:
    """The funnels, live: their counts on connect (so a reconnect starts from the truth), then
    again after each change the hub announces for the org, when the counts differ."""
    hub = hub_for(deps.db.connect)

    def stream() -> Iterator[str]:
        yield "retry: 2000\n\n"
        last = hub.campaigns_seq(org_id)  # before the read: a change during it wakes us
        sent = funnels(deps, org_id)
        yield _sse("funnels", sent)
        while True:
            if not hub.wait_campaigns(org_id, last, HEARTBEAT_SECONDS):
                yield ev.sse_comment("keep-alive")
                continue
            last = hub.campaigns_seq(org_id)
            now = funnels(deps, org_id)
            if now != sent:
                yield _sse("funnels", now)
                sent = now

    return flask.Response(stream(), mimetype="text/event-stream", headers=_STREAM_HEADERS)


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _audit(deps: FlowDeps, org_id: str, request: JsonRequest) -> Any:
    item_id = request.args.get("item_id") or None
    raw = request.args.get("limit") or "50"
    if not raw.isdigit() or not 1 <= int(raw) <= 200:
        raise ValidationFailed("limit must be an integer in 1..200")
    if item_id is not None and len(item_id) > 200:
        raise ValidationFailed("item_id must be at most 200 characters")
    return {"entries": audit_trail(deps, org_id, item_id=item_id, limit=int(raw))}
