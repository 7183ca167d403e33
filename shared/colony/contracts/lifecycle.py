"""What the data-lifecycle function is asked to do, and what the admin API accepts.

- ``ErasureTask``: the Cloud Tasks body that runs (or resumes) one erasure job;
- ``RetentionRun``: the Cloud Scheduler body that enforces one org's retention today;
- ``ImportTask``: the Cloud Tasks body that runs (or resumes) one import job;
- ``KcTierTask``: the Cloud Tasks body that moves one org's Knowledge Core to its own
  partition (``colony.knowledge.tiering``);
- ``RetentionUpdate``: an admin's new retention periods, in days per data class.
"""

from __future__ import annotations

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
    """Cloud Scheduler, every few hours per org: renew its Drive channels before they expire."""

    kind: Literal["drive.renew"] = "drive.renew"
    org_id: str = Field(min_length=1, max_length=200)


class ImportTask(Strict):
    kind: Literal["import"] = "import"
    org_id: str = Field(min_length=1, max_length=200)
    job_id: str = Field(min_length=1, max_length=200)


class KcTierTask(Strict):
    kind: Literal["kc.tier"] = "kc.tier"
    org_id: str = Field(min_length=1, max_length=200)


LifecycleTask = Annotated[
    ErasureTask | RetentionRun | DriveRenewal | ImportTask | KcTierTask,
    Field(discriminator="kind"),
]


class LifecycleBody(Strict):
    """The data-lifecycle function's one body shape: ``{"task": {"kind": ...}}``."""

    task: LifecycleTask


class RetentionUpdate(Strict):
    days: dict[DataClass, int] = Field(min_length=1)
