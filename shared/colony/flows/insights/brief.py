"""Flow 6, the daily brief (AGT-010; SPEC §6.6; seed §5.5, §7.6).

    the daily-brief schedule's task ─► SQL aggregates (the numbers, never the LLM's)
        ─► the prior brief for continuity ─► AGT-010 ─► ≤250 words, five sections ─► ENT-009

One brief per org and day (``daily_briefs`` is unique on both): a second run the same day
returns the stored brief without calling the model, and two racing runs store one. Days are
the org's own (issue 35 item 4: its time zone, ``org_team``, UTC when it set none): "today"
is the date there now, and "yesterday" is the local day before the brief's day, from local
midnight to local midnight (``colony.policy.local_day``), 23 or 25 hours across a
daylight-saving change. The hourly ``daily-brief`` schedule asks for the brief of each org
whose local brief time has passed and whose brief for its local day is not written.

What the numbers mean (each one SQL aggregate in ``colony.store.insights.briefs``):
- pipeline: deals by stage, now;
- queue: approval items pending, now;
- messages sent: outbox rows created yesterday that left the outbox (any status past
  ``queued`` / ``blocked``); bounce and reply rates are over those messages (0 when none);
- content published: content pieces whose approval published them yesterday;
- circuit breaker: ``open`` while any campaign is paused by it, else ``closed``;
- replies: replies received yesterday, and how many of them read as positive / negative
  (``colony.policy.replies``). The replies themselves (who, to what, their own text) go to
  AGT-010 as entity data (``recent_replies``): untrusted text, inside a data block, never in
  the snapshot that is stored as the brief's numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from colony.context.assembler import AssemblyRequest
from colony.contracts import IcpDefinition, OrgContext
from colony.contracts.outputs.documents import DailyBrief
from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.insights.brief_text import render, word_count
from colony.knowledge.exemplars import to_exemplars
from colony.llm.agent_call import call_agent
from colony.policy import local_day
from colony.ports import Message
from colony.store import orgdata
from colony.store.approvals import approvals
from colony.store.insights import briefs
from colony.store.outbound import replies
from colony.store.tenants import team

AGENT = "AGT-010"
MAX_WORDS = 250


def day_window(day: date, zone: str | None = None) -> tuple[datetime, datetime]:
    """Yesterday relative to ``day`` in ``zone`` (None: UTC): [its local midnight, the next
    local midnight), as UTC instants."""
    return local_day.yesterday(day, zone)


def snapshot(cur: Any, day: date, zone: str | None = None) -> dict[str, Any]:
    """The brief's numbers, every one computed by SQL inside the org's transaction, over the
    org's local yesterday."""
    start, end = day_window(day, zone)
    stages = briefs.deals_by_stage(cur)
    queue = approvals.pending_count(cur)
    sent = briefs.messages_sent(cur, start, end)
    published = briefs.content_published(cur, start, end)
    n_paused = briefs.paused_campaigns(cur)
    n_sent = int(sent["sent"])
    answered = replies.counts(cur, start, end)
    return {
        "deals_by_stage": stages,
        "approval_queue_count": queue,
        "messages_sent": n_sent,
        "content_published": published,
        "circuit_breaker": (
            f"open ({n_paused} campaign{'s' if n_paused != 1 else ''} paused)"
            if n_paused
            else "closed"
        ),
        "bounce_rate": round(int(sent["bounced"]) / n_sent, 4) if n_sent else 0.0,
        "reply_rate": round(int(sent["replied"]) / n_sent, 4) if n_sent else 0.0,
        "replies_received": int(answered["replies"]),
        "replies_positive": int(answered["positive"]),
        "replies_negative": int(answered["negative"]),
    }


RECENT_REPLIES = 5
REPLY_CHARS = 300  # each reply's own text, clipped: the brief needs the gist, not the thread


def recent_replies(cur: Any, day: date, zone: str | None = None) -> list[dict[str, Any]]:
    """Yesterday's replies as entity data: who, to which message, the sentiment, the text."""
    start, _ = day_window(day, zone)
    return [
        {
            "from": r["name"] or "a contact",
            "re": r["subject"],
            "sentiment": r["sentiment"],
            "text": str(r["body"])[:REPLY_CHARS],
        }
        for r in replies.recent(cur, start, RECENT_REPLIES)
    ]


def daily_brief(deps: FlowDeps, org_id: str, day: date | None = None) -> dict[str, Any]:
    """The org's brief for ``day`` (default: today in the org's time zone), generated once
    and then stored.

    Raises ``NotFound`` for an org with no record, ``ValidationFailed`` for a day after today
    (its numbers would be today's, stored under a day that has not happened, and returned
    forever after). An org with no activity still gets a brief: zeros, and it says so.
    """
    with deps.db.transaction(org_id) as cur:
        if not orgdata.org_exists(cur, org_id):
            raise NotFound(f"organization {org_id!r} has no record; there is nothing to brief")
        zone = str(team.get(cur)["time_zone"])
        today = local_day.local_date(deps.clock(), zone)
        day = day or today
        if day > today:
            raise ValidationFailed(
                f"brief_date {day.isoformat()} is after today ({today.isoformat()} in {zone});"
                " a brief is written on or after its day"
            )
        stored = briefs.stored(cur, day)
        if stored is not None:
            return _result(stored, created=False)
        data = snapshot(cur, day, zone)
        answered = recent_replies(cur, day, zone)
        prior = briefs.prior(cur, day)
        icp = orgdata.active_icp(cur)
        name = orgdata.org_name(cur)

    sections, call_id = _generate(deps, org_id, day, data, prior, icp, name, answered)
    content = render(sections)
    with deps.db.transaction(org_id) as cur:
        inserted = briefs.store(cur, org_id, day, content, sections, data, call_id)
        stored = briefs.stored(cur, day)
    assert stored is not None
    return _result(stored, created=inserted)


def _generate(
    deps: FlowDeps,
    org_id: str,
    day: date,
    data: Mapping[str, Any],
    prior: Mapping[str, Any] | None,
    icp: Mapping[str, Any] | None,
    name: str | None,
    answered: list[dict[str, Any]],
) -> tuple[dict[str, str], str | None]:
    """The brief's sections, and the id of the model call that wrote them."""
    prior_text = str(prior["content"]) if prior else None
    history = (
        [
            Message(
                "assistant",
                f"Yesterday's brief ({prior['brief_date']}): {prior_text}",
                name="summary",
            )
        ]
        if prior
        else [Message("assistant", "Yesterday's brief: none on record.", name="summary")]
    )
    hits = deps.knowledge.retrieve(org_id, "product positioning summary", ("KC-01",), 1)
    request = AssemblyRequest(
        AGENT,
        org_id,
        f"brief:{day.isoformat()}",
        OrgContext(org_name=name, icp=IcpDefinition(**icp) if icp else None),
        to_exemplars(hits, top=1),
        {"data_snapshot": dict(data), "recent_replies": answered or "(no replies yesterday)"},
        history,
        {"brief_date": day.isoformat()},
        kc_queried=tuple(hits),
        brief_id=str(prior["id"]) if prior else None,  # the brief this one continues
    )

    def fits(brief: DailyBrief) -> list[str]:
        words = word_count(render(brief.model_dump()))
        if words <= MAX_WORDS:
            return []
        return [f"the brief has {words} words with its headings; the limit is {MAX_WORDS}"]

    result = call_agent(deps.llm, request, check=fits)
    assert isinstance(result.output, DailyBrief)
    sections = {key: str(value) for key, value in result.output.model_dump().items()}
    return sections, result.call_id or None


def _result(row: Mapping[str, Any], *, created: bool) -> dict[str, Any]:
    return {
        "id": row["id"],  # what ``colony explain`` takes to show the call that wrote it
        "brief_date": row["brief_date"].isoformat(),
        "created": created,
        "content": row["content"],
        "sections": row["sections"],
        "data_snapshot": row["data_snapshot"],
    }
