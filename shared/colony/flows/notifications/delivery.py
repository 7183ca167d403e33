"""Sending a due notification, once: email through the org's sender path, Slack through the
org's bot (to the person's Slack user) or the person's incoming webhook.

    due (pending, or sending with a lapsed lease) ─► claim: one conditional UPDATE, a lease
        ─► the person left?  ─► dropped        every event's prospect erased? ─► dropped
        ─► email: the org's From address and its domain's verdict (verified: DKIM-signed;
           paused: waits an hour; another org's: failed) ─► Sender.send
        ─► Slack paused for the org? ─► held (until an admin connects it again)
        ─► Slack: chat.postMessage with the bot token, or the person's webhook
        ─► sent  │ 429 / 404 / no answer: again at Retry-After (or a back-off), then failed
                 │ a revoked token: Slack paused for the org, its messages held, and said
                 │ Slack or the mail server refusing for good: failed, and why

A failed or held notification is on the person's list (``GET /notifications``: /overview
shows it), so nothing is dropped silently. An event about a prospect erased after it was
fanned out is left out of what is sent (``erased``), and a notification left with nothing is
dropped. The window where a message can go twice is mail's and Slack's own: a crash between
their acceptance and our commit; the lease then lapses and the retry sends it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from email.utils import parseaddr
from typing import Any

from colony.errors import UpstreamError
from colony.flows.deps import FlowDeps
from colony.flows.notifications import messages
from colony.flows.outbound import sending_domains
from colony.ports import (
    Mail,
    MailRejected,
    Slack,
    SlackMessage,
    SlackRefused,
    SlackRetryLater,
    SlackTokenRevoked,
)
from colony.store.approvals import approvals, routing
from colony.store.insights import briefs
from colony.store.notifications import org, outbox, prefs
from colony.store.tenants import members
from colony.store.tenants import org_admin as org_settings

LEASE_SECONDS = 300
MAX_ATTEMPTS = 4  # then the person is told on /overview
BACKOFF_SECONDS = 60  # doubled per attempt when Slack names no Retry-After
PAUSED_DOMAIN_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A claimed notification, ready to leave: by ``mail`` or by ``slack`` (to ``channel``
    with the bot ``token_secret``, or through the ``webhook_secret``)."""

    notification_id: int
    kind: str
    attempts: int
    budget_alerts: tuple[int, ...]
    mail: Mail | None = None
    dkim_verdict: Any = None
    slack: SlackMessage | None = None
    channel: str | None = None
    token_secret: str | None = None
    webhook_secret: str | None = None


def deliver_due(
    deps: FlowDeps, slack: Slack, org_id: str, now: datetime, limit: int = 500
) -> dict[str, int]:
    """Send every notification of the org due by ``now``; counts per outcome."""
    with deps.db.transaction(org_id) as cur:
        due = outbox.due(cur, now, limit)
    counts: dict[str, int] = {}
    for notification_id in due:
        outcome = deliver(deps, slack, org_id, notification_id, now)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def deliver(deps: FlowDeps, slack: Slack, org_id: str, notification_id: int, now: datetime) -> str:
    """Claim, send and mark one notification; its outcome."""
    with deps.db.transaction(org_id) as cur:
        claimed = outbox.claim(cur, notification_id, now, now + timedelta(seconds=LEASE_SECONDS))
        if claimed is None:  # another run has it, or it was held or finished meanwhile
            return "skipped"
        ready = _prepare(deps, cur, org_id, claimed, now)
    if isinstance(ready, str):
        return ready
    try:
        _send(deps, slack, ready)
    except SlackTokenRevoked as error:
        reason = f"Slack is paused for the org: {error} — an admin must connect Slack again"
        with deps.db.transaction(org_id) as cur:
            org.pause_slack(cur, now, reason)
            outbox.hold_slack(cur, reason)
        return "held"
    except SlackRetryLater as error:
        return _later(deps, org_id, ready, now, str(error), error.retry_after)
    except (SlackRefused, MailRejected) as error:
        _finish(deps, org_id, ready.notification_id, "failed", now, str(error))
        return "failed"
    except UpstreamError as error:  # the mail relay for now; Slack's are above
        return _later(deps, org_id, ready, now, str(error), None)
    with deps.db.transaction(org_id) as cur:
        outbox.finish(cur, ready.notification_id, "sent", now)
        outbox.budget_delivered(cur, ready.budget_alerts, now)
    return "sent"


def _later(
    deps: FlowDeps, org_id: str, ready: Outgoing, now: datetime, why: str, wait: float | None
) -> str:
    if ready.attempts >= MAX_ATTEMPTS:
        told = f"gave up after {ready.attempts} attempts: {why}"
        _finish(deps, org_id, ready.notification_id, "failed", now, told)
        return "failed"
    seconds = wait if wait is not None else BACKOFF_SECONDS * 2 ** (ready.attempts - 1)
    with deps.db.transaction(org_id) as cur:
        outbox.retry(cur, ready.notification_id, now + timedelta(seconds=seconds), why)
    return "retry"


def _finish(
    deps: FlowDeps, org_id: str, notification_id: int, status: str, now: datetime, why: str
) -> None:
    with deps.db.transaction(org_id) as cur:
        outbox.finish(cur, notification_id, status, now, why)


def _send(deps: FlowDeps, slack: Slack, ready: Outgoing) -> None:
    if ready.mail is not None:
        mail = ready.mail
        if ready.dkim_verdict is not None:
            key = sending_domains.signing_key(deps.secrets, ready.dkim_verdict)
            mail = replace(mail, dkim=key)
        deps.sender.send(mail)
        return
    assert ready.slack is not None
    if ready.token_secret is not None and ready.channel is not None:
        slack.post(deps.secrets.get(ready.token_secret), ready.channel, ready.slack)
    else:
        assert ready.webhook_secret is not None
        slack.post_webhook(deps.secrets.get(ready.webhook_secret), ready.slack)


def _prepare(
    deps: FlowDeps, cur: Any, org_id: str, claimed: Mapping[str, Any], now: datetime
) -> Outgoing | str:
    """What to send for a claimed notification, or the outcome that ends it here."""
    nid, user_id = int(claimed["id"]), str(claimed["user_id"])
    person = members.get(cur, user_id)
    if person is None or not person.active:
        outbox.finish(cur, nid, "dropped", now, "the person left the org")
        return "dropped"
    carried = outbox.content(cur, nid)
    live = [e for e in carried if not e["erased"]]
    if not live:
        outbox.finish(cur, nid, "dropped", now, "nothing left to tell (erased)")
        return "dropped"
    base = deps.settings.function_urls.get("chat", "")
    kind, attempts = str(claimed["kind"]), int(claimed["attempts"])
    # a budget event is keyed by its alert's id (migration 0054's trigger)
    alerts = tuple(
        int(e["event_key"]) for e in live if e["kind"] == "budget" and e["event_key"].isdigit()
    )
    common: dict[str, Any] = {
        "notification_id": nid,
        "kind": kind,
        "attempts": attempts,
        "budget_alerts": alerts,
    }
    brief = _brief_lines(cur, user_id, live[0]) if kind == "brief" else None
    if claimed["channel"] == "email":
        return _email(deps, cur, org_id, person, base, live, brief, now, common)
    settings = org.get(cur)
    if settings is not None and settings["slack_paused_at"] is not None:
        outbox.finish(cur, nid, "held", now, settings["slack_pause_reason"])
        return "held"
    identity = prefs.slack_of(cur, user_id)
    if brief is not None:
        message = messages.slack_brief(base, str(live[0]["event_key"]), brief)
    else:
        message = messages.slack_event(base, org_id, live[0], buttons=kind == "items_waiting")
    if (
        settings is not None
        and settings["slack_token_secret"]
        and identity
        and identity["slack_user_id"]
    ):
        return Outgoing(
            **common,
            slack=message,
            channel=str(identity["slack_user_id"]),
            token_secret=str(settings["slack_token_secret"]),
        )
    if identity and identity["webhook_secret"]:
        return Outgoing(**common, slack=message, webhook_secret=str(identity["webhook_secret"]))
    why = "Slack cannot reach you: set your Slack member id (or a webhook) in your settings"
    outbox.finish(cur, nid, "failed", now, why)
    return "failed"


def _brief_lines(cur: Any, user_id: str, event: Mapping[str, Any]) -> list[str]:
    # the person's own queue first (routed to them, or to the admins they are one of), then
    # the org's
    waiting = approvals.pending_count(cur)
    mine = routing.waiting_for(cur, user_id)
    latest = briefs.latest(cur)
    return messages.brief_lines(mine, waiting, latest["data_snapshot"] if latest else None)


def _email(
    deps: FlowDeps,
    cur: Any,
    org_id: str,
    person: members.Member,
    base: str,
    live: Sequence[Mapping[str, Any]],
    brief: list[str] | None,
    now: datetime,
    common: dict[str, Any],
) -> Outgoing | str:
    nid = common["notification_id"]
    if not person.email:
        outbox.finish(cur, nid, "failed", now, "no email address for you in the org")
        return "failed"
    limits = org_settings.settings(cur)
    mail_from = (limits["mail_from"] if limits else None) or deps.settings.mail_from
    verdict = sending_domains.sender(cur, org_id, mail_from, deps.settings.sending_domains)
    if verdict.action == "refuse":
        outbox.finish(cur, nid, "failed", now, f"refused: {verdict.reason}")
        return "failed"
    if verdict.action == "wait":  # the org's domain is paused: the digest waits with it
        outbox.retry(cur, nid, now + timedelta(seconds=PAUSED_DOMAIN_SECONDS), verdict.reason)
        return "retry"
    if brief is not None:
        subject, text = messages.brief_email(base, str(live[0]["event_key"]), brief)
    else:
        subject, text = messages.digest_email(base, live)
    domain = parseaddr(mail_from)[1].rpartition("@")[2] or "colony.invalid"
    tag = hashlib.sha256(org_id.encode()).hexdigest()[:12]
    mail = Mail(
        message_id=f"<notify-{nid}.{tag}@{domain}>",
        sender=mail_from,
        to=person.email,
        subject=subject,
        text=text,
        tags={"org_id": org_id, "notification_id": str(nid)},
    )
    return Outgoing(**common, mail=mail, dkim_verdict=verdict if verdict.action == "sign" else None)
