"""Flow 7: an approved ``kc_update_candidate`` is embedded into its domain and org, through
the same store path as Notion sync, in the approval's transaction; the next retrieval sees
it; rejecting, re-approving and invalid edits change nothing."""

from __future__ import annotations

import json

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.errors import ValidationFailed
from colony.flows.approvals.approval import Actor, decide
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import fetch_all, fetch_one
from colony.testing.fakes import CountingEmbedder
from colony.testing.inline import InlineTransport, local_deps
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("KC-09", "ENT-007", "ENT-011")

ORG, OTHER = "org_a", "org_b"
INSIGHT = (
    "Objection heard on Mercy Ridge Health: the facilities team worried that"
    " occupancy sensors feel like surveillance of clinicians."
)


@pytest.fixture
def deps(testdb: PgDB) -> Deps:
    db = testdb.app()
    for org in (ORG, OTHER):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    settings = Settings.from_env({})
    return local_deps(
        settings,
        db,
        InlineTransport(),
        llm_from_settings(settings),
        KnowledgeStore(db, CountingEmbedder()),
    )


def candidate(deps: Deps, content: str = INSIGHT, domain: str = "KC-09") -> str:
    payload = {
        "kind": "kc_update_candidate",
        "domain": domain,
        "content": content,
        "confidence": 0.9,
        "source": {"recording_id": "rec-1"},
    }
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "INSERT INTO approval_items (org_id, kind, source_agent, payload)"
            " VALUES (%s, 'kc_update_candidate', 'AGT-006', %s::jsonb)"
            " RETURNING id",
            (ORG, json.dumps(payload)),
        )
    return str(row["id"])


def kc09(deps: Deps, org: str = ORG) -> list[str]:
    hits = deps.knowledge.retrieve(org, "clinicians surveillance sensors objection", ["KC-09"], 5)
    return [h.content for h in hits["KC-09"]]


def test_approved_candidate_is_retrieved_next_in_its_domain_and_org_only(deps) -> None:
    item = candidate(deps)
    assert kc09(deps) == []  # pending: not knowledge yet (CONST-001)
    assert decide(deps, ORG, item, "approve", actor=Actor("u1", "ui"))["status"] == "applied"
    assert kc09(deps) == [INSIGHT]  # the very next retrieval sees it
    assert kc09(deps, OTHER) == []  # and only in its own org
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(cur, "SELECT source, source_id, domain, tags FROM kc_chunks")
    assert (row["source"], row["source_id"], row["domain"]) == ("approval", item, "KC-09")
    assert row["tags"]["recording_id"] == "rec-1"
    embedded = deps.knowledge._embedder.texts_embedded  # type: ignore[attr-defined]
    assert decide(deps, ORG, item, "approve", actor=Actor("u1", "ui"))["changed"] is False
    assert deps.knowledge._embedder.texts_embedded == embedded  # type: ignore[attr-defined]


def test_rejected_or_invalid_candidates_never_reach_the_knowledge_core(deps) -> None:
    rejected = candidate(deps)
    decide(deps, ORG, rejected, "reject", actor=Actor("u1", "ui"))
    bad = candidate(deps)
    with pytest.raises(ValidationFailed):
        decide(deps, ORG, bad, "edit", actor=Actor("u1", "ui"), edited={"domain": "KC-99"})
    with deps.db.transaction(ORG) as cur:
        assert fetch_all(cur, "SELECT id FROM kc_chunks") == []
        status = fetch_one(cur, "SELECT status FROM approval_items WHERE id = %s", (bad,))
    assert status["status"] == "pending"  # the failed edit rolled back with the decision
    edited = decide(
        deps, ORG, bad, "edit", actor=Actor("u1", "ui"), edited={"content": "Edited. " * 3}
    )
    assert edited["status"] == "applied" and kc09(deps) == ["Edited. Edited. Edited."]


def test_an_embedding_failure_rolls_back_the_approval(deps) -> None:
    item = candidate(deps)

    def broken(texts):
        raise RuntimeError("provider down")

    deps.knowledge._embedder.embed = broken  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError):
        decide(deps, ORG, item, "approve", actor=Actor("u1", "ui"))
    deps.knowledge._embedder = OfflineHashEmbedder()  # type: ignore[attr-defined]
    with deps.db.transaction(ORG) as cur:
        status = fetch_one(cur, "SELECT status FROM approval_items WHERE id = %s", (item,))
    assert status["status"] == "pending" and kc09(deps) == []
