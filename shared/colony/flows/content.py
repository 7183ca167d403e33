"""AGT-008 content (SPEC §4): one marketing piece per request, grounded in KC-01/05/07, into
the approval queue; publishing it takes an approved ``content_piece`` item (CONST-001).

    content.request ─► retrieve KC-01 product, KC-05 proof points, KC-07 brand voice
        ─► AGT-008 ─► no competitor named ─► ENT-011 content_piece ─(approved)─► published

The piece is a durable step keyed by the request id, so a redelivered event, or the same
request sent twice, queues one item and calls the model once. No grounding material at all
is a clear error (CONST-004), never an ungrounded piece.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from colony.context.assembler import AssemblyRequest
from colony.contracts import IcpDefinition, OrgContext
from colony.contracts.events import ContentRequest
from colony.contracts.outputs.documents import ContentPiece
from colony.errors import ValidationFailed
from colony.flows import call_link
from colony.flows.approvals import flags
from colony.flows.deps import FlowDeps
from colony.flows.tenants import org_admin
from colony.knowledge.exemplars import to_exemplars
from colony.llm.agent_call import call_agent
from colony.policy.outbound import competitor_mentions
from colony.registry.functions import CONTENT_TOPIC
from colony.runtime import idempotency
from colony.runtime.steps import step
from colony.runtime.transport import publish
from colony.store import content as published_content
from colony.store import orgdata
from colony.store.approvals import approvals

AGENT = "AGT-008"
HANDLER = "content"
GROUNDING = ("KC-01", "KC-05", "KC-07")
PER_DOMAIN = 2
DEFAULT_COMPETITORS = org_admin.DEFAULT_COMPETITORS


def request_content(deps: FlowDeps, org_id: str, topic: str, piece_format: str) -> str:
    """Publish a content request (the orchestrator's tool); returns its request id."""
    event = ContentRequest(
        org_id=org_id,
        request_id=f"content-{uuid.uuid4().hex[:16]}",
        topic=topic,
        format=piece_format,  # type: ignore[arg-type]  # validated by the model
    )
    publish(deps.transport, CONTENT_TOPIC, event)
    return event.request_id


def write_piece(deps: FlowDeps, event: ContentRequest, event_id: str) -> dict[str, Any]:
    org = event.org_id
    if idempotency.seen(deps.db, org, HANDLER, event_id):
        return {"duplicate": True}
    run_id = f"content:{event.request_id}"
    competitors = org_admin.competitors(deps, org, DEFAULT_COMPETITORS)

    def compute() -> dict[str, Any]:
        hits = deps.knowledge.retrieve(org, event.topic, GROUNDING, PER_DOMAIN)
        exemplars = to_exemplars(hits)
        if not exemplars:
            raise ValidationFailed(
                "no Knowledge Core material in KC-01, KC-05 or KC-07 to ground a content piece"
            )
        with deps.db.transaction(org) as cur:
            icp = orgdata.active_icp(cur)
            name = orgdata.org_name(cur)
        org_context = OrgContext(org_name=name, icp=IcpDefinition(**icp) if icp else None)
        request = AssemblyRequest(
            AGENT,
            org,
            run_id,
            org_context,
            exemplars,
            {},
            (),
            # the competitor list is in the prompt: a model can only avoid names it is given
            {"format": event.format, "topic": event.topic, "competitors": list(competitors)},
            kc_queried=tuple(hits),
        )

        def no_competitor(piece: ContentPiece) -> list[str]:
            named = competitor_mentions(f"{piece.title}\n{piece.body}", competitors)
            return [f"the piece names a competitor: {', '.join(named)}"] if named else []

        result = call_agent(deps.llm, request, check=no_competitor)
        assert isinstance(result.output, ContentPiece)
        grounding = [{"domain": e.domain, "title": e.title} for e in exemplars]
        piece = result.output.model_dump(mode="json")
        return call_link.carry(
            flags.flagged(
                {**piece, "topic": event.topic, "grounding": grounding},
                flags.of_draft(result, piece),
            ),
            result,
        )

    def queue(cur: Any, stored: Mapping[str, Any]) -> None:
        output, call_id = call_link.take(stored)
        approvals.add(
            cur,
            org,
            "content_piece",
            AGENT,
            output,
            subject_id=event.request_id,
            run_id=run_id,
            call_id=call_id,
        )

    piece = step(deps.db, org, run_id, "piece", compute, queue)
    idempotency.mark(deps.db, org, HANDLER, event_id)
    return {"request_id": event.request_id, "title": piece["title"], "format": piece["format"]}


def queued_item(deps: FlowDeps, org_id: str, request_id: str) -> dict[str, Any] | None:
    """The approval item a content request queued (None until it has)."""
    with deps.db.transaction(org_id) as cur:
        return approvals.by_run(cur, f"content:{request_id}", "content_piece")


def apply_content_piece(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """Approved (possibly edited) piece → published; once per item (the daily brief counts
    it as content published)."""
    try:
        piece = ContentPiece.model_validate(
            {k: payload.get(k) for k in ("title", "format", "body")}
        )
    except ValidationError as error:
        raise ValidationFailed(
            f"the content piece is not publishable: {error.error_count()} "
            "invalid field(s) among title, format, body"
        ) from None
    published_content.publish(
        cur, org_id, item_id, title=piece.title, piece_format=piece.format, body=piece.body
    )


def content_event(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """The ``content`` function's Pub/Sub handler."""
    if not isinstance(event, ContentRequest):
        raise ValidationFailed(f"the content function does not take {type(event).__name__} events")
    return write_piece(deps, event, event_id)
