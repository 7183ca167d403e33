"""The passages AGT-003 is given (``colony.flows.research.passages``), on the real PostgreSQL
with the offline embedder: nearest the query first, weighed by age, so a two-year-old press
release does not outrank last month's job post that says as much; each with its ref, URL
and date; only the company's own, only the org's own."""

from __future__ import annotations

from datetime import UTC, date, datetime

from colony.adapters.embedding import OfflineHashEmbedder
from colony.flows.research.passages import passages_for, weight
from colony.knowledge import KnowledgeStore
from colony.settings import Settings
from colony.store.research import sources
from colony.testing.inline import InlineTransport, local_deps
from tests.conftest import PgDB

ORG, OTHER = "org_passages_a", "org_passages_b"
TODAY = date(2026, 11, 30)
SAID = "Acme Health is hiring facilities managers for its new clinics in Ohio."


def test_recency_decides_between_passages_that_say_as_much(testdb: PgDB) -> None:
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    deps = local_deps(Settings.from_env({}), db, InlineTransport(), None, knowledge)

    def insert(conn) -> None:
        for org in (ORG, OTHER):
            conn.cursor().execute(
                "INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org)
            )
        conn.commit()

    testdb.as_owner(insert)
    pages = (
        (ORG, "acme.example", "https://acme.example/press/2024.pdf", date(2024, 11, 1), SAID),
        (ORG, "acme.example", "https://jobs.example/acme", date(2026, 11, 2), SAID),
        (ORG, "acme.example", "https://acme.example/about", None, "Acme Health runs nine clinics."),
        (ORG, "other.example", "https://other.example/", date(2026, 11, 20), SAID),
        (OTHER, "acme.example", "https://acme.example/x", date(2026, 11, 29), SAID),
    )
    for org, domain, url, day, text in pages:
        with db.transaction(org) as cur:
            sid = sources.save(
                cur,
                org,
                {
                    "domain": domain,
                    "url": url,
                    "final_url": url,
                    "role": "page",
                    "outcome": "ok",
                    "detail": "",
                    "fetched_at": datetime(2026, 11, 29, tzinfo=UTC),
                    "needs_browser": False,
                    "pass": 1,
                    "published_at": day,
                },
            )
            sources.replace_passages(
                cur, org, sid, [(text, day)], knowledge.model, knowledge.embed_texts([text])
            )
    found = passages_for(deps, ORG, "acme.example", "hiring facilities managers", today=TODAY)
    assert [p["url"] for p in found][:2] == [
        "https://jobs.example/acme",  # last month's post first
        "https://acme.example/press/2024.pdf",
    ]
    assert [p["ref"] for p in found] == [f"S{n}" for n in range(1, len(found) + 1)]
    assert found[0]["published"] == "2026-11-02" and found[0]["fetched"] == "2026-11-29"
    assert {p["url"] for p in found} <= {
        u for o, d, u, _, _ in pages if o == ORG and d == "acme.example"
    }
    assert weight(date(2024, 11, 30), TODAY) < 0.1 < 0.85 < weight(date(2026, 11, 2), TODAY)
    assert weight(date(2027, 1, 1), TODAY) == 1.0  # a date in the future counts as today
