"""The offline ChatModel: valid, deterministic answers from the rendered prompt alone.

These tests render their inputs through the real assembler, as the flow that calls each
contract does, and hand the model only the messages.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from colony.adapters.offline import MODEL_NAME, OfflineChatModel
from colony.adapters.offline.model import FAMILIES
from colony.adapters.offline.prompt import parse
from colony.context.assembler import AssemblyRequest, assemble
from colony.context.budgets import load_budgets
from colony.context.tokens import counter_for
from colony.contracts import Exemplar, IcpDefinition, OrgContext
from colony.contracts.common import ANGLES, TIERS
from colony.contracts.outputs import OUTPUT_CONTRACTS, OutboundMessage
from colony.errors import ContextBudgetExceeded, ProviderError, ValidationFailed
from colony.flows.chat import tools
from colony.flows.recordings.transcripts import for_pass2
from colony.policy import check_outbound, count_sentences
from colony.policy.tiering import decide_tier
from colony.ports import ChatModel, Message, ModelRequest

DEMO = Path(__file__).resolve().parents[1] / "shared" / "colony" / "local" / "demo"
TODAY = "2026-11-20"  # the day after the Mercy Ridge discovery call


# -- demo data ---------------------------------------------------------------------------------


@cache
def _json(name: str) -> Any:
    return json.loads((DEMO / name).read_text())


def contact(external_id: str) -> dict[str, Any]:
    (found,) = [c for c in _json("contacts.json") if c["external_id"] == external_id]
    return copy.deepcopy(found)


def deal(external_id: str) -> dict[str, Any]:
    (found,) = [d for d in _json("deals.json") if d["external_id"] == external_id]
    return dict(found)


def _front_matter(text: str) -> dict[str, str]:
    match = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
    assert match
    return dict(
        (k.strip(), v.strip())
        for k, _, v in (line.partition(":") for line in match.group(1).splitlines())
    )


def kc(domain: str) -> list[dict[str, Any]]:
    """KC items as the retriever hands them over: content plus front-matter tags."""
    items = []
    for path in sorted((DEMO / "kc" / domain).glob("*.md")):
        text = path.read_text()
        tags = _front_matter(text)
        items.append({"title": tags.get("title"), "content": text, "tags": tags, "domain": domain})
    return items


@cache
def competitors() -> tuple[str, ...]:
    names: list[str] = []
    for item in kc("KC-06"):
        for name in item["tags"].get("competitors", "").split(","):
            if name.strip() and name.strip() not in names:
                names.append(name.strip())
    return tuple(names)


@cache
def transcript() -> str:
    return (DEMO / "transcripts" / "discovery_mercy_ridge.txt").read_text()


def transcript_chunks(words: int = 600) -> list[str]:
    """Whole lines, about ``words`` words per chunk, as AGT-006 pass 1 receives them."""
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for line in transcript().splitlines(keepends=True):
        current.append(line)
        count += len(line.split())
        if count >= words:
            chunks.append("".join(current))
            current, count = [], 0
    if current:
        chunks.append("".join(current))
    return chunks


SNAPSHOT = {
    "deals_by_stage": {
        "discovery": 1,
        "demo": 1,
        "proposal": 1,
        "negotiation": 1,
        "closed_won": 1,
        "closed_lost": 1,
    },
    "approval_queue_count": 7,
    "messages_sent": 42,
    "content_published": 3,
    "circuit_breaker": "closed",
    "bounce_rate": 0.014,
    "reply_rate": 0.062,
}


def outbound_context(external_id: str, angle: str = "Signal", tier: str = "T1", step: int = 1):
    return {
        "contact": contact(external_id),
        "angle": angle,
        "tier": tier,
        "step": step,
        "exemplars": kc("KC-08"),
        "competitors": list(competitors()),
    }


def call_signal_context() -> dict[str, Any]:
    return {"chunk": transcript_chunks()[5], "competitors": list(competitors())}


def realistic_context(output_name: str) -> dict[str, Any]:
    if output_name == "qualification_score":
        return {"contact": contact("P-001"), "icp": _json("icp.json"), "today": TODAY}
    if output_name == "prospect_enrichment":
        return {"contact": contact("P-013")}
    if output_name == "outbound_message":
        return outbound_context("P-001")
    if output_name == "call_signals":
        return call_signal_context()
    if output_name == "call_summary":
        signals = ask("call_signals", call_signal_context())["signals"]
        return {"signals": fitting(signals, deal("D-002")), "deal": deal("D-002")}
    if output_name == "follow_up_draft":
        return {
            "recording_summary": "Dana and Tomas need a room-level fact base before the lease "
            "notice windows open in October 2027 and the Delaware program locks in September.",
            "deal": deal("D-002"),
            "contact": contact("P-001"),
            "exemplars": kc("KC-05")[:2] + kc("KC-04")[:2],
        }
    if output_name == "content_piece":
        return {
            "topic": "Booked versus occupied exam rooms",
            "format": "linkedin_post",
            "exemplars": kc("KC-05") + kc("KC-01"),
        }
    if output_name == "deployment_kit":
        return {"deal": deal("D-001"), "exemplars": kc("KC-10")}
    if output_name == "daily_brief":
        return {"snapshot": SNAPSHOT, "prior_brief": None}
    if output_name == "conversation_summary":
        return {"turns": TURNS, "previous_summary": None}
    if output_name == "orchestrator_reply":
        return {"message": "What is in today's brief?"}
    if output_name == "missing_data":
        return {"missing_fields": ["contact.email"], "reason": "P-027 has no email address."}
    if output_name == "kc_update_candidate":
        return {
            "domain": "KC-09",
            "content": "CFOs ask for payback inside 12 months.",
            "confidence": 0.8,
        }
    raise AssertionError(output_name)


TURNS = [
    {"role": "user", "content": "Show me P-001 and D-002. I prefer short answers."},
    {
        "role": "assistant",
        "content": "P-001 scores 100 (T1). The Signal T1 draft for P-001 is awaiting approval "
        "as item 3f2a9c1e-1b2c-4d5e-8f90-123456789abc.",
    },
    {"role": "user", "content": "Approved. Let's launch the Signal T1 campaign tomorrow."},
    {"role": "user", "content": "Never email anyone on Fridays. Should we add P-002 too?"},
]


# -- plumbing ----------------------------------------------------------------------------------

MODEL = OfflineChatModel()
PROMPT_DRIVEN = sorted({*FAMILIES, "orchestrator_reply"})


def assembly(output_name: str, context: dict[str, Any]) -> AssemblyRequest:
    """The inputs rendered as the flow that calls the contract renders them."""
    if output_name == "qualification_score":
        icp = context.get("icp")
        org = OrgContext(org_name="ZoomProp", icp=IcpDefinition(**icp) if icp else None)
        entities = {"contact": context.get("contact")}
        if icp:
            entities |= {"icp_rubric": icp["rubric"]}
        task = {"today": context["today"]} if "today" in context else {"today": "(unknown)"}
        return AssemblyRequest("AGT-004", "org_test", "run-1", org, (), entities, (), task)
    if output_name == "prospect_enrichment":
        entities = {"contact": context["contact"]}
        return AssemblyRequest("AGT-003", "org_test", "run-1", OrgContext(), (), entities)
    if output_name == "outbound_message":
        task = {k: context[k] for k in ("angle", "tier", "step", "competitors") if k in context}
        task |= {"channel": context.get("channel", "email")}
        task |= {"guidance": context.get("guidance", "(none)")}
        return AssemblyRequest(
            "AGT-005",
            "org_test",
            "run-1",
            OrgContext(),
            ranked_exemplars(context["exemplars"], context["angle"], context["tier"]),
            {"contact": context["contact"]},
            (),
            task,
            thread=tuple(context.get("thread") or ()),
        )
    if output_name == "call_signals":
        task = {
            "chunk": context["chunk"],
            "segment_label": "1 of 1",
            "competitors": context.get("competitors", list(competitors())),
        }
        return AssemblyRequest("AGT-006/pass1", "org_test", "run-1", OrgContext(), task=task)
    if output_name == "call_summary":
        view = {k: context["deal"][k] for k in ("name", "stage", "value", "next_action")}
        task = {"signals_json": context["signals"], "deal_context": "from the deal entity"}
        return AssemblyRequest(
            "AGT-006/pass2", "org_test", "run-1", OrgContext(), (), {"deal": view}, (), task
        )
    if output_name == "follow_up_draft":
        return AssemblyRequest(
            "AGT-007",
            "org_test",
            "run-1",
            OrgContext(),
            [kc_exemplar(i) for i in context.get("exemplars", [])],
            {"deal": context["deal"], "contact": context["contact"]},
            (),
            {"recording_summary": context["recording_summary"]},
        )
    if output_name == "content_piece":
        task = {
            "format": context["format"],
            "topic": context["topic"],
            "competitors": context.get("competitors", list(competitors())),
        }
        exemplars = [kc_exemplar(i) for i in context["exemplars"]]
        return AssemblyRequest("AGT-008", "org_test", "run-1", OrgContext(), exemplars, task=task)
    if output_name == "deployment_kit":
        exemplars = [kc_exemplar(i) for i in context["exemplars"]]
        entities = {"deal": context["deal"]}
        return AssemblyRequest("AGT-009", "org_test", "run-1", OrgContext(), exemplars, entities)
    if output_name == "daily_brief":
        prior = context.get("prior_brief")
        summary = (
            f"Yesterday's brief (2026-11-19): {prior}"
            if prior
            else "Yesterday's brief: none on record."
        )
        return AssemblyRequest(
            "AGT-010",
            "org_test",
            "run-1",
            OrgContext(),
            (),
            {"data_snapshot": context["snapshot"], "recent_replies": "(no replies yesterday)"},
            [
                Message("assistant", summary, name="summary")
            ],  # as flows/insights/brief.py renders it
            {"brief_date": "2026-11-20"},
        )
    if output_name == "conversation_summary":
        previous = context.get("previous_summary")
        task = {
            "previous_summary": json.dumps(previous) if previous else "(none)",
            "turns": "\n".join(f"{t['role']}: {t['content']}" for t in context["turns"]),
        }  # as flows/chat/compaction.py renders them
        return AssemblyRequest("AGT-001/summary", "org_test", "run-1", OrgContext(), task=task)
    if output_name == "orchestrator_reply":  # as flows/chat/hydration.py renders a turn
        entities = {
            "daily_brief": "(no daily brief has been written today)",
            "pending_approvals": "(the approval queue is empty)",
            "recent_replies": "(no replies in the last 7 days)",
        }
        task = {"message": context["message"]}
        return AssemblyRequest(
            "AGT-001", "org_test", "run-1", OrgContext(), (), entities, task=task
        )
    if output_name in ("missing_data", "kc_update_candidate"):  # no flow calls these today
        return AssemblyRequest("AGT-003", "org_test", "run-1", OrgContext(), task=context)
    raise AssertionError(f"no flow renders {output_name}")


def kc_exemplar(item: dict[str, Any]) -> Exemplar:
    return Exemplar(
        domain=item["domain"], title=item["title"], content=item["content"], tags=item["tags"]
    )


def ranked_exemplars(items: list[dict[str, Any]], angle: str, tier: str) -> list[Exemplar]:
    """KC items best first, as retrieval for this angle and tier would rank them."""
    ranked = sorted(
        items, key=lambda i: (i["tags"].get("angle") != angle, i["tags"].get("tier") != tier)
    )
    return [
        Exemplar(domain="KC-08", title=i["title"], content=i["content"], tags=i["tags"])
        for i in ranked
    ]


def rendered(output_name: str, context: dict[str, Any]) -> tuple[Message, ...]:
    budgets = load_budgets(None)
    req = assembly(output_name, context)
    return assemble(req, budgets=budgets, counter=counter_for(MODEL_NAME)).messages


def request(output_name: str, context: dict[str, Any]) -> ModelRequest:
    """The model gets only the messages ``context`` renders to, as a flow would send them."""
    contract = OUTPUT_CONTRACTS.get(output_name)
    if output_name in PROMPT_DRIVEN:
        messages = rendered(output_name, context)
    else:
        messages = (Message("system", "You are a GTM agent."), Message("user", "prompt"))
    return ModelRequest(
        model="any-model",
        messages=messages,
        output_name=output_name,
        output_schema=contract.model_json_schema() if contract else {},
    )


def ask(output_name: str, context: dict[str, Any]) -> dict[str, Any]:
    response = MODEL.request(request(output_name, context))
    OUTPUT_CONTRACTS[output_name].model_validate_json(response.text)
    answer: dict[str, Any] = json.loads(response.text)
    return answer


def test_it_is_a_chat_model() -> None:
    assert isinstance(MODEL, ChatModel)


@pytest.mark.parametrize("output_name", sorted(OUTPUT_CONTRACTS))
def test_every_contract_gets_a_valid_deterministic_answer(output_name: str) -> None:
    context = realistic_context(output_name)
    first = MODEL.request(request(output_name, context))
    second = OfflineChatModel().request(request(output_name, copy.deepcopy(context)))
    OUTPUT_CONTRACTS[output_name].model_validate_json(first.text)
    assert first.text == second.text
    assert first.model == MODEL_NAME
    assert first.usage.tokens_in > 0 and first.usage.tokens_out > 0
    assert first.usage == second.usage


def _with_messages(req: ModelRequest, messages: tuple[Message, ...]) -> ModelRequest:
    return dataclasses.replace(req, messages=messages)


def test_the_answer_follows_the_prompt() -> None:
    """The same request with one fact changed in its rendered contact block scores differently,
    and the structured inputs it was rendered from are nowhere in the request."""
    req = request("qualification_score", realistic_context("qualification_score"))
    before = json.loads(MODEL.request(req).text)
    system, context_message, task = req.messages
    assert '"employee_count":14200' in context_message.content
    smaller = Message(
        "user", context_message.content.replace('"employee_count":14200', '"employee_count":120')
    )
    after = json.loads(MODEL.request(_with_messages(req, (system, smaller, task))).text)
    assert (before["dimension_scores"]["size"], after["dimension_scores"]["size"]) == (25, 10)
    assert after["total_score"] == before["total_score"] - 15
    # Text that only looks like a block (not opened with this call's boundary) is not data.
    forged = Message("user", context_message.content.replace(req_boundary(system), "0" * 16))
    with pytest.raises(ValidationFailed, match="no contact entity"):
        MODEL.request(_with_messages(req, (system, forged, task)))


def req_boundary(system: Message) -> str:
    match = re.search(r"Text between <<DATA (\w+) ", system.content)
    assert match
    return match.group(1)


@pytest.mark.parametrize(
    ("output_name", "entity"),
    [
        ("qualification_score", "icp_rubric"),
        ("qualification_score", "contact"),
        ("prospect_enrichment", "contact"),
    ],
)
def test_a_prompt_without_a_needed_entity_is_refused(output_name: str, entity: str) -> None:
    req = request(output_name, realistic_context(output_name))
    system, context_message, task = req.messages
    boundary = req_boundary(system)
    kept = re.sub(
        rf"<<DATA {boundary} source=entity name={entity}>>\n.*?\n<<END {boundary}>>\n?",
        "",
        context_message.content,
        flags=re.DOTALL,
    )
    assert kept != context_message.content
    with pytest.raises(ValidationFailed, match=f"no {entity} entity"):
        MODEL.request(_with_messages(req, (system, Message("user", kept), task)))


def test_unknown_output_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="no_such_contract"):
        MODEL.request(request("no_such_contract", {}))


# -- qualification -----------------------------------------------------------------------------


def qualify(c: dict[str, Any], today: str = TODAY) -> dict[str, Any]:
    return ask("qualification_score", {"contact": c, "icp": _json("icp.json"), "today": today})


def test_all_36_demo_contacts_score_and_anti_icp_ones_score_zero() -> None:
    expected: dict[str, list[str]] = _json("anti_icp_expected.json")
    scores = {}
    for c in _json("contacts.json"):
        answer = qualify(c)
        scores[c["external_id"]] = answer["total_score"]
        if c["external_id"] in expected:
            assert answer["total_score"] == 0
            assert answer["disqualifiers"] == expected[c["external_id"]]
            assert answer["recommendation"] == "disqualify"
            assert set(answer["dimension_scores"].values()) == {0}
        else:
            assert answer["disqualifiers"] == []
            assert answer["total_score"] > 0
            assert answer["total_score"] == sum(answer["dimension_scores"].values())
            assert count_sentences(answer["reasoning"]) <= 2
    assert len(scores) == 36 and sum(1 for s in scores.values() if s == 0) == 8


@pytest.mark.parametrize(
    ("external_id", "total", "recommendation"),
    [
        # KC-02's worked examples: 25 + 25 + 15 + 20 + 15, 18 + 25 + 5 + 10 + 15, ...
        ("P-001", 100, "qualify"),  # Mercy Ridge, T1
        ("P-018", 73, "qualify"),  # Seawick Surgery Centers, T2
        ("P-029", 43, "hold"),  # Ozark Highlands, T4
        ("P-026", 28, "disqualify"),  # Prairie Lantern Urgent Care, T5
    ],
)
def test_kc02_worked_examples(external_id: str, total: int, recommendation: str) -> None:
    # The offline model proposes the score only; policy turns it into the tier and outcome.
    answer = qualify(contact(external_id))
    assert answer["recommendation"] is None and "tier" not in answer["reasoning"]
    decided = decide_tier(answer["total_score"], _json("icp.json")["tiers"])
    assert (answer["total_score"], decided.recommendation) == (total, recommendation)


def test_strong_fits_outscore_weak_ones() -> None:
    # Hudson Crest: 16,800-employee AMC, Epic + ServiceNow + Workday + TRIRIGA, three signals.
    # Harvest Moon: home health (adjacent vertical), one Workday match, one August signal.
    assert qualify(contact("P-021"))["total_score"] > qualify(contact("P-033"))["total_score"]
    # Golden Orchard (health system, 4 matches, 3 signals) vs Red Mesa (240 employees, no
    # preferred tech, one old signal).
    strong, weak = qualify(contact("P-013")), qualify(contact("P-011"))
    assert strong["total_score"] > weak["total_score"]
    assert strong["dimension_scores"] == {
        "size": 25,
        "vertical": 25,
        "tech_stack": 15,
        "signals": 20,
        "timing": 15,
    }
    assert weak["dimension_scores"] == {
        "size": 10,
        "vertical": 25,
        "tech_stack": 0,
        "signals": 10,
        "timing": 5,
    }
    assert "vertical" in weak["reasoning"] and "tech stack" in weak["reasoning"]


def test_timing_is_relative_to_today() -> None:
    north_fork = contact("P-004")  # one signal, 2026-08-09
    assert qualify(north_fork, "2026-11-20")["dimension_scores"]["timing"] == 5  # 103 days
    assert qualify(north_fork, "2026-10-01")["dimension_scores"]["timing"] == 15  # 53 days
    no_signals = contact("P-035")
    assert qualify(no_signals)["dimension_scores"]["timing"] == 0


def test_dimensions_are_capped_at_their_weight() -> None:
    c = contact("P-001")
    c["enrichment"]["tech_stack"] = ["Epic", "Cerner", "ServiceNow", "Archibus", "Workday"]
    c["signals"] = c["signals"] * 2  # six signals: 60 points before the cap (x3 is over budget)
    dims = qualify(c)["dimension_scores"]
    assert dims["tech_stack"] == 15 and dims["signals"] == 20


def test_qualification_refuses_bad_inputs() -> None:
    icp = copy.deepcopy(_json("icp.json"))
    icp["anti_icp_rules"].append({"id": "AICP-99", "field": "email", "op": "matches"})
    with pytest.raises(ValidationFailed, match="AICP-99"):
        MODEL.request(
            request(
                "qualification_score", {"contact": contact("P-001"), "icp": icp, "today": TODAY}
            )
        )
    with pytest.raises(ValidationFailed, match="states no date"):
        MODEL.request(
            request("qualification_score", {"contact": contact("P-001"), "icp": _json("icp.json")})
        )
    with pytest.raises(ValidationFailed, match="no icp_rubric entity"):
        MODEL.request(request("qualification_score", {"contact": contact("P-001"), "today": TODAY}))


# -- enrichment --------------------------------------------------------------------------------


def test_enrichment_reuses_the_contacts_own_signals() -> None:
    for external_id in ("P-001", "P-014", "P-024"):
        c = contact(external_id)
        answer = ask("prospect_enrichment", {"contact": c})
        assert answer["signals"] == [
            {
                "type": s["type"],
                "detail": s["detail"],
                "quote": s["detail"],  # the contact's own words, where they were read
                "source": f"signals[{i}]",
                "confidence": 0.9 if s.get("date") else 0.6,
                "observed_on": s.get("date"),
            }
            for i, s in enumerate(c["signals"])
        ]
        assert f"{c['enrichment']['employee_count']:,}" in answer["summary"]
        assert c["company"] in answer["summary"]
    assert ask("prospect_enrichment", {"contact": contact("P-020")})["persona"] == "CFO"


# -- outbound ----------------------------------------------------------------------------------

OUTBOUND_CONTACTS = ("P-001", "P-002", "P-008", "P-013", "P-021", "P-030", "P-036")


@pytest.mark.parametrize("external_id", OUTBOUND_CONTACTS)
def test_outbound_messages_pass_const_006_for_every_angle_and_tier(external_id: str) -> None:
    c = contact(external_id)
    details = [s["detail"] for s in c["signals"]]
    newest = max(c["signals"], key=lambda s: s["date"])
    first_name = c["name"].split()[0]
    for angle in ANGLES:
        for tier in TIERS:
            for step in (1, 2):
                answer = ask("outbound_message", outbound_context(external_id, angle, tier, step))
                message = OutboundMessage.model_validate(answer)
                problems = check_outbound(
                    message, tier=tier, contact_signals=details, competitors=competitors()
                )
                assert problems == [], (angle, tier, step, problems)
                assert message.angle_used == angle
                assert message.signal_referenced == newest["detail"]
                assert message.body.startswith(f"Hi {first_name},")


def test_outbound_uses_the_exemplar_sign_off() -> None:
    t1 = ask("outbound_message", outbound_context("P-001", "Pain", "T1"))
    t3 = ask("outbound_message", outbound_context("P-001", "Pain", "T3"))
    assert t1["body"].endswith("\nMarcus") and t3["body"].endswith("\nMarcus, ZoomProp")


def test_outbound_redacts_a_competitor_named_in_the_signal() -> None:
    context = outbound_context("P-032", "Insight", "T2")
    context["contact"]["signals"][0]["detail"] = (
        "Cedar Plains Health issued an RFP to replace its CareSpace Analytics occupancy "
        "sensors across 12 clinics with a scheduling-aware platform."
    )
    answer = ask("outbound_message", context)
    assert "CareSpace" not in answer["body"] and "another vendor" in answer["body"]
    message = OutboundMessage.model_validate(answer)
    details = [s["detail"] for s in context["contact"]["signals"]]
    assert (
        check_outbound(message, tier="T2", contact_signals=details, competitors=competitors()) == []
    )


def test_outbound_redacts_only_the_competitors_its_prompt_names() -> None:
    """The competitor list is in the prompt (the competitors block), not beside it."""
    context = outbound_context("P-032", "Insight", "T2")
    context["contact"]["signals"][0]["detail"] = (
        "Cedar Plains Health issued an RFP to replace its CareSpace Analytics occupancy "
        "sensors across 12 clinics with a scheduling-aware platform."
    )
    unnamed = ask("outbound_message", context | {"competitors": ["FacilityIQ"]})
    assert "CareSpace Analytics" in unnamed["body"]  # the flow's CONST-006 check catches it
    del context["competitors"]  # a required template field: the assembler refuses first
    with pytest.raises(ValidationFailed, match=r"lacks required field.*competitors"):
        MODEL.request(request("outbound_message", context))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda c: c.update(signals=[]), "contact.signals"),
        (lambda c: c.pop("name"), "contact.name"),
    ],
)
def test_outbound_reports_missing_data(change: Any, field: str) -> None:
    """CONST-004: a value the draft needs that the prompt lacks is named, never guessed."""
    context = outbound_context("P-035" if field == "contact.signals" else "P-001")
    change(context["contact"])
    answer = json.loads(MODEL.request(request("outbound_message", context)).text)
    assert answer["kind"] == "missing_data" and answer["missing_fields"] == [field]


def test_outbound_refuses_unknown_angle_or_tier() -> None:
    for key, value in (("angle", "Spray"), ("tier", "T6")):
        context = outbound_context("P-001") | {key: value}
        with pytest.raises(ValidationFailed, match=key):
            MODEL.request(request("outbound_message", context))


# -- call signals and summary ------------------------------------------------------------------


def test_call_signals_quote_the_transcript_and_cover_the_signal_types() -> None:
    chunks = transcript_chunks()
    assert len(chunks) >= 8
    seen: Counter[str] = Counter()
    for chunk in chunks:
        signals = ask("call_signals", {"chunk": chunk})["signals"]
        keys = [(s["type"], s["quote"]) for s in signals]
        assert len(keys) == len(set(keys))
        for signal in signals:
            assert signal["quote"] in chunk
            assert 0.5 <= signal["confidence"] <= 0.95
            seen[signal["type"]] += 1
        positions = [chunk.index(s["quote"]) for s in signals]
        assert positions == sorted(positions)
    assert len(seen) >= 5, seen
    assert len(seen) == 6, seen  # the demo call has all six


def test_call_signals_find_the_key_moments() -> None:
    quotes: dict[str, list[str]] = {}
    for chunk in transcript_chunks():
        for signal in ask("call_signals", {"chunk": chunk})["signals"]:
            quotes.setdefault(signal["type"], []).append(signal["quote"])
    assert any("three hundred thousand penciled" in q for q in quotes["budget_signals"])
    assert any("LeaseLogic Health" in q for q in quotes["competitor_mentions"])
    assert any("CareSpace Analytics" in q for q in quotes["competitor_mentions"])
    assert any("roadmap" in q for q in quotes["product_gaps"])
    assert any("CFO" in q for q in quotes["stakeholder_signals"])
    assert any("April 15th" in q for q in quotes["timeline_signals"])
    assert any("skeptical" in q for q in quotes["objection_signals"])


def test_call_signals_use_the_competitors_given() -> None:
    chunk = "[00:01:00] Dana: We also looked at Acme Spaces and at FacilityIQ for the clinics."
    default = ask("call_signals", {"chunk": chunk})["signals"]
    given = ask("call_signals", {"chunk": chunk, "competitors": ["Acme Spaces"]})["signals"]
    assert [s["type"] for s in default] == ["competitor_mentions"]  # FacilityIQ: the KC-06 list
    assert [s["type"] for s in given] == ["competitor_mentions"]  # Acme Spaces only
    assert ask("call_signals", {"chunk": "[00:01:00] Dana: Thanks, talk soon everyone."}) == {
        "signals": []
    }


def fitting(signals: list[dict[str, Any]], deal_row: dict[str, Any]) -> list[dict[str, Any]]:
    """The strongest signals that fit pass 2's task budget, as the recording flow sends them."""
    ranked = for_pass2(signals)
    while True:
        try:
            rendered("call_summary", {"signals": ranked, "deal": deal_row})
            return ranked
        except ContextBudgetExceeded:
            ranked = ranked[: max(0, len(ranked) - max(1, len(ranked) // 8))]


def test_call_summary_is_three_extractive_sentences_with_grounded_updates() -> None:
    signals = []
    for chunk in transcript_chunks():
        signals += ask("call_signals", {"chunk": chunk})["signals"]
    signals = fitting(signals, deal("D-002"))
    assert any(s["type"] == "objection_signals" for s in signals)
    answer = ask("call_summary", {"signals": signals, "deal": deal("D-002")})
    assert count_sentences(answer["executive_summary"]) == 3
    assert len(re.findall(r"(?<=[.!?\"])\s+(?=[A-Z])", answer["executive_summary"])) >= 2
    crm = answer["crm_updates"]
    assert crm["close_date"] is None  # no quote carries a full signing date
    assert crm["deal_stage"] is None
    assert crm["next_action"] and "timeline" in crm["next_action"]
    objections = {s["quote"]: s["confidence"] for s in signals if s["type"] == "objection_signals"}
    assert len(answer["kc_updates"]) == len(objections)
    for candidate in answer["kc_updates"]:
        assert candidate["domain"] == "KC-09"
        (quote,) = [q for q in objections if q in candidate["content"]]
        assert candidate["confidence"] == objections[quote]


def test_call_summary_takes_a_close_date_only_from_a_dated_quote() -> None:
    signals = [
        {
            "type": "timeline_signals",
            "quote": "We expect to sign the agreement by April 30, 2027.",
            "confidence": 0.9,
        },
        {"type": "budget_signals", "quote": "We have $300K penciled in.", "confidence": 0.9},
    ]
    answer = ask("call_summary", {"signals": signals, "deal": deal("D-002")})
    assert answer["crm_updates"]["close_date"] == "2027-04-30"
    undated = [dict(signals[0], quote="We expect to sign the agreement by the end of April.")]
    answer = ask("call_summary", {"signals": undated, "deal": deal("D-002")})
    assert answer["crm_updates"]["close_date"] is None
    assert count_sentences(answer["executive_summary"]) == 3


def test_call_summary_without_signals() -> None:
    answer = ask("call_summary", {"signals": [], "deal": deal("D-004")})
    assert count_sentences(answer["executive_summary"]) == 3
    assert answer["crm_updates"] == {"deal_stage": None, "next_action": None, "close_date": None}
    assert answer["kc_updates"] == []


# -- daily brief -------------------------------------------------------------------------------


def _brief_text(brief: dict[str, str]) -> str:
    return " ".join(brief.values())


def test_daily_brief_copies_the_snapshot_and_stays_short() -> None:
    brief = ask("daily_brief", {"snapshot": SNAPSHOT, "prior_brief": None})
    text = _brief_text(brief)
    assert len(text.split()) <= 250
    for number in ("7", "42", "3", "0.014", "1.4%", "0.062", "6.2%"):
        assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", text), number
    assert "4 open deals" in brief["pipeline"] and "negotiation 1" in brief["pipeline"]
    assert "prior brief" not in text


def test_daily_brief_continuity_with_the_prior_brief() -> None:
    prior = "Alerts: circuit breaker closed; bounce rate 2.1% (0.021). 5 items awaiting approval."
    brief = ask("daily_brief", {"snapshot": SNAPSHOT, "prior_brief": prior})
    assert "bounce rate is down from 2.1%" in _brief_text(brief)
    prior_queue = "Queue: 9 items awaiting approval."
    brief = ask("daily_brief", {"snapshot": SNAPSHOT, "prior_brief": prior_queue})
    assert "approval queue is down from 9" in _brief_text(brief)
    brief = ask("daily_brief", {"snapshot": SNAPSHOT, "prior_brief": "A quiet day overall."})
    assert "prior brief" in _brief_text(brief)


def test_daily_brief_flags_an_open_breaker_and_refuses_missing_numbers() -> None:
    brief = ask(
        "daily_brief", {"snapshot": SNAPSHOT | {"circuit_breaker": "open"}, "prior_brief": None}
    )
    assert "open" in brief["alerts"] and "circuit breaker" in brief["todays_priorities"]
    snapshot = {k: v for k, v in SNAPSHOT.items() if k != "messages_sent"}
    with pytest.raises(ValidationFailed, match="messages_sent"):
        MODEL.request(request("daily_brief", {"snapshot": snapshot, "prior_brief": None}))


# -- conversation summary ----------------------------------------------------------------------


def test_the_orchestrator_asks_for_research_of_the_website_a_message_names() -> None:
    """As AGT-001's turn is sent: the rendered prompt, and the chat's tool definitions."""
    offered = tuple(d.model_dump() for d in tools.definitions())

    def calls(message: str) -> list[tuple[str, dict[str, Any]]]:
        req = dataclasses.replace(
            request("orchestrator_reply", {"message": message}), tools=offered
        )
        return [(c.name, dict(c.arguments)) for c in MODEL.request(req).tool_calls]

    research = "research_company"
    assert calls("research brightsmile.com") == [
        (research, {"domain": "brightsmile.com", "force": False})
    ]
    assert calls("Look up acme.example's website") == [
        (research, {"domain": "acme.example", "force": False})
    ]
    assert calls("Research https://www.brightsmile.com/about again.") == [
        (research, {"domain": "https://www.brightsmile.com/about", "force": True})
    ]
    assert calls("What does our research say about pricing?") == []  # no website named
    alone = request("orchestrator_reply", {"message": "research brightsmile.com"})
    assert MODEL.request(alone).tool_calls == ()  # a tool it is not offered is never called


def test_conversation_summary_extracts_and_folds() -> None:
    previous = {
        "decisions": ["Paused campaign C-001."],
        "entity_ids": ["C-001", "P-001"],
        "pending_items": [],
        "user_preferences": ["I prefer short answers."],
    }
    answer = ask("conversation_summary", {"turns": TURNS, "previous_summary": previous})
    assert answer["entity_ids"] == [
        "C-001",
        "P-001",
        "D-002",
        "3f2a9c1e-1b2c-4d5e-8f90-123456789abc",
        "P-002",
    ]
    assert answer["decisions"][0] == "Paused campaign C-001."
    assert any("launch" in d for d in answer["decisions"])
    assert not any(d.endswith("?") for d in answer["decisions"])
    assert any("awaiting approval" in p for p in answer["pending_items"])
    assert answer["user_preferences"] == [
        "I prefer short answers.",
        "Never email anyone on Fridays.",
    ]


def test_conversation_summary_stays_under_budget() -> None:
    turns = [
        {"role": "user", "content": f"I prefer option {i} always. Approved P-{i:03d} for launch."}
        for i in range(150)  # as many as fit the summary's 3000-token task budget
    ]
    answer = ask("conversation_summary", {"turns": turns, "previous_summary": None})
    assert len(json.dumps(answer)) / 4 <= 300
    assert "P-149" in answer["entity_ids"]  # the newest items survive


# -- the rest ----------------------------------------------------------------------------------


def test_follow_up_content_and_kit_are_grounded_in_their_inputs() -> None:
    follow_up = ask("follow_up_draft", realistic_context("follow_up_draft"))
    assert follow_up["body"].startswith("Hi Dana,")
    assert deal("D-002")["next_action"] in follow_up["body"]
    assert "Case Study - Cascadia Physician Partners" in follow_up["body"]

    def norm(text: str) -> str:
        return " ".join(re.sub(r"[^a-z0-9%$]+", " ", text.casefold()).split())

    sources = norm(" ".join(item["content"] for item in kc("KC-05") + kc("KC-01")))
    for piece_format in ("linkedin_post", "blog_post", "one_pager", "email_newsletter"):
        context = realistic_context("content_piece") | {"format": piece_format}
        piece = ask("content_piece", context)
        assert piece["format"] == piece_format
        lines = [ln.strip("-# ").strip() for ln in piece["body"].splitlines() if ln.strip()]
        extracted = [ln for ln in lines if len(ln.split()) >= 8 and not ln.startswith("Reply")]
        assert extracted and all(norm(ln) in sources for ln in extracted), extracted

    kit = ask("deployment_kit", realistic_context("deployment_kit"))
    headings = [s["heading"] for s in kit["sections"]]
    assert headings[0] == "Deal summary" and "$312,000" in kit["sections"][0]["body"]
    # One section per playbook the prompt carries: AGT-009's kc budget (the default 1000 tokens)
    # keeps only the best of the three KC-10 playbooks, and the model sees no more.
    shown = parse(rendered("deployment_kit", realistic_context("deployment_kit"))).exemplars()
    assert headings[1:] == [b.get("title") for b in shown]
    assert headings[1:] == [item["title"] for item in kc("KC-10")][: len(shown)]


def test_trivial_contracts_refuse_empty_context() -> None:
    with pytest.raises(ValidationFailed, match="missing_fields"):
        MODEL.request(request("missing_data", {}))
    with pytest.raises(ValidationFailed, match="domain"):
        MODEL.request(request("kc_update_candidate", {"content": "x"}))
