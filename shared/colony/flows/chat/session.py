"""Chat sessions as the HTTP edge needs them before and around a turn.

Creating a session, checking that one exists in the caller's org, vetting a message before
its stream starts, the transcript the /overview page loads and today's daily brief (with
its five sections). None of this takes the session lock or calls a model, so it is apart
from the turn.
"""

from __future__ import annotations

from typing import Any

from colony.errors import NotFound, ValidationFailed
from colony.flows.chat import history
from colony.flows.chat.history import AGENT
from colony.flows.deps import FlowDeps
from colony.flows.insights.brief_text import sections_of
from colony.store import chat as chat_store
from colony.store import chat_events


class EmptyMessage(ValidationFailed):
    code = "empty_message"


class MessageTooLong(ValidationFailed):
    code = "message_too_long"


def create_session(deps: FlowDeps, org_id: str, user_id: str) -> str:
    with deps.db.transaction(org_id) as cur:
        return chat_store.create_session(cur, org_id, user_id)


def require_session(deps: FlowDeps, org_id: str, session_id: str) -> None:
    """NotFound unless the session exists in this org (RLS hides every other org's)."""
    with deps.db.transaction(org_id) as cur:
        if not chat_store.session_exists(cur, session_id):
            raise NotFound(f"chat session {session_id!r} does not exist in this org")


def check_message(deps: FlowDeps, message: str) -> str:
    """The message, stripped; empty or over AGT-001's task budget is a caller error."""
    text = message.strip()
    if not text:
        raise EmptyMessage("the message is empty; type something to ask")
    if "\x00" in text:  # PostgreSQL text cannot hold it: refuse before the stream starts
        raise ValidationFailed("the message contains a NUL character")
    limit = deps.llm.budgets.for_profile(AGENT).task
    used = deps.llm.counter.count(text)
    if used > limit:
        raise MessageTooLong(f"the message is {used} tokens; the limit is {limit}")
    return text


def transcript(deps: FlowDeps, org_id: str, session_id: str) -> dict[str, Any]:
    """The session as the page shows it on load: its turns and the last event id."""
    with deps.db.transaction(org_id) as cur:
        if not chat_store.session_exists(cur, session_id):
            raise NotFound(f"chat session {session_id!r} does not exist in this org")
        rows = history.load(cur, session_id)
        last = chat_events.last_seq(cur, session_id) or 0
    turns = [
        {"id": r.id, "role": r.role, "content": r.content, "tool_call": r.tool_call} for r in rows
    ]
    return {"session_id": session_id, "last_event_id": last, "turns": turns}


def today_brief(deps: FlowDeps, org_id: str) -> dict[str, Any] | None:
    with deps.db.transaction(org_id) as cur:
        row = chat_store.brief_on(cur, deps.clock().date())
    if row is None:
        return None
    return {
        "date": row["brief_date"].isoformat(),
        "content": row["content"],
        "sections": sections_of(str(row["content"]), row["sections"]),
    }
