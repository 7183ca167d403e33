"""Load the ZoomProp demo org (data files under ``demo/``) through the application role.

Idempotent: loading twice leaves the same rows (upserts by external id; Knowledge Core
documents are synced by content hash, so unchanged ones are not embedded again).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from colony.contracts.admin import SequenceLibrary
from colony.errors import ValidationFailed, describe_validation
from colony.knowledge import ChunkIn, KnowledgeStore, chunk_text
from colony.local.progress import Progress
from colony.store import Database
from colony.store.outbound import postal_address
from colony.store.tenants import org_admin

DEMO_DIR = Path(__file__).parent / "demo"
DEMO_POSTAL = "ZoomProp Inc., 100 Demo Street, Suite 4, Austin, TX 78701"

_ORG = """
INSERT INTO organizations (id, name) VALUES (%s, %s)
ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name
"""
_NO_RESEARCH = """
INSERT INTO org_settings (org_id, research_enabled) VALUES (%s, false)
ON CONFLICT (org_id) DO UPDATE SET research_enabled = false
"""
_ICP = """
INSERT INTO icp_definitions (org_id, version, description, rubric, anti_icp_rules, tiers, active)
VALUES (%s, 1, %s, %s::jsonb, %s::jsonb, %s::jsonb, true)
ON CONFLICT (org_id, version) DO UPDATE SET description = EXCLUDED.description,
    rubric = EXCLUDED.rubric, anti_icp_rules = EXCLUDED.anti_icp_rules, tiers = EXCLUDED.tiers
"""
_CONTACT = """
INSERT INTO contacts (org_id, external_id, name, title, email, company, company_domain,
                      enrichment, raw_enrichment_html, signals)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s::jsonb)
ON CONFLICT (org_id, external_id) DO UPDATE SET name = EXCLUDED.name, title = EXCLUDED.title,
    email = EXCLUDED.email, company = EXCLUDED.company, company_domain = EXCLUDED.company_domain,
    enrichment = EXCLUDED.enrichment, raw_enrichment_html = EXCLUDED.raw_enrichment_html,
    signals = EXCLUDED.signals, updated_at = now()
"""
_DEAL = """
INSERT INTO deals (org_id, external_id, contact_id, name, stage, value, next_action, close_date)
VALUES (%s, %s, (SELECT id FROM contacts WHERE external_id = %s), %s, %s, %s, %s, %s::date)
ON CONFLICT (org_id, external_id) DO UPDATE SET contact_id = EXCLUDED.contact_id,
    name = EXCLUDED.name, stage = EXCLUDED.stage, value = EXCLUDED.value,
    next_action = EXCLUDED.next_action, close_date = EXCLUDED.close_date, updated_at = now()
"""


@dataclass(frozen=True)
class KcDocument:
    domain: str
    slug: str
    title: str
    meta: dict[str, str]
    body: str


@dataclass(frozen=True)
class DemoSummary:
    org_id: str
    contacts: int
    deals: int
    sequences: int
    documents: int
    chunks_embedded: int
    chunks_unchanged: int


def read_json(name: str) -> Any:
    return json.loads((DEMO_DIR / name).read_text())


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split ``---``-delimited ``key: value`` lines from a Markdown body."""
    if not text.startswith("---\n"):
        return {}, text
    head, _, body = text[4:].partition("\n---\n")
    meta: dict[str, str] = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip()] = value.strip()
    return meta, body.strip()


def kc_documents() -> list[KcDocument]:
    docs = []
    for path in sorted((DEMO_DIR / "kc").glob("KC-*/*.md")):
        meta, body = parse_front_matter(path.read_text())
        title = meta.pop("title", path.stem)
        docs.append(KcDocument(path.parent.name, path.stem, title, meta, body))
    return docs


def document_chunks(doc: KcDocument) -> list[ChunkIn]:
    """KC-08 exemplars stay whole (one approved message each); other documents are chunked."""
    pieces = [doc.body] if doc.domain == "KC-08" else chunk_text(doc.body)
    return [ChunkIn(doc.domain, piece, title=doc.title, tags=doc.meta) for piece in pieces]


def sequence_library(steps: list[dict[str, Any]]) -> SequenceLibrary:
    """The demo's steps (one row each: angle, tier, step, channel?, delay_days, guidance) as
    the library an org admin would write, checked by the same contract: a step naming an
    unknown channel or a negative delay is refused, naming it, before anything is written."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in sorted(steps, key=lambda s: (s["angle"], s["tier"], s["step"])):
        grouped.setdefault((s["angle"], s["tier"]), []).append(
            {k: s.get(k, "email") for k in ("channel", "delay_days", "guidance")}
        )
    body = {
        "sequences": [
            {"name": f"{angle} {tier}", "angle": angle, "tier": tier, "steps": written}
            for (angle, tier), written in grouped.items()
        ]
    }
    try:
        return SequenceLibrary.model_validate(body)
    except ValidationError as error:
        raise ValidationFailed(f"demo sequences: {describe_validation(error)}") from None


def load_demo(
    db: Database, knowledge: KnowledgeStore, *, say: Callable[[str], None] = print
) -> DemoSummary:
    org = read_json("org.json")
    org_id = org["id"]
    icp = read_json("icp.json")
    contacts = read_json("contacts.json")
    deals = read_json("deals.json")
    sequences = read_json("sequences.json")
    library = sequence_library(sequences).model_dump(mode="json")["sequences"]
    with db.transaction(org_id) as cur:
        cur.execute(_ORG, (org_id, org["name"]))
        # its prospects were researched by hand (their signals are written in contacts.json):
        # the campaign chain does not research them again (issue 33; Harbor's are researched)
        cur.execute(_NO_RESEARCH, (org_id,))
        # the footer of its mail (issue 39 item 4: campaign email needs one)
        postal_address.set_address(cur, org_id, org.get("postal_address") or DEMO_POSTAL)
        cur.execute(
            _ICP,
            (
                org_id,
                icp["description"],
                json.dumps(icp["rubric"]),
                json.dumps(icp["anti_icp_rules"]),
                json.dumps(icp.get("tiers", [])),
            ),
        )
        org_admin.replace_sequences(cur, org_id, library)
        for c in contacts:
            cur.execute(
                _CONTACT,
                (
                    org_id,
                    c["external_id"],
                    c["name"],
                    c.get("title"),
                    c.get("email"),
                    c["company"],
                    c.get("company_domain"),
                    json.dumps(c.get("enrichment", {})),
                    c.get("raw_enrichment_html"),
                    json.dumps(c.get("signals", [])),
                ),
            )
        for d in deals:
            cur.execute(
                _DEAL,
                (
                    org_id,
                    d["external_id"],
                    d["contact_external_id"],
                    d["name"],
                    d["stage"],
                    d.get("value"),
                    d.get("next_action"),
                    d.get("close_date"),
                ),
            )
    say(
        f"  org {org_id}: {len(contacts)} contacts, {len(deals)} deals, "
        f"{len(sequences)} sequence steps, ICP with {len(icp['anti_icp_rules'])} anti-ICP rules"
    )
    docs = kc_documents()
    progress = Progress("Knowledge Core docs", len(docs))
    embedded = unchanged = 0
    for doc in docs:
        result = knowledge.sync_source(
            org_id, "seed", f"{doc.domain}/{doc.slug}", document_chunks(doc)
        )
        embedded += result.embedded
        unchanged += result.unchanged
        progress.advance(doc.domain)
    say(
        f"  {len(docs)} documents: {embedded} chunks embedded, {unchanged} unchanged"
        f" ({progress.elapsed():.1f}s)"
    )
    return DemoSummary(
        org_id, len(contacts), len(deals), len(sequences), len(docs), embedded, unchanged
    )
