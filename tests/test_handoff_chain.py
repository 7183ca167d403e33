"""A handoff is only the next link of a chain AGT-002 started (issue 14 item 2): for a contact
of the run's campaign whose previous step is done. Real PostgreSQL, the offline model, the
inline transport for the real chain, and the real message-generator / enrichment function
apps for the forged pushes (so the refusals are recorded in ``rejected_deliveries``)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from colony.contracts.events import EVENT_ADAPTER
from colony.flows.campaigns import campaign
from colony.flows.handlers import PUBSUB_HANDLERS
from colony.local.demo import read_json
from colony.runtime.deps import Deps, set_deps_for_tests
from colony.store import fetch_all, fetch_one
from colony.testing.inline import InlineTransport, run_until_idle
from tests.apps import registered_app
from tests.conftest import PgDB
from tests.test_campaign_flow import ORG, llm_calls, make_deps

ANTI_ICP = sorted(read_json("anti_icp_expected.json"))


@pytest.fixture
def deps(testdb: PgDB) -> Iterator[Deps]:
    built = make_deps(testdb)
    set_deps_for_tests(built)  # the function apps below use these deps
    yield built
    set_deps_for_tests(None)


def contact_ids(deps: Deps, external_ids: list[str]) -> list[str]:
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(
            cur,
            "SELECT id FROM contacts WHERE external_id = ANY(%s) ORDER BY external_id",
            (external_ids,),
        )
    assert len(rows) == len(external_ids)
    return [r["id"] for r in rows]


def non_anti_icp(deps: Deps, n: int, skip: int = 0) -> list[str]:
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(
            cur,
            "SELECT external_id FROM contacts WHERE NOT external_id = ANY(%s) ORDER BY external_id",
            (ANTI_ICP,),
        )
    return contact_ids(deps, [r["external_id"] for r in rows[skip : skip + n]])


def started_run(deps: Deps, members: list[str]) -> tuple[str, str, list[Any]]:
    """A campaign of ``members``, its run started (anti-ICP step done) and the real
    handoffs it published held back: (campaign id, run id, held messages)."""
    campaign_id = campaign.create_campaign(
        deps, ORG, name="chain", angle="Signal", tier="T1", contact_ids=members
    )
    run_id = campaign.launch(deps, ORG, campaign_id)
    transport = deps.transport
    assert isinstance(transport, InlineTransport)
    start = transport.pending.popleft()
    PUBSUB_HANDLERS["campaign"](deps, EVENT_ADAPTER.validate_json(start.data), start.message_id)
    held = list(transport.pending)
    transport.pending.clear()
    return campaign_id, run_id, held


def handoff(campaign_id: str, run_id: str, agent: str, contact_id: str) -> dict[str, Any]:
    return {
        "kind": "handoff",
        "org_id": ORG,
        "campaign_id": campaign_id,
        "envelope": {
            "parent_run_id": run_id,
            "downstream_agent": agent,
            "entity_ids": [contact_id],
            "angle": "Signal",
            "tier": "T1",
            "kc_bucket_hints": ["KC-08"],
        },
    }


def push(event: dict[str, Any], message_id: str) -> dict[str, Any]:
    data = base64.b64encode(json.dumps(event).encode()).decode()
    return {
        "message": {"data": data, "messageId": message_id, "attributes": {"org_id": ORG}},
        "subscription": "projects/colony-test/subscriptions/colony-message-generator-push",
    }


def rejections(testdb: PgDB) -> dict[str, str]:
    owner = testdb.owner_connection()
    try:
        rows = fetch_all(owner.cursor(), "SELECT event_id, reason FROM rejected_deliveries")
    finally:
        owner.close()
    return {r["event_id"]: r["reason"] for r in rows}


def run_row(deps: Deps, run_id: str) -> dict[str, Any]:
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "SELECT status, contacts_total, contacts_done FROM campaign_runs WHERE id = %s",
            (run_id,),
        )
    assert row is not None
    return row


def steps(deps: Deps, run_id: str) -> dict[str, Any]:
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(
            cur, "SELECT step_key, status, output FROM run_steps WHERE run_id = %s", (run_id,)
        )
    return {r["step_key"]: r for r in rows}


def test_forged_handoffs_for_non_members_cannot_complete_a_run(
    deps: Deps, testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's scenario: two forged message-generator handoffs for contacts outside a
    2-contact run's campaign. They are refused and recorded; no model call, no step, no
    count; the run's real members are then processed to the end."""
    members = non_anti_icp(deps, 2)
    strangers = non_anti_icp(deps, 2, skip=2)
    campaign_id, run_id, held = started_run(deps, members)
    before = llm_calls(deps)
    client = registered_app("message-generator", monkeypatch)
    for i, stranger in enumerate(strangers):
        forged = handoff(campaign_id, run_id, "message-generator", stranger)
        reply = client.post("/", json=push(forged, f"forged-{i}"))
        assert 200 <= reply.status_code < 300, reply.text  # acknowledged
    refused = rejections(testdb)
    assert sorted(refused) == ["forged-0", "forged-1"]
    assert all(r.startswith("handoff_refused: ") for r in refused.values()), refused
    assert all("is not in campaign" in r for r in refused.values()), refused
    assert llm_calls(deps) == before  # no model call
    assert set(steps(deps, run_id)) == {"anti_icp"}  # no step claimed
    assert run_row(deps, run_id) == {"status": "running", "contacts_total": 2, "contacts_done": 0}

    # the real members go through their chain and complete the run
    transport = deps.transport
    assert isinstance(transport, InlineTransport)
    transport.pending.extend(held)
    stats = run_until_idle(deps, transport)
    assert not stats.rejected and not stats.dead_letters
    assert run_row(deps, run_id) == {"status": "completed", "contacts_total": 2, "contacts_done": 2}
    done = steps(deps, run_id)
    for member in members:
        assert done[f"enrich:{member}"]["status"] == "done"
        assert done[f"done:{member}"]["output"]["outcome"] != "failed:handoff_refused"
    assert not [k for k in done if any(s in k for s in strangers)]
    assert llm_calls(deps).get("AGT-003", 0) - before.get("AGT-003", 0) == 2


def test_a_handoff_before_its_previous_step_is_refused(
    deps: Deps, testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member's handoff to AGT-005 before AGT-004 scored it, one to AGT-004 before AGT-003
    enriched it, one naming a run of another campaign, and one to AGT-003 for an anti-ICP
    member already counted: all refused, nothing run; the chain then runs once."""
    (member,) = non_anti_icp(deps, 1)
    (anti,) = contact_ids(deps, ANTI_ICP[:1])
    campaign_id, run_id, held = started_run(deps, [member, anti])
    other_campaign, _, _ = started_run(deps, [member])
    assert run_row(deps, run_id)["contacts_done"] == 1  # the anti-ICP member, by the rules
    before = llm_calls(deps)
    cases = {
        "early-message": (
            "message-generator",
            handoff(campaign_id, run_id, "message-generator", member),
        ),
        "early-qualify": ("qualification", handoff(campaign_id, run_id, "qualification", member)),
        "other-campaign": (
            "enrichment",
            handoff(other_campaign, run_id, "prospect-enrichment", member),
        ),
        "anti-icp": ("enrichment", handoff(campaign_id, run_id, "prospect-enrichment", anti)),
    }
    for message_id, (function, event) in cases.items():
        reply = registered_app(function, monkeypatch).post("/", json=push(event, message_id))
        assert 200 <= reply.status_code < 300, (message_id, reply.text)
    refused = rejections(testdb)
    assert sorted(refused) == sorted(cases)
    assert all(r.startswith("handoff_refused: ") for r in refused.values()), refused
    assert "before AGT-005" in refused["early-message"]
    assert "before AGT-004" in refused["early-qualify"]
    assert "not a run of campaign" in refused["other-campaign"]
    assert "already finished" in refused["anti-icp"]
    assert llm_calls(deps) == before
    assert set(steps(deps, run_id)) == {"anti_icp", f"done:{anti}"}
    assert run_row(deps, run_id)["contacts_done"] == 1

    transport = deps.transport
    assert isinstance(transport, InlineTransport)
    transport.pending.extend(held)
    stats = run_until_idle(deps, transport)
    assert not stats.rejected and not stats.dead_letters
    assert run_row(deps, run_id) == {"status": "completed", "contacts_total": 2, "contacts_done": 2}
    assert steps(deps, run_id)[f"enrich:{member}"]["status"] == "done"
