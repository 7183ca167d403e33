"""AGT-003's signals are kept (issue 19 item 1): stored per contact with their provenance in
the real embedded PostgreSQL by a real campaign run, and readable by AGT-001's chat tool.

The offline model reads only its prompt: the signals it returns are the contact entity's own
(``colony.adapters.offline.prospects``), each with its quote, source and confidence.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from colony.contracts.chat import ContactSignalsArgs
from colony.errors import ValidationFailed
from colony.flows import campaign
from colony.flows.chat import tools
from colony.llm.runner import StructuredRunner
from colony.observability.tracing import TracedChatModel
from colony.store import fetch_all, fetch_one, signals
from colony.testing.hostile import RecordingTracer
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


INVENTED = "Seawick signed a twelve million dollar budget for a new campus."


class Inventing:
    """The offline model, plus one signal in every AGT-003 answer whose quote the contact's
    data does not contain (as a model that invents would); no real model runs here."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def request(self, request: Any) -> Any:
        response = self.inner.request(request)
        if request.output_name != "prospect_enrichment":
            return response
        data = json.loads(response.text)
        invented = {"type": "funding", "detail": "a new campus", "quote": INVENTED}
        data["signals"] = [*data["signals"], invented]
        return replace(response, text=json.dumps(data))


@pytest.mark.covers("CONST-004")
def test_a_signal_whose_quote_the_contacts_data_lacks_is_dropped_and_counted(
    testdb: PgDB,
) -> None:
    base = make_deps(testdb)
    tracer = RecordingTracer()
    chat = TracedChatModel(Inventing(base.llm.chat), tracer)
    llm = replace(base.llm, chat=chat, runner=StructuredRunner(chat), tracer=tracer)
    deps = replace(base, llm_deps=llm)
    contact_id = _enrich(deps, "P-018")
    with deps.db.transaction(ORG) as cur:
        quotes = [s["quote"] for s in signals.for_contact(cur, contact_id)]
        (step,) = fetch_all(
            cur,
            "SELECT output FROM run_steps WHERE step_key = %s",
            (campaign.step_key("AGT-003", contact_id),),
        )
    assert quotes == [FUNDING]  # the invented one is gone; the real one, verbatim, kept
    assert step["output"]["quotes_dropped"] == 1
    (call,) = [m for r, m in tracer.calls if r.output_name == "prospect_enrichment"]
    assert tracer.annotations == [(call["call_id"], {"quotes_dropped": 1})]
