"""Cloud Scheduler jobs: one per kind of recurring work, however many orgs there are.

A job does not name an org. It posts ``{"task": {"kind": "schedule", "name": ...}}`` to the
``data-lifecycle`` function, which lists the orgs the schedule serves a page at a time and
puts one task per org on the schedule's queue (``colony.flows.tenants.schedules``). An org created
through the Clerk webhook is therefore served from its first day, with no terraform change,
and an org being erased is served no more. A ``deployment`` schedule (the reply mailbox) gets
one task for the whole deployment.

``terraform/scheduler.tf`` creates one job per entry (through the generated
``registry.auto.tfvars.json``); ``schedule_overrides`` may change a cron or time zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from colony.errors import ValidationFailed
from colony.registry.functions import (
    CAMPAIGN_RESUME_QUEUE,
    CRM_QUEUE,
    DAILY_BRIEF_QUEUE,
    LIFECYCLE_QUEUE,
    NOTION_REEMBED_QUEUE,
    SEND_QUEUE,
)

# Which orgs a schedule serves: every live org, those with a connected Notion workspace,
# those with an active Drive channel, those with a sending domain that passed its DNS check
# once, those with a stalled research pass, those with campaign work held by a spent budget,
# those whose daily brief is due in their own time zone, those with an approval item undecided
# past their escalation window, those with a notification to fan out or send or a brief to
# deliver, those with a connected CRM (HubSpot), or none (one task for the deployment).
Serves = Literal[
    "orgs",
    "notion",
    "drive",
    "sending_domains",
    "research",
    "held",
    "brief_due",
    "escalation",
    "notify",
    "crm",
    "deployment",
]


@dataclass(frozen=True, slots=True)
class Schedule:
    name: str  # the job id's suffix, and what the fan-out is asked to run
    cron: str  # unix-cron, in ``time_zone``
    queue: str  # where each org's task goes (its target function does the work)
    serves: Serves
    purpose: str
    time_zone: str = "Etc/UTC"


SCHEDULES: dict[str, Schedule] = {
    s.name: s
    for s in (
        # every hour, the orgs whose local brief time has passed and whose brief for their
        # local day is not written (issue 35: the brief is the team's morning, not UTC's)
        Schedule(
            "daily-brief",
            "0 * * * *",
            DAILY_BRIEF_QUEUE,
            "brief_due",
            "AGT-010's daily brief, at each org's local brief time",
        ),
        # an item left undecided past the org's window goes to its named backup
        Schedule(
            "approval-escalation",
            "*/15 * * * *",
            LIFECYCLE_QUEUE,
            "escalation",
            "approval items undecided past the org's window escalated to its backup",
        ),
        Schedule(
            "retention",
            "30 3 * * *",
            LIFECYCLE_QUEUE,
            "orgs",
            "each org's data classes expired past its retention periods",
        ),
        Schedule(
            "notion-reconcile",
            "15 4 * * *",
            NOTION_REEMBED_QUEUE,
            "notion",
            "connected Notion workspaces compared with what was synced (missed webhooks)",
        ),
        # a watch channel lives at most a day: every 4 hours, those expiring within 12 hours
        # get a successor before they are stopped
        Schedule(
            "drive-renew",
            "0 */4 * * *",
            LIFECYCLE_QUEUE,
            "drive",
            "Drive watch channels renewed before they expire",
        ),
        # a research pass whose tasks were lost (retries spent, a queue purged) would wait for
        # the next request for its company; its contacts cannot wait that long
        Schedule(
            "research-sweep",
            "20 * * * *",
            LIFECYCLE_QUEUE,
            "research",
            "research passes no task has touched for half an hour, woken",
        ),
        # a domain that passed once and broke since (a record removed, a key replaced) pauses
        # its mail until it passes again (colony.flows.outbound.sending_domains)
        Schedule(
            "domain-check",
            "45 5 * * *",
            LIFECYCLE_QUEUE,
            "sending_domains",
            "each org's sending domains checked again in DNS (SPF, DKIM, DMARC)",
        ),
        # just after midnight UTC, so on the 1st the month has turned: an org whose budget
        # allows campaign work again (a new month, or a raise that queued no release) has
        # what it held published again (colony.flows.tenants.budget)
        Schedule(
            "budget-release",
            "5 0 * * *",
            CAMPAIGN_RESUME_QUEUE,
            "held",
            "campaign work held by a spent budget resumed once the budget allows it",
        ),
        # each minute, the orgs with an event to tell, a notification due or a brief whose
        # local time has come (migration 0054's audience): the median event waits about
        # half a minute (colony.flows.notifications; bench/notify.py measures it)
        Schedule(
            "notify",
            "* * * * *",
            SEND_QUEUE,
            "notify",
            "notifications fanned out and sent, and the brief at each org's local time",
        ),
        # HubSpot's webhooks are at-least-once but not always: what they missed (a delivery
        # HubSpot gave up on, events kept while the connection was paused) is found by
        # searching what changed since the last run (colony.flows.crm.reconcile)
        Schedule(
            "crm-reconcile",
            "50 4 * * *",
            CRM_QUEUE,
            "crm",
            "each connected HubSpot searched for what changed since the last sync",
        ),
        # an SMTP relay's replies land in one mailbox (COLONY_REPLY_MAILBOX_*); each reply
        # names the message, and so the org, it answers
        Schedule(
            "replies-poll",
            "*/5 * * * *",
            LIFECYCLE_QUEUE,
            "deployment",
            "the reply mailbox read for replies that stop sequences",
        ),
    )
}


def schedule(name: str) -> Schedule:
    try:
        return SCHEDULES[name]
    except KeyError:
        raise ValidationFailed(
            f"unknown schedule {name!r}; known: {', '.join(sorted(SCHEDULES))}"
        ) from None
