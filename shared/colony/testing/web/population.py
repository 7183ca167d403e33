"""Many companies for the research benchmark (``bench/research.py``): ``add_population`` gives
the stand-in web ``n`` generated company sites, the same ones for the same seed, with the
hard cases (``colony.testing.web.cases``) spread among them.

Each generated company is a healthcare provider as the demo ICP describes them: an about
page that says what it is (a vertical in the ICP's own words), how many people it employs
across how many facilities and which EHR its clinicians chart in; one to three dated news
items, each a buying signal written as a press office would (an opening, an appointment, a
platform chosen, a consolidation, leases ending, funding, hiring); one to three job posts on
a public board of each kind in turn (Greenhouse, Lever, Ashby). ``WebServer.add_company``
adds the older filler news, the leaders and the locations.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from colony.testing.web.boards import KINDS
from colony.testing.web.cases import HARD_CASES
from colony.testing.web.demo import DEMO_TODAY

if TYPE_CHECKING:
    from colony.testing.web_server import WebServer

_FIRST = (
    "Cedar",
    "Harbor",
    "Summit",
    "Lakeview",
    "Pine",
    "River",
    "Maple",
    "Granite",
    "Willow",
    "Prairie",
    "Aspen",
    "Silver",
    "Northern",
    "Bluewater",
    "Oak",
    "Stone",
)
_SECOND = (
    "Valley",
    "Ridge",
    "Point",
    "Creek",
    "Park",
    "Grove",
    "Hill",
    "Falls",
    "Springs",
    "Crest",
    "Bay",
    "Meadow",
)
# (what a name ends with, the ICP's vertical label as a page would say it)
_KINDS = (
    ("Health", "health system"),
    ("Medical Group", "physician group"),
    ("Surgery Centers", "ASC operator"),
    ("Behavioral Health", "behavioral health network"),
    ("Urgent Care", "urgent care provider"),
    ("Imaging", "imaging center operator"),
)
_EHR = ("Epic", "Cerner", "athenahealth", "eClinicalWorks")
_CITIES = (
    "Columbus, OH",
    "Denver, CO",
    "Raleigh, NC",
    "Tucson, AZ",
    "Madison, WI",
    "Boise, ID",
    "Tampa, FL",
    "Omaha, NE",
    "Spokane, WA",
    "Albany, NY",
)
_PEOPLE = ("Avery Castillo", "Jordan Okafor", "Morgan Lindgren", "Priya Moreau", "Daniel Reyes")
_JOBS = (
    "Director of Real Estate",
    "Facilities Project Manager",
    "Registered Nurse",
    "Medical Assistant",
    "Revenue Cycle Manager",
    "Ambulatory Operations Director",
)
# (headline, article text): one buying signal each, in the words a press office uses
_NEWS = (
    (
        "{name} opens a new clinic in {city}",
        "{name} opened a new outpatient clinic in {city} this month. The clinic adds {n} exam "
        "rooms and evening hours for working families.",
    ),
    (
        "{name} announces expansion plans",
        "{name} will expand its ambulatory network with {n} new sites over the next two years."
        "\n\nThe first of them, in {city}, is planned to open next autumn.",
    ),
    (
        "{name} appoints a new Chief Operating Officer",
        "{name} appointed {person} as Chief Operating Officer, effective next month. {person} "
        "led ambulatory operations at a neighbouring system for eight years.",
    ),
    (
        "{name} selects a facilities work order platform",
        "{name} selected ServiceNow as its facilities work order platform after a six-month "
        "review of {n} vendors.",
    ),
    (
        "{name} consolidates two clinics in {city}",
        "{name} will consolidate its two {city} clinics into one larger building next spring.",
    ),
    (
        "{name} reviews its real estate",
        "{name}'s lease on its {city} headquarters expires in 2027, and {n} more medical "
        "office leases end by 2028.",
    ),
    (
        "{name} secures new funding",
        "{name} raised ${n} million in new funding to grow its network of clinics.",
    ),
    (
        "{name} is hiring across its clinics",
        "{name} is hiring {n} nurses and medical assistants for its {city} campus.",
    ),
)


@dataclass(frozen=True, slots=True)
class Listed:
    """A company of the population: its domain, its name, and whether it is a hard case."""

    domain: str
    name: str
    hard: bool = False


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def add_generated(web: WebServer, index: int) -> Listed:
    """The ``index``-th generated company (from ``web.seed``), added to ``web``."""
    rng = random.Random(f"{web.seed}:population:{index}")
    ending, vertical = rng.choice(_KINDS)
    name = f"{rng.choice(_FIRST)} {rng.choice(_SECOND)} {ending}"
    domain = f"{_slug(name)}-{index:04d}.example"
    city = rng.choice(_CITIES)
    employees, facilities = rng.randrange(120, 16000), rng.randrange(3, 60)
    about = (
        f"{name} is a {vertical} with about {employees:,} employees across {facilities} "
        f"facilities, headquartered in {city}.\n\nOur clinicians chart in {rng.choice(_EHR)}."
    )
    news = []
    for headline, body in rng.sample(_NEWS, rng.randrange(1, 4)):
        words = {"name": name, "city": city, "n": rng.randrange(2, 40)}
        words["person"] = rng.choice(_PEOPLE)
        day = (DEMO_TODAY - timedelta(days=rng.randrange(5, 300))).isoformat()
        news.append((day, headline.format(**words), body.format(**words)))
    jobs = [
        (title, (DEMO_TODAY - timedelta(days=rng.randrange(1, 60))).isoformat(), city)
        for title in rng.sample(_JOBS, rng.randrange(1, 4))
    ]
    web.add_company(
        domain, name, about=about, news=news, jobs=jobs, job_board=KINDS[index % len(KINDS)]
    )
    return Listed(domain, name)


def add_population(web: WebServer, n: int, *, hard: int | None = None) -> list[Listed]:
    """``n`` companies on ``web``: ``hard`` of the hard cases (default: all of them, at most
    a quarter of ``n``), spread evenly among generated sites. The hard cases' sites are
    served once the server starts; the others are added here."""
    cases = list(HARD_CASES.items())[: min(len(HARD_CASES), n // 4) if hard is None else hard]
    every = n // len(cases) if cases else 0
    listed: list[Listed] = []
    generated = 0
    for position in range(n):
        slot, offset = divmod(position, every) if every else (len(cases), 1)
        if slot < len(cases) and offset == every // 2:
            host, name = cases[slot]
            listed.append(Listed(host, name, hard=True))
        else:
            listed.append(add_generated(web, generated))
            generated += 1
    return listed
