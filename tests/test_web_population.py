"""The research benchmark's world (``bench/research.py``): a seeded population of company
sites on the stand-in web (``colony.testing.web.population``), served from a process of its
own (``colony.testing.web_process``), over real HTTP."""

from __future__ import annotations

import json
import re

import httpx

from colony.testing.web.boards import KINDS
from colony.testing.web.cases import HARD_CASES
from colony.testing.web.population import add_population
from colony.testing.web_process import web_process
from colony.testing.web_server import WebServer


def test_a_population_is_seeded_with_the_hard_cases_spread_among_it() -> None:
    one, two, other = WebServer(5), WebServer(5), WebServer(6)
    listed = add_population(one, 40)
    assert listed == add_population(two, 40) and listed != add_population(other, 40)
    assert len({c.domain for c in listed}) == 40
    hard = [i for i, c in enumerate(listed) if c.hard]
    assert len(hard) == 10 and hard == sorted(hard) and hard[0] > 0 and hard[-1] < 39
    assert {listed[i].domain for i in hard} <= set(HARD_CASES)
    generated = [one.companies[c.domain] for c in listed if not c.hard]
    assert {c.board.kind for c in generated} == set(KINDS)
    for company in generated:  # what AGT-003 reads: a vertical, a size, dated signals
        assert re.search(r"about [\d,]+ employees across \d+ facilities", company.about)
        assert company.news and all(item.day.year >= 2025 for item in company.news[:1])
    assert len(add_population(WebServer(5), 1000)) == 1000


def test_the_population_is_served_from_its_own_process() -> None:
    with web_process(8, seed=5) as web:
        setting = json.loads(web.setting)
        company = next(c for c in web.companies if not c.hard)
        assert company.domain in setting["hosts"] and "api.lever.co" in setting["hosts"]
        with httpx.Client(base_url=f"http://{setting['address']}") as client:
            about = client.get("/about", headers={"Host": company.domain})
            refused = client.get("/", headers={"Host": "169.254.169.254"})
        assert about.status_code == 200 and company.name in about.text
        assert refused.status_code == 200  # answered, and counted: a fetcher never asks
        assert web.answers() == [
            (company.domain, "/about", 200, len(about.content)),
            ("169.254.169.254", "/", 200, len(refused.content)),
        ]
        counters = web.counters()
        assert counters.requests == 2 and counters.refused_address == 1
