"""The soak's tenants: the demo org's data loaded under ``soak_org_<k>`` ids, a one-step
sequence (so a sent message ends its contact's part), sending caps that do not defer, and
synthetic contacts cloned from the demo's, each with an address of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from colony.knowledge import KnowledgeStore
from colony.local.demo import load_demo
from colony.store import Database
from colony.store import soak as rows

ANGLE, TIER = "Signal", "T1"


@dataclass(frozen=True, slots=True)
class Tenant:
    org_id: str
    contact_ids: tuple[str, ...]


def org_ids(orgs: int) -> list[str]:
    return [f"soak_org_{k}" for k in range(1, orgs + 1)]


def build(
    db: Database,
    knowledge: KnowledgeStore,
    orgs: int,
    contacts: int,
    say: Callable[[str], None],
) -> list[Tenant]:
    """``orgs`` tenants sharing ``contacts`` synthetic contacts (the remainder to the first)."""
    tenants = []
    for n, org in enumerate(org_ids(orgs)):
        share = contacts // orgs + (1 if n < contacts % orgs else 0)
        load_demo(db, knowledge, say=lambda _: None, org_id=org)
        with db.transaction(org) as cur:
            demo = rows.set_up_org(cur, org, ANGLE, TIER)
            domain = org.replace("_", "-")
            ids = tuple(
                rows.clone_contact(
                    cur,
                    f"K-{i:05d}",
                    i,
                    f"c{i:05d}@d{i % 40}.{domain}.example",
                    demo[i % len(demo)],
                )
                for i in range(share)
            )
        tenants.append(Tenant(org, ids))
        say(f"  {org}: {share} contacts")
    return tenants
