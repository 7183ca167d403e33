"""Seeded HubSpot worlds: the same companies, contacts and deals for the same seed, every
run (tests now; the CRM sync benchmark later, at 100,000 contacts).

What a world holds, and the awkward cases it plants on purpose:

- companies with a name and domain (and an industry);
- contacts, each at one company (associated, "Primary"); every 31st has no email;
- deals in HubSpot's default pipeline, associated with a contact and its company; every 17th
  is in a second pipeline, "Partnerships", whose stage ``partner_intro`` no org has mapped;
- ``amount`` as HubSpot writes it (a decimal string), ``closedate`` a time.

Names come from small word lists through ``random.Random(seed)``, so nothing reads a file
or the network, and a world of 130,000 records builds in seconds.
"""

from __future__ import annotations

import random
from datetime import timedelta

from colony.testing.hubspot_world import EPOCH, HubSpotWorld, default_pipeline, iso, pipeline

FIRST = ("Ada", "Bea", "Cal", "Dana", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea")
LAST = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Silva", "Novak", "Reyes", "Khan", "Berg")
WORDS = ("Mercy", "Ridge", "Harbor", "Vale", "North", "Cedar", "Summit", "Bright", "Oak")
KINDS = ("Health", "Care", "Clinics", "Medical", "Partners", "Group")
INDUSTRIES = ("HOSPITAL_HEALTH_CARE", "MEDICAL_PRACTICE", "HEALTH_WELLNESS_AND_FITNESS")
TITLES = ("COO", "VP Operations", "Facilities Director", "CFO", "Practice Manager")
UNMAPPED_STAGE = "partner_intro"


def partnerships_pipeline() -> dict[str, object]:
    return pipeline(
        "partnerships",
        "Partnerships",
        [(UNMAPPED_STAGE, "Partner intro", "0.1", False), ("partner_won", "Signed", "1.0", True)],
    )


def seeded_world(
    seed: int = 7,
    *,
    companies: int = 20,
    contacts: int = 100,
    deals: int = 10,
    portal_id: str = "62515",
) -> HubSpotWorld:
    """A world of ``companies``, ``contacts`` and ``deals``, the same for the same arguments."""
    rng = random.Random(seed)
    world = HubSpotWorld(portal_id)
    world.pipelines = [default_pipeline(), partnerships_pipeline()]
    stages = [s["id"] for s in default_pipeline()["stages"]]
    company_ids = []
    for n in range(companies):
        name = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.choice(KINDS)} {n}"
        domain = name.lower().replace(" ", "") + ".example"
        firm = {"name": name, "domain": domain, "industry": rng.choice(INDUSTRIES)}
        company_ids.append(world.create("companies", firm).id)
    contact_ids: list[tuple[str, str]] = []
    for n in range(contacts):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        company = company_ids[n % len(company_ids)] if company_ids else None
        person: dict[str, str | None] = {
            "firstname": first,
            "lastname": last,
            "jobtitle": rng.choice(TITLES),
            "email": None if n % 31 == 30 else f"{first}.{last}.{n}@mail{n % 97}.example".lower(),
        }
        links = [("companies", company)] if company else []
        contact_ids.append((world.create("contacts", person, links=links).id, company or ""))
    for n in range(deals):
        contact, company = contact_ids[n % len(contact_ids)] if contact_ids else ("", "")
        partner = n % 17 == 16
        close = EPOCH + timedelta(days=rng.randint(10, 120))
        deal = {
            "dealname": f"Deal {n}: {rng.choice(WORDS)} rollout",
            "amount": f"{rng.randint(5, 400) * 1000}.00",
            "pipeline": "partnerships" if partner else "default",
            "dealstage": UNMAPPED_STAGE if partner else rng.choice(stages),
            "closedate": iso(close),
        }
        links = [("contacts", contact)] if contact else []
        links += [("companies", company)] if company else []
        world.create("deals", deal, links=links)
    return world
