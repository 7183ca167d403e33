"""The re-embed worker's task bodies (Cloud Tasks, OIDC-verified): one page's re-embed from
the Notion webhook, one step of a backfill or reconciliation run, and one org's share of the
daily reconciliation; ``NotionTaskBody`` tells them apart by ``kind``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, RootModel

from colony.contracts.common import ID, Strict

NotionDomain = Literal["KC-01", "KC-02", "KC-03", "KC-04", "KC-05", "KC-06", "KC-07"]


class NotionReembed(Strict):
    """The Cloud Tasks body of one re-embed job: sync one Notion page into its KC domain.

    Not a Pub/Sub event (not in ``Event``); the webhook resolved the org from its
    configuration, so the worker trusts only its OIDC-verified caller, never a user.
    ``domain`` is what the event's parent mapped to (None: unmapped, e.g. the page moved out
    of a mapped database); the worker maps the page by its parent as it is NOW, so a page
    that moved is moved or removed, whatever the event said.
    """

    kind: Literal["notion.reembed"] = "notion.reembed"
    org_id: str = ID
    workspace_id: str = Field(min_length=1, max_length=100)
    page_id: str = Field(min_length=1, max_length=64)
    domain: NotionDomain | None = None
    edited_time: str = Field(min_length=1, max_length=64)


class NotionSyncStep(Strict):
    """The Cloud Tasks body of one step of a backfill or reconciliation run
    (``flows.knowledge.notion_backfill``): one page of one mapped database. ``step`` must be the
    run's current step (its checkpoint in ``notion_syncs``); any other is a stale duplicate."""

    kind: Literal["notion.sync"] = "notion.sync"
    org_id: str = ID
    workspace_id: str = Field(min_length=1, max_length=100)
    sync_id: str = ID
    step: int = Field(ge=0)


class NotionReconcile(Strict):
    """One org's share of the daily ``notion-reconcile`` schedule (a Cloud Tasks body, from
    ``colony.flows.tenants.schedules``): start the day's reconciliation run of each of the org's
    connected workspaces."""

    kind: Literal["notion.reconcile"] = "notion.reconcile"
    org_id: str = ID


NotionTask = Annotated[
    NotionReembed | NotionSyncStep | NotionReconcile, Field(discriminator="kind")
]


class NotionTaskBody(RootModel[NotionTask]):
    """What the re-embed worker accepts: one of the three, told apart by ``kind`` (built on
    first use, as every contract is: ``Strict``)."""

    model_config = ConfigDict(defer_build=True)
