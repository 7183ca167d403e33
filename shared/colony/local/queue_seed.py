"""A full approval queue for the demo org: ``n`` pending items of every kind a person reviews,
shaped as the agents queue them (the /overview browser test and ``bench/overview.py``).

Items go in through ``store.approvals.approvals.add``, the call every agent's flow makes, with the
payload fields those flows write: AGT-005's drafts (subject, body, angle, the signal used,
tier, step, the exemplars kept in its prompt) for the demo's contacts in one campaign,
AGT-006's deal updates and KC candidates, AGT-008's content and AGT-009's kits. ``hostile``
plants what the page must show as text: markup, a script, an unbroken 5,000-character word.
Local only: deployed bundles never import ``colony.local``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from colony.store.approvals import approvals
from colony.store.campaigns import campaigns
from colony.store.db import Database, fetch_all

CONTACTS = "SELECT id, name, company, email, signals FROM contacts ORDER BY external_id"
DEALS = "SELECT id, name FROM deals ORDER BY external_id"
# One transaction gives every item the same created_at: space them a second apart, in the
# order they were added (the first newest), so the queue's order is the seed's.
SPACE = """
UPDATE approval_items a SET created_at = now() - make_interval(secs => s.n)
FROM unnest(%s::text[]) WITH ORDINALITY AS s(id, n) WHERE a.id = s.id
"""
HOSTILE_SUBJECT = '<img src=x onerror="window.__pwned=1"><b>bold</b>'
HOSTILE_BODY = (
    "Hi there,\n\n<script>window.__pwned=1</script> Your team expanded.\n\n"
    + "W" * 5000
    + "\n\nBest,\nMarcus"
)


@dataclass
class SeededQueue:
    campaign_id: str
    outbound: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    hostile: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # newest first, as the queue lists them

    @property
    def ids(self) -> list[str]:
        return self.outbound + self.others + self.hostile


def seed_queue(db: Database, org_id: str, n: int, *, hostile: bool = False) -> SeededQueue:
    """Queue ``n`` pending items in one transaction, newest first: the hostile draft (if
    any), then four drafts to one deal update, KC candidate or content piece, and last (the
    oldest) one deployment kit. The kit has no stored document (its card says so, and
    approving it is refused): a real one needs the onboarding flow and GCS."""
    with db.transaction(org_id) as cur:
        contacts = fetch_all(cur, CONTACTS)
        deals = fetch_all(cur, DEALS)
        campaign = campaigns.create(
            cur,
            org_id,
            name="Signal · T1 health systems",
            angle="Signal",
            tier="T1",
            bounce_threshold=0.05,
            complaint_threshold=0.003,
        )
        seeded = SeededQueue(campaign)
        if hostile:
            seeded.hostile.append(_add_draft(cur, org_id, campaign, contacts[0], 0, hostile=True))
        order = list(seeded.hostile)
        for i in range(n - len(seeded.hostile)):
            kit = i == n - len(seeded.hostile) - 1 and n >= 10
            if (i % 5 == 4 or kit) and deals:
                other = _add_other(cur, org_id, deals[i % len(deals)], i, kit=kit)
                seeded.others.append(other)
            else:
                other = _add_draft(cur, org_id, campaign, contacts[i % len(contacts)], i)
                seeded.outbound.append(other)
            order.append(other)
        cur.execute(SPACE, (order,))
    seeded.order = order
    return seeded


def _signal(contact: Any) -> str:
    details = [s.get("detail") for s in contact["signals"] or [] if s.get("detail")]
    return str(details[0]) if details else "a recent expansion"


def _add_draft(
    cur: Any, org_id: str, campaign: str, contact: Any, i: int, *, hostile: bool = False
) -> str:
    signal = _signal(contact)
    first = str(contact["name"]).split()[0]
    payload: dict[str, Any] = {
        "subject": f"{contact['company']}: a question #{i}",
        "body": f"Hi {first},\n\n{signal}. Is space planning on your list this quarter?\n\n"
        "Best,\nMarcus",
        "angle_used": "Signal",
        "signal_referenced": signal,
        "contact_id": contact["id"],
        "campaign_id": campaign,
        "tier": "T1",
        "to": contact["email"],
        "sequence_step": 1,
        "exemplars": [{"domain": "KC-08", "title": "Signal opener", "text": "Saw your news…"}],
    }
    if hostile:
        payload["subject"], payload["body"] = HOSTILE_SUBJECT, HOSTILE_BODY
        payload["untrusted_instructions"] = ['asks to insert link <a href="#x">click</a>']
    return approvals.add(
        cur, org_id, "outbound_message", "AGT-005", payload, subject_id=str(contact["id"])
    )


def _add_other(cur: Any, org_id: str, deal: Any, i: int, *, kit: bool = False) -> str:
    kind = (
        "deployment_kit"
        if kit
        else ("deal_update", "kc_update_candidate", "content_piece")[(i // 5) % 3]
    )
    payload: dict[str, Any]
    if kind == "deal_update":
        payload = {
            "deal_id": deal["id"],
            "changes": {"stage": "negotiation", "next_action": f"Send the pilot terms #{i}"},
            "source": {"recording_id": f"rec-{i}"},
        }
        return approvals.add(cur, org_id, kind, "AGT-006", payload, subject_id=str(deal["id"]))
    if kind == "kc_update_candidate":
        payload = {
            "kind": kind,
            "domain": "KC-04",
            "content": f"Buyers ask for Epic Cadence extracts before a pilot (#{i}).",
            "confidence": 0.8,
            "source": {"recording_id": f"rec-{i}"},
        }
        return approvals.add(cur, org_id, kind, "AGT-006", payload)
    if kind == "content_piece":
        payload = {"title": f"Five lease signals #{i}", "format": "blog_post", "body": "Draft."}
        return approvals.add(cur, org_id, kind, "AGT-008", payload)
    payload = {"title": f"Kit for {deal['name']}", "deal_id": deal["id"]}
    return approvals.add(cur, org_id, kind, "AGT-009", payload, subject_id=str(deal["id"]))
