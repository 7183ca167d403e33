"""The passages of a company's stored pages AGT-003 is given (issue 33 item 5).

Nearest first to what the org looks for (its ICP and the signal types AGT-003 reports,
embedded by the Knowledge Core's model), then weighed by age: a passage's date (a feed
entry's, a job post's, else its page's) halves its weight every ``HALF_LIFE_DAYS``, so a
two-year-old press release does not outrank last month's job posts; an undated passage (an
about page) counts as ``UNDATED``. Each comes with a short ref (``S1``...) AGT-003 names
as a signal's source, its URL and date: the flow maps the ref back and checks the quote
against that passage, word for word.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from colony.flows.deps import FlowDeps
from colony.store.research import sources

HALF_LIFE_DAYS = 180.0
UNDATED = 0.7  # an about or leadership page: current as of its fetch, but not news
CANDIDATES = 4  # nearest passages read per one given


def weight(published: date | None, today: date) -> float:
    """How much a passage's age leaves of its similarity (future dates count as today)."""
    if published is None:
        return UNDATED
    age = max((today - published).days, 0)
    return float(0.5 ** (age / HALF_LIFE_DAYS))


def passages_for(
    deps: FlowDeps, org_id: str, domain: str, query: str, *, today: date, k: int = 8
) -> list[dict[str, Any]]:
    """The company's best ``k`` passages for ``query`` as of ``today``, best first, each
    ``{ref, url, title, published, fetched, text}`` (dates ISO; ``published`` None when the
    page gave none)."""
    vector = deps.knowledge.embed_query(query)
    with deps.db.transaction(org_id) as cur:
        rows = sources.nearest(cur, domain, vector, deps.knowledge.model, k * CANDIDATES)
    ranked = sorted(
        rows,
        key=lambda r: (
            -float(r["similarity"]) * weight(r["published_at"], today),
            r["source_id"],
            r["ord"],
        ),
    )
    return [_shown(i, r) for i, r in enumerate(ranked[:k], start=1)]


def _shown(n: int, row: Any) -> dict[str, Any]:
    published = row["published_at"]
    return {
        "ref": f"S{n}",
        "url": row["final_url"],
        "title": row["title"],
        "published": published.isoformat() if published else None,
        "fetched": row["fetched_at"].date().isoformat(),
        "text": row["text"],
    }


def by_ref(passages: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["ref"]: p for p in passages}
