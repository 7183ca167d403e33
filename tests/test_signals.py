"""AGT-003's signals are kept (issue 19 item 1): stored per contact with their provenance in
the real embedded PostgreSQL by a real campaign run, and readable by AGT-001's chat tool.

The offline model reads only its prompt: the signals it returns are the contact entity's own
(``colony.adapters.offline.prospects``), each with its quote, source and confidence.
"""

from __future__ import annotations

from typing import Any

import pytest

from colony.contracts.chat import ContactSignalsArgs
from colony.errors import ValidationFailed
from colony.flows import campaign
from colony.flows.chat import tools
from colony.store import fetch_all, fetch_one, signals
from colony.testing.inline import run_until_idle
from tests.conftest import PgDB
from tests.test_campaign_flow import ORG, make_deps

pytestmark = pytest.mark.covers("AGT-003", "AGT-001", "ENT-002")

FUNDING = (
    "Seawick Surgery Centers took a minority investment from a physician-owned ASC platform"
    " to add total joint capability at two centers."
)


def _enrich(deps: Any, external_id: str) -> str:
    with deps.db.transaction(ORG) as cur:
        found = fetch_one(cur, "SELECT id FROM contacts WHERE external_id = %s", (external_id,))
    assert found is not None
    campaign_id = campaign.create_campaign(
        deps, ORG, name="signals", angle="Signal", tier="T1", contact_ids=[found["id"]]
    )
    campaign.launch(deps, ORG, campaign_id)
    stats = run_until_idle(deps, deps.transport)
    assert not stats.dead_letters and not stats.rejected
    return str(found["id"])


def test_enrichment_keeps_each_signal_with_its_provenance(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    contact_id = _enrich(deps, "P-018")
    with deps.db.transaction(ORG) as cur:
        rows = fetch_all(
            cur,
            "SELECT org_id, type, detail, quote, source, confidence, observed_on::text AS day,"
            " agent_id, run_id IS NOT NULL AS has_run FROM contact_signals WHERE contact_id = %s",
            (contact_id,),
        )
    assert rows == [
        {
            "org_id": ORG,
            "type": "funding",
            "detail": FUNDING,
            "quote": FUNDING,
            "source": "signals[0]",
            "confidence": pytest.approx(0.9),
            "day": "2026-09-12",
            "agent_id": "AGT-003",
            "has_run": True,
        }
    ]
    # A second run replaces the set instead of piling duplicates up.
    _enrich(deps, "P-018")
    with deps.db.transaction(ORG) as cur:
        assert len(signals.for_contact(cur, contact_id)) == 1
    # Another org's scope sees none of them (RLS on contact_signals).
    with deps.db.transaction("org_someone_else") as cur:
        assert signals.for_contact(cur, contact_id) == []


def test_the_chat_tool_reads_a_contacts_signals_by_name(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    contact_id = _enrich(deps, "P-018")
    ctx = tools.ToolContext(deps, ORG, "user-1", "session-1", "call-1")
    tool, args = tools.parse_args("contact_signals", {"contact": "Priscilla Vance"})
    ran = tools.run(tool, ctx, args)
    assert ran["ok"] is True
    answer = ran["result"]
    assert answer["contact"]["id"] == contact_id
    assert answer["signals"] == [
        {
            "type": "funding",
            "detail": FUNDING,
            "quote": FUNDING,
            "source": "signals[0]",
            "confidence": 0.9,
            "observed_on": "2026-09-12",
        }
    ]
    by_id = tools.contact_signals(ctx, ContactSignalsArgs(contact=contact_id))
    assert by_id == answer
    with pytest.raises(ValidationFailed, match="no contact matches 'Nobody%'"):
        tools.contact_signals(ctx, ContactSignalsArgs(contact="Nobody%"))
    with pytest.raises(ValidationFailed, match="matches more than one contact"):
        tools.contact_signals(ctx, ContactSignalsArgs(contact="a"))
