"""The demo world on the stand-in web: a site for every demo prospect's company
(``demo/contacts.json``) and for every company of Harbor's CRM export (``demo/harbor.json``,
its rows read as the import reads them: a rejected row is never a prospect, so it gets none).

Signals come from the data where it has them: each of a demo prospect's signals is a dated
news article (its ``detail`` the article's text), a hiring signal also a job post (the role it
names, else a facilities role), the enrichment the about page, the prospect the leadership
page. Harbor's export has names and titles only, so each dental group gets one of
``DENTAL_NEWS``, dated within the 90 days before ``DEMO_TODAY``, an office manager post, and
an about page that says what it is, how many people it employs and how many offices it runs.
"""

from __future__ import annotations

import csv
import io
import random
import re
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from colony.imports.rows import Prospect, column_map, prospect
from colony.local.demo import read_json

if TYPE_CHECKING:
    from colony.testing.web_server import WebServer

DEMO_TODAY = date(2026, 11, 20)  # the demo world's today (its newest signal is 2026-11-15)
HEADLINES = {
    "expansion": "{name} announces expansion plans",
    "lease_expiry": "{name} reviews its real estate portfolio",
    "leadership_change": "{name} announces a leadership appointment",
    "hiring": "{name} is growing its team",
    "tech_adoption": "{name} selects a new technology platform",
    "funding": "{name} secures new funding",
    "consolidation": "{name} completes a consolidation",
}
DENTAL_NEWS = (
    (
        "{name} opens a new office in {city}",
        "{name} opened its newest office in {city} this month, adding six operatories and "
        "evening hours.",
    ),
    (
        "{name} acquires a two-office practice in {city}",
        "{name} has acquired a two-office practice in {city} and will move both offices onto "
        "its shared scheduling and supply purchasing.",
    ),
    (
        "{name} consolidates supply purchasing across its offices",
        "{name} moved every office to one dental supplier this quarter, citing rising costs.",
    ),
)
_CITIES = ("Portland, ME", "Naperville, IL", "Plano, TX", "Mesa, AZ", "Tampa, FL", "Boise, ID")
_ROLE = re.compile(r"\b((?:Director|Manager|Head|Vice President) of(?: [A-Z][a-z]+)+)")


def _about(name: str, facts: dict[str, Any]) -> str:
    kind = str(facts.get("vertical") or "organization").replace("_", " ")
    text = f"{name} is a {facts.get('ownership', '')} {kind}".replace("  ", " ")
    if facts.get("region"):
        text += f" in the {facts['region']} region"
    if facts.get("employee_count"):
        text += f" with about {facts['employee_count']:,} employees"
    if facts.get("facilities_count"):
        text += f" across {facts['facilities_count']} facilities"
    return text + "."


def add_demo_prospects(web: WebServer) -> list[str]:
    """A site for each company of ``contacts.json``; its domains."""
    domains = []
    for contact in read_json("contacts.json"):
        name, signals = contact["company"], contact.get("signals") or []
        news = [
            (s["date"], HEADLINES.get(s["type"], "{name} news").format(name=name), s["detail"])
            for s in signals
        ]
        jobs = [
            (
                found.group(1)
                if (found := _ROLE.search(s["detail"]))
                else "Facilities Project Manager",
                s["date"],
            )
            for s in signals
            if s["type"] == "hiring"
        ]
        web.add_company(
            contact["company_domain"],
            name,
            news=news,
            jobs=jobs,
            leaders=[(contact["name"], contact["title"])],
            about=_about(name, contact.get("enrichment") or {}),
        )
        domains.append(contact["company_domain"])
    return domains


def harbor_prospects() -> list[Prospect]:
    """The rows of Harbor's CRM export that the import keeps as prospects."""
    rows = list(csv.DictReader(io.StringIO("\n".join(read_json("harbor.json")["prospects_csv"]))))
    columns = column_map(list(rows[0]), "prospects")
    return [p for row in rows if isinstance(p := prospect(row, columns), Prospect)]


def add_harbor_companies(web: WebServer) -> list[str]:
    """A site for each company of Harbor's imported prospects; its domains."""
    people: dict[str, list[Prospect]] = {}
    for found in harbor_prospects():
        if found.company_domain:
            people.setdefault(found.company_domain, []).append(found)
    for domain, staff in people.items():
        name, draw = staff[0].company, random.Random(f"{web.seed}:{domain}:dental")
        title, body = draw.choice(DENTAL_NEWS)
        day = (DEMO_TODAY - timedelta(days=draw.randrange(10, 80))).isoformat()
        words = {"name": name, "city": draw.choice(_CITIES)}
        kind = "orthodontic group" if "ortho" in name.lower() else "dental group"
        offices, staffed = draw.randrange(5, 19), draw.randrange(120, 640)
        web.add_company(
            domain,
            name,
            news=[(day, title.format(**words), body.format(**words))],
            jobs=[("Dental Office Manager", day)],
            leaders=[(p.name, p.title or "Team member") for p in staff],
            about=(
                f"{name} is a {kind} with about {staffed} employees across {offices} offices,"
                " sharing one scheduling desk and one supply budget."
            ),
        )
    return list(people)


def add_demo_companies(web: WebServer) -> list[str]:
    """Every demo prospect's and Harbor prospect's company site; their domains."""
    return add_demo_prospects(web) + add_harbor_companies(web)
