"""Flow 7, the Knowledge Core update lifecycle (SPEC §6.7; seed §6.4).

An agent's ``kc_update_candidate`` waits in the approval queue (CONST-001). Approving it runs
``apply_kc_candidate`` inside the decision's transaction: the content is embedded and
upserted into its domain and org through ``KnowledgeStore.sync_in`` — the same content-hash
path the Notion re-embed worker uses — so the approval and the new knowledge commit together
(or not at all) and the very next retrieval sees it. Re-applying is a no-op: the chunk is
keyed by the approval item and its hash is unchanged.

Approved agent output grows its domain the same way (seed §7.7): an approved outbound
message becomes a KC-08 exemplar tagged with its angle, tier, sequence step and persona
(``remember_message``; its outcome is recorded later by ``colony.flows.outbound.delivery``), and an
approved deployment kit becomes KC-10 onboarding knowledge (``remember_kit``): chunked along
its own sections, each tagged ``part=playbook`` with the deal and, as far as the deal's
contact says, its industry and segment, so AGT-009's next retrieval can ground a kit in it.
What is one customer's own stays out: the next kit goes to another customer, so the deal
summary the kit opens with (the customer's name, the deal's value and stage) is not kept, the
chunks are titled by industry and segment rather than by the kit's title (which names the
customer), and the deal's, company's and contact's names in the playbook text read "the
customer". The whole kit stays on ``deployment_kits.document``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from colony.contracts import KcUpdateCandidate
from colony.errors import ValidationFailed, describe_validation
from colony.flows.deps import FlowDeps
from colony.knowledge import outcomes
from colony.knowledge.chunking import chunk_blocks
from colony.knowledge.store import ChunkIn
from colony.store.campaigns import campaigns

KIT_DOMAIN = "KC-10"
DEAL_SUMMARY = "## Deal summary"  # the section AGT-009 opens every kit with
_BLOCKS = re.compile(r"\n\s*\n")

logger = logging.getLogger("colony.flows")


def apply_kc_candidate(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    try:
        candidate = KcUpdateCandidate.model_validate(
            {k: payload.get(k) for k in ("domain", "content", "confidence")}
        )
    except ValidationError as error:
        raise ValidationFailed(
            f"the KC candidate is invalid: {describe_validation(error)}"
        ) from None
    raw_source = payload.get("source")
    source: Mapping[str, Any] = raw_source if isinstance(raw_source, Mapping) else {}
    tags = {"approval_item": item_id, "confidence": str(candidate.confidence)}
    if isinstance(source.get("recording_id"), str):
        tags["recording_id"] = source["recording_id"]
    chunk = ChunkIn(
        candidate.domain,
        candidate.content.strip(),
        title=f"Approved insight ({candidate.domain})",
        tags=tags,
    )
    deps.knowledge.sync_in(cur, org_id, "approval", item_id, [chunk])


def remember_message(
    deps: FlowDeps, cur: Any, org_id: str, item_id: str, payload: Mapping[str, Any]
) -> None:
    """An approved (perhaps edited) outbound message as a KC-08 exemplar, in the decision's
    transaction; keyed by the approval item, so re-applying changes nothing."""
    subject, body = str(payload.get("subject") or "").strip(), str(payload.get("body") or "")
    if not body.strip():
        raise ValidationFailed("an approved message without a body cannot become an exemplar")
    angle = payload.get("angle")
    campaign_id = payload.get("campaign_id")
    if not angle and isinstance(campaign_id, str):  # drafted before messages carried it
        campaign = campaigns.get(cur, campaign_id)
        angle = campaign["angle"] if campaign else None
    persona = payload.get("persona")
    tags = {
        **outcomes.message_tags(
            payload,
            angle=str(angle) if angle else None,
            persona=str(persona) if persona else None,
        ),
        "approval_item": item_id,
    }
    text = f"Subject: {subject}\n\n{body.strip()}" if subject else body.strip()
    chunk = ChunkIn(outcomes.DOMAIN, text, title=subject or None, tags=tags)
    deps.knowledge.sync_in(cur, org_id, "approval", item_id, [chunk])


def remember_kit(
    deps: FlowDeps,
    cur: Any,
    org_id: str,
    item_id: str,
    kit: Mapping[str, Any],
    deal: Mapping[str, Any] | None,
) -> int:
    """An approved deployment kit as KC-10 chunks, in the decision's transaction; keyed by
    the approval item, so re-applying changes nothing. Returns how many chunks it holds (0:
    a kit built before kits kept their text, which is released without them, and logged)."""
    document = str(kit.get("document") or "")
    if not document.strip():
        logger.warning("approved kit has no stored text", extra={"org_id": org_id})
        return 0
    tags = {
        "approval_item": item_id,
        "deal_id": str(kit["deal_id"]),
        "industry": (deal or {}).get("industry"),
        "segment": (deal or {}).get("segment"),
    }
    kept = {k: str(v)[: outcomes.MAX_TAG] for k, v in tags.items() if v not in (None, "")}
    about = " / ".join(str(kept[k]) for k in ("industry", "segment") if k in kept)
    title = f"Deployment kit playbook ({about})" if about else "Deployment kit playbook"
    names = _customer_names(deal or {})
    chunks = [
        ChunkIn(
            KIT_DOMAIN,
            names.sub("the customer", text),
            title=title,
            tags={**kept, "part": "playbook"},
        )
        for text in chunk_blocks(_BLOCKS.split(document))
        if DEAL_SUMMARY not in text
    ]
    deps.knowledge.sync_in(cur, org_id, "approval", item_id, chunks)
    return len(chunks)


def _customer_names(deal: Mapping[str, Any]) -> re.Pattern[str]:
    """The deal's, its company's and its contact's names, as one case-insensitive pattern
    (longest first, so a company name inside the deal's name goes with the deal's)."""
    names = {str(deal.get(k) or "").strip() for k in ("name", "company", "contact_name")}
    words = sorted((n for n in names if len(n) >= 3), key=len, reverse=True)
    if not words:
        return re.compile(r"(?!)")  # matches nothing
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
