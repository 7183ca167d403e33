"""AGT-003's signals are kept (issue 19 item 1): stored per contact with their provenance in
the real embedded PostgreSQL by a real campaign run, readable by AGT-001's chat tool, given
to AGT-004 and AGT-005 through the assembler within their entity budgets (the weakest cut
first, and the cut recorded in the call's provenance), and shown on the approval card with
their provenance.

The offline model reads only its prompt: the signals it returns are the contact entity's own
(``colony.adapters.offline.prospects``), each with its quote, source and confidence.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from colony.context.assembler import AssemblyRequest, assemble
from colony.context.budgets import load_budgets
from colony.context.tokens import counter_for
from colony.contracts import IcpDefinition, OrgContext
from colony.contracts.chat import ContactSignalsArgs
from colony.errors import ValidationFailed
from colony.flows.approvals import approval_queue
from colony.flows.campaigns import campaign
from colony.flows.chat import tools
from colony.llm.runner import StructuredRunner
from colony.local.demo import read_json
from colony.observability.tracing import TracedChatModel
from colony.store import fetch_all, fetch_one
from colony.store.campaigns import signals
from colony.testing.hostile import RecordingTracer
from colony.testing.inline import run_until_idle
from tests.conftest import PgDB
from tests.test_campaign_flow import ORG, make_deps

pytestmark = pytest.mark.covers("AGT-003", "AGT-001", "ENT-002")

# Nine signals, each of a kind AGT-003 keeps and in words of its own (an outbound message
# must reference exactly one), some undated (weaker: confidence 0.6), and together more than
# AGT-004's entity section can take.
NINE = [
    {"type": kind, "detail": detail, **({"date": day} if day else {})}
    for kind, detail, day in [
        (
            "expansion",
            "Wilmington flagship adds two operating rooms for total joint cases, doubling"
            " orthopedic block time after the hospital partner shifted outpatient volume.",
            "2026-09-10",
        ),
        (
            "hiring",
            "Posting for a director of perioperative services who will own throughput, block"
            " scheduling and turnover metrics across nine ambulatory centers.",
            "2026-08-11",
        ),
        (
            "funding",
            "Minority investment from a physician-owned platform earmarked for capital"
            " projects, including imaging suites and recovery bay renovations.",
            "2026-10-12",
        ),
        (
            "leadership_change",
            "Former Novant executive Priya Raman becomes chief operating officer, promising"
            " a portfolio review of underused procedure rooms within her first quarter.",
            None,
        ),
        (
            "consolidation",
            "Gastroenterology practices in Leland and Shallotte merge into one combined"
            " endoscopy site, closing the older building when its equipment ages out.",
            "2026-07-14",
        ),
        (
            "lease_expiry",
            "Myrtle Beach ophthalmology clinic lease ends next spring; landlord proposed a"
            " steep renewal, prompting a search for alternative medical office space.",
            None,
        ),
        (
            "tech_adoption",
            "ServiceNow rollout now covers facilities work orders, giving managers ticket"
            " data about broken equipment, room downtime and maintenance backlogs.",
            "2026-06-16",
        ),
        (
            "expansion",
            "Conway ophthalmology center planned for late 2027 with four laser rooms, pending"
            " certificate-of-need approval from South Carolina regulators this winter.",
            "2026-11-17",
        ),
        (
            "hiring",
            "Twelve pre-op nursing vacancies advertised at Florence and Sumter, citing"
            " patient growth that outpaced staffing since the spring.",
            None,
        ),
    ]
]


FUNDING = (
    "Seawick Surgery Centers took a minority investment from a physician-owned ASC platform"
    " to add total joint capability at two centers."
)


def _enrich(deps: Any, external_id: str, tier: str = "T1") -> str:
    with deps.db.transaction(ORG) as cur:
        found = fetch_one(cur, "SELECT id FROM contacts WHERE external_id = %s", (external_id,))
    assert found is not None
    campaign_id = campaign.create_campaign(
        deps, ORG, name="signals", angle="Signal", tier=tier, contact_ids=[found["id"]]
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


def test_agt004_is_given_the_strongest_signals_its_entity_budget_holds() -> None:
    """Pure: nine signals overflow AGT-004's entity section; the weakest are cut (lowest
    confidence, then oldest), never below one, and the call's provenance says so."""
    contact = {k: v for k, v in read_json("contacts.json")[0].items() if k != "signals"}
    icp = read_json("icp.json")
    stored = [
        {
            "type": s["type"],
            "detail": s["detail"],
            "quote": s["detail"],
            "source": f"signals[{n}]",
            "confidence": 0.9 if s.get("date") else 0.6,
            "observed_on": s.get("date"),
        }
        for n, s in enumerate(NINE)
    ]
    budgets, counter = load_budgets(), counter_for("offline")
    request = AssemblyRequest(
        "AGT-004",
        ORG,
        "run-signals",
        OrgContext(org_name="ZoomProp", icp=IcpDefinition(**icp)),
        (),
        {"contact": contact, "icp_rubric": icp["rubric"]},
        (),
        {"today": "2026-12-01"},
        signals=list(reversed(stored)),  # any order in: ranked by the assembler
    )
    out = assemble(request, budgets=budgets, counter=counter)
    assert out.account["entity"] <= budgets.for_profile("AGT-004").entity
    kept = out.provenance["signals"]
    cut = out.trimmed["signals_dropped"]
    assert 1 <= len(kept) < 9 and cut == 9 - len(kept)
    assert out.provenance["budget_cuts"]["signals_dropped"] == cut
    # the strongest first: dated (0.9) newest first, then the undated (0.6) in the order given
    ranked = sorted(
        (s for s in stored if s["observed_on"]), key=lambda s: s["observed_on"], reverse=True
    ) + [s for s in reversed(stored) if not s["observed_on"]]
    assert kept == [
        {k: s[k] for k in ("source", "confidence", "observed_on") if s[k]}
        for s in ranked[: len(kept)]
    ]
    prompt = "\n".join(m.content for m in out.messages)
    shown = [s for s in stored if s["detail"] in prompt]
    assert {s["source"] for s in shown} == {k["source"] for k in kept}
    # the quote is shown only where it says more than the detail; the rest of the provenance is
    assert '"source":"signals[2]"' in prompt and '"confidence":0.9' in prompt


def test_a_campaign_gives_agt004_and_005_the_stored_signals_and_the_card_shows_them(
    testdb: PgDB,
) -> None:
    deps = make_deps(testdb)
    with deps.db.transaction(ORG) as cur:
        cur.execute(
            "UPDATE contacts SET signals = %s::jsonb WHERE external_id = 'P-018'",
            (json.dumps(NINE),),
        )
    contact_id = _enrich(deps, "P-018")
    with deps.db.transaction(ORG) as cur:
        stored = signals.for_contact(cur, contact_id)
        calls = {
            r["agent_id"]: r["provenance"]
            for r in fetch_all(
                cur,
                "SELECT agent_id, provenance FROM llm_calls WHERE agent_id IN"
                " ('AGT-004', 'AGT-005') ORDER BY id",
            )
        }
    assert len(stored) == 9
    # AGT-004 got the strongest its budget holds, and the cut is on its record
    qualification = calls["AGT-004"]
    kept = qualification["signals"]
    assert qualification["budget_cuts"]["signals_dropped"] == 9 - len(kept) > 0
    # (how many fit moves by a signal with the prompt's random block boundary: its tokens vary)
    assert kept == [
        {k: s[k] for k in ("source", "confidence", "observed_on") if s[k] is not None}
        for s in stored[: len(kept)]
    ]
    # AGT-005 drafted from the stored signals (the newest, of those it was given)
    drafted = calls["AGT-005"]["signals"]
    assert drafted and drafted[0] == kept[0]
    listing = approval_queue.pending_cards(deps, ORG, detail=True, kind="outbound_message")
    card = next(i for i in listing["items"] if i["detail"]["prospect"]["name"] == "Priscilla Vance")
    shown = card["detail"]["signals"]
    assert shown == [
        {
            "detail": s["detail"],
            "quote": s["quote"],
            "source": s["source"],
            "confidence": s["confidence"],
            "observed_on": s["observed_on"],
        }
        for s in stored
    ]
    assert card["detail"]["signal_used"] in [s["detail"] for s in shown]
    assert card["detail"]["checks"][0]["ok"] is True


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
