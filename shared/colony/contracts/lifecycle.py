"""What the data-lifecycle function is asked to do, and what the admin API accepts.

- ``ErasureTask``: the Cloud Tasks body that runs (or resumes) one erasure job;
- ``RetentionRun``: the task that enforces one org's retention today (the daily schedule's
  share for that org);
- ``ImportTask``: the Cloud Tasks body that runs (or resumes) one import job;
- ``ScheduleRun``: a Cloud Scheduler job's body (and its next page's task): fan a schedule
  out to the orgs it serves (``colony.flows.tenants.schedules``);
- ``RepliesPoll``: read the deployment's reply mailbox once;
- ``ResearchSweep``: wake one org's research passes whose tasks were lost;
- ``DomainCheck``: check one org's sending domains in DNS again (the daily schedule's share);
- ``KcTierTask``: the Cloud Tasks body that moves one org's Knowledge Core to its own
  partition (``colony.knowledge.tiering``);
- ``RetentionUpdate``: an admin's new retention periods, in days per data class.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from colony.contracts.common import Strict

DataClass = Literal["transcripts", "chat_events", "llm_calls", "outbox_bodies"]


class ErasureTask(Strict):
    kind: Literal["erasure"] = "erasure"
    job_id: str = Field(min_length=1, max_length=200)


class RetentionRun(Strict):
    kind: Literal["retention"] = "retention"
    org_id: str = Field(min_length=1, max_length=200)


class DriveRenewal(Strict):
    """One org's share of the ``drive-renew`` schedule: renew its channels before they expire."""

    kind: Literal["drive.renew"] = "drive.renew"
    org_id: str = Field(min_length=1, max_length=200)


class ResearchSweep(Strict):
    """One org's share of the ``research-sweep`` schedule: its stalled research passes woken."""

    kind: Literal["research.sweep"] = "research.sweep"
    org_id: str = Field(min_length=1, max_length=200)


class ImportTask(Strict):
    kind: Literal["import"] = "import"
    org_id: str = Field(min_length=1, max_length=200)
    job_id: str = Field(min_length=1, max_length=200)


# colony.registry.schedules.SCHEDULES by name (tests/test_schedules.py holds the two equal)
ScheduleName = Literal[
    "daily-brief",
    "retention",
    "notion-reconcile",
    "drive-renew",
    "budget-release",
    "domain-check",
    "replies-poll",
    "research-sweep",
    "approval-escalation",
    "notify",
    "crm-reconcile",
]


class ScheduleRun(Strict):
    """Cloud Scheduler posts ``name`` alone; a page's continuation task carries the run's
    ``slot`` (its scheduled time) and the last org id the previous page reached."""

    kind: Literal["schedule"] = "schedule"
    name: ScheduleName
    slot: datetime | None = None
    after: str | None = Field(default=None, min_length=1, max_length=200)


class RepliesPoll(Strict):
    kind: Literal["replies.poll"] = "replies.poll"


class DomainCheck(Strict):
    """One org's share of the ``domain-check`` schedule: its sending domains checked again."""

    kind: Literal["domains.check"] = "domains.check"
    org_id: str = Field(min_length=1, max_length=200)


class EscalationRun(Strict):
    """One org's share of the ``approval-escalation`` schedule: its overdue items escalated
    to its backup (``colony.flows.approvals.escalation``)."""

    kind: Literal["approvals.escalate"] = "approvals.escalate"
    org_id: str = Field(min_length=1, max_length=200)


class KcTierTask(Strict):
    kind: Literal["kc.tier"] = "kc.tier"
    org_id: str = Field(min_length=1, max_length=200)


LifecycleTask = Annotated[
    ErasureTask
    | RetentionRun
    | DriveRenewal
    | ResearchSweep
    | ImportTask
    | ScheduleRun
    | RepliesPoll
    | KcTierTask
    | DomainCheck
    | EscalationRun,
    Field(discriminator="kind"),
]


class LifecycleBody(Strict):
    """The data-lifecycle function's one body shape: ``{"task": {"kind": ...}}``."""

    task: LifecycleTask


class RetentionUpdate(Strict):
    days: dict[DataClass, int] = Field(min_length=1)
