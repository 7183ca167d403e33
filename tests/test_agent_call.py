"""One LLM call end to end: assembler → traced offline model → runner → contract, recorded."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.context.assembler import AssemblyRequest
from colony.contracts import OrgContext, OutboundMessage, QualificationScore
from colony.flows.insights import explain
from colony.knowledge import ChunkIn, KnowledgeStore
from colony.knowledge.exemplars import to_exemplars
from colony.llm.agent_call import call_agent, llm_from_settings
from colony.local.demo import load_demo, read_json
from colony.local.scenario import demo_requests
from colony.policy.outbound import check_outbound
from colony.policy.tiering import decide_tier
from colony.registry.agents import AGENTS
from colony.settings import Settings
from colony.store.db import fetch_all
from tests.conftest import PgDB

ORG = "org_zoomprop_demo"
DEMO_TIERS = read_json("icp.json")["tiers"]


@pytest.fixture
def demo(testdb: PgDB):
    db = testdb.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    load_demo(db, knowledge, say=lambda _: None)
    return db, knowledge


def test_qualification_and_message_calls_validate_and_are_recorded(demo) -> None:
    db, knowledge = demo
    deps = llm_from_settings(Settings.from_env({}), db)
    requests = demo_requests(db, knowledge, ORG, run_id="run-42")
    contact = read_json("contacts.json")[0]

    scored = call_agent(deps, requests["AGT-004"])  # the prompt alone: no side channel
    assert isinstance(scored.output, QualificationScore)
    assert scored.output.total_score > 0 and not scored.output.disqualifiers
    assert scored.output.recommendation is None  # a score only: policy decides the tier
    assert decide_tier(scored.output.total_score, DEMO_TIERS).tier == "T1"  # P-001

    competitors = requests["AGT-005"].task["competitors"]
    signals = [s["detail"] for s in contact["signals"]]
    message = call_agent(
        deps,
        requests["AGT-005"],
        check=lambda m: check_outbound(
            m, tier="T1", contact_signals=signals, competitors=competitors
        ),
    )
    assert isinstance(message.output, OutboundMessage)
    assert message.output.signal_referenced in signals

    with db.transaction(ORG) as cur:
        rows = fetch_all(cur, "SELECT * FROM llm_calls ORDER BY id")
    assert [r["agent_id"] for r in rows] == ["AGT-004", "AGT-005"]
    assert all(r["run_id"] == "run-42" and r["model"] == "offline-deterministic-v1" for r in rows)
    assert rows[0]["context_budget_used"] == scored.assembled.account
    # what was asked of the Knowledge Core: AGT-005's domains, hits or not
    assert rows[1]["kc_domains_queried"] == list(AGENTS["AGT-005"].kc_domains)
    with db.transaction("org_other") as cur:
        assert fetch_all(cur, "SELECT * FROM llm_calls") == []


def test_domains_queried_are_recorded_hits_or_not_and_explained_apart(demo) -> None:
    """``kc_domains_queried`` is what the call asked the Knowledge Core for: a domain that
    returned nothing is in it; ``colony explain`` shows the domains with hits beside it."""
    db, knowledge = demo
    org = "org_sparse"
    with db.transaction(org) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Sparse')", (org,))
    knowledge.sync_source(
        org, "notion", "positioning", [ChunkIn("KC-01", "We plan hospital space in weeks.")]
    )
    domains = AGENTS["AGT-008"].kc_domains  # KC-01, KC-05, KC-07: only KC-01 holds anything
    hits = knowledge.retrieve(org, "hospital space planning", domains, 2)
    assert [d for d in domains if hits[d]] == ["KC-01"]
    task = {"topic": "Space planning", "format": "blog_post", "competitors": ["FacilityIQ"]}
    request = AssemblyRequest(
        "AGT-008",
        org,
        "run-sparse",
        OrgContext(org_name="Sparse"),
        to_exemplars(hits),
        task=task,
        kc_queried=tuple(hits),
    )
    call_agent(llm_from_settings(Settings.from_env({}), db), request)
    with db.transaction(org) as cur:
        (row,) = fetch_all(cur, "SELECT kc_domains_queried FROM llm_calls")
    assert row["kc_domains_queried"] == ["KC-01", "KC-05", "KC-07"]
    (call,) = explain.explain(SimpleNamespace(db=db), org, "run-sparse")["calls"]
    assert call["kc_domains_queried"] == ["KC-01", "KC-05", "KC-07"]
    assert call["kc_domains_hit"] == ["KC-01"]
    text = explain.render(explain.explain(SimpleNamespace(db=db), org, "run-sparse"))
    assert "domains queried: KC-01, KC-05, KC-07" in text
    assert "domains with hits: KC-01" in text
