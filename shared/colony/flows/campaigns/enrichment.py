"""AGT-003 Prospect Enrichment: summarise a contact from its own data and from what research
stored about its company (``colony.flows.research``), keep its signals with their provenance
(``colony.store.campaigns.signals``), fill the firmographics the pages state, and hand it on
to qualification.

Where research is on (``Settings.research``, and the org's ``research.enabled``), a contact
whose company has a domain that was not researched within the freshness window waits for
it: the handoff asks research to run and is published again when research ends
(``research.request`` with a waiter), so AGT-003 reads the pages once they are stored. A
company with no website, or none that answered, goes on with what it has, and says so
(``enrichment.research``: the domain and how research ended).

Grounding: every signal and fact AGT-003 keeps quotes its source word for word (whitespace
normalised, ``policy.grounding.verbatim``), at least ``MIN_QUOTE_WORDS`` words. A source
``S<n>`` is a passage of a stored page: the quote must be in that passage, and the kept
signal names the page's URL and the passage's date (ours, not the model's). Any other source
is the contact's own imported data, never a field this system wrote (its score, its earlier
summary). What fails is dropped, and the count (``quotes_dropped``) is kept in the step's
output and on the call's trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from colony.contracts import HandoffEnvelope
from colony.contracts.outputs.campaigns import ProspectEnrichment
from colony.flows.campaigns.campaign import handoff, handoff_event, step_key
from colony.flows.campaigns.specialist import assembly_request, handle_handoff, load_contact
from colony.flows.deps import FlowDeps
from colony.flows.research import requests as research
from colony.flows.research.passages import passages_for
from colony.llm.agent_call import call_agent
from colony.policy.grounding import verbatim
from colony.policy.outbound import signal_matches
from colony.registry.functions import AGENT_TOPICS
from colony.runtime.steps import step, stored
from colony.runtime.transport import message
from colony.store import orgdata
from colony.store.campaigns import campaigns, signals
from colony.store.db import Row
from colony.store.research import jobs
from colony.store.tenants import org_admin

MIN_QUOTE_WORDS = 3
# What this system wrote onto a contact: never evidence for a quote.
SYSTEM_FIELDS = frozenset({"icp_score", "icp_disqualifiers", "icp_recommendation", "updated_at"})
SYSTEM_ENRICHMENT = frozenset({"summary", "persona", "research", "research_facts"})
SIGNAL_QUERY = (
    "expansion new office opening, hiring job openings, leadership change appointment,"
    " funding, lease expiry, consolidation acquisition, technology adoption platform,"
    " employees, offices, locations"
)


def enrich(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """The ``enrichment`` function's Pub/Sub handler."""
    return handle_handoff(deps, event, event_id, "AGT-003", _enrich)


def _enrich(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, envelope: HandoffEnvelope
) -> str:
    contact = load_contact(deps, org, contact_id)
    domain = research.domain_of(contact.get("company_domain"))
    key = step_key("AGT-003", contact_id)
    if domain and _researching(deps, org) and stored(deps.db, org, run_id, key) is None:
        data, attributes = message(handoff_event(org, campaign, run_id, contact_id, "AGT-003"))
        waiter = research.Waiter(
            key=f"{run_id}:{contact_id}",
            topic=AGENT_TOPICS["AGT-003"],
            data=data.decode(),
            attributes=attributes,
        )
        state = research.request(
            deps, org, domain, requested_by=f"campaign:{campaign['id']}", waiter=waiter
        )
        if state != "ready":
            return "researching"  # published again when the company's research ends

    def compute() -> dict[str, Any]:
        today = deps.clock().date()
        with deps.db.transaction(org) as cur:
            icp = orgdata.active_icp(cur) or {}
            job = jobs.get(cur, domain, 0) if domain else None
        query = " ".join(filter(None, (str(icp.get("description") or ""), SIGNAL_QUERY)))
        passages = passages_for(deps, org, domain, query, today=today) if domain else []
        task = {"today": today.isoformat(), "icp_vocabulary": vocabulary(icp)}
        entities = {"contact": contact}
        request = assembly_request(
            deps, org, run_id, "AGT-003", envelope, entities, task, sources=passages
        )
        result = call_agent(deps.llm, request)
        assert isinstance(result.output, ProspectEnrichment)
        output = result.output.model_dump(mode="json")
        found, dropped = grounded(output.get("signals") or [], contact, passages)
        output["signals"] = one_per_event(found)
        output["facts"], facts_dropped = grounded(output.get("facts") or [], contact, passages)
        deps.llm.annotate(result.call_id, quotes_dropped=dropped + facts_dropped)
        output["research"] = researched(domain, job)
        return {**output, "quotes_dropped": dropped + facts_dropped}

    def apply(cur: Any, output: Mapping[str, Any]) -> None:
        extra: dict[str, Any] = {"summary": output["summary"], "persona": output.get("persona")}
        extra["research"] = output.get("research")
        extra.update(firmographics(contact, output.get("facts") or []))
        campaigns.add_enrichment(cur, contact_id, extra)
        kept = [{**s, "quote": s["quote"]} for s in output.get("signals") or []]
        signals.replace_for_contact(cur, org, contact_id, kept, run_id=run_id)

    step(deps.db, org, run_id, key, compute, apply)
    handoff(deps, org, campaign, run_id, contact_id, "AGT-004")
    return "enriched"


def _researching(deps: FlowDeps, org: str) -> bool:
    """Research is on for the deployment (``Settings.research``) and for the org (its
    settings: ``research.enabled``)."""
    if not deps.settings.research:
        return False
    with deps.db.transaction(org) as cur:
        return org_admin.research_enabled(cur)


def vocabulary(icp: Mapping[str, Any]) -> dict[str, list[str]]:
    """The ICP's own labels a fact's value must use (AGT-004 matches them as written)."""
    rubric = icp.get("rubric") or {}
    vertical = rubric.get("vertical") or {}
    tech = rubric.get("tech_stack") or {}
    return {
        "vertical": [*(vertical.get("preferred") or []), *(vertical.get("adjacent") or [])],
        "tech_stack": list(tech.get("preferred") or []),
    }


def researched(domain: str | None, job: Row | None) -> dict[str, Any]:
    """What the card says about research: the domain, and how its last pass ended."""
    if domain is None:
        return {"domain": None, "outcome": "no_domain"}
    if job is None or job["status"] != "done":
        return {"domain": domain, "outcome": "not_researched"}
    finished = job["finished_at"]
    return {
        "domain": domain,
        "outcome": job["outcome"],
        "finished_at": finished.isoformat() if finished else None,
    }


def firmographics(contact: Mapping[str, Any], facts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The enrichment keys the facts fill, where the contact's own data has none (an
    imported value is the customer's: research never overwrites it), and the facts kept."""
    own = contact.get("enrichment") or {}
    filled: dict[str, Any] = {}
    for fact in facts:
        field, value = fact["field"], str(fact["value"])
        if field in ("employee_count", "office_count"):
            key = "employee_count" if field == "employee_count" else "facilities_count"
            digits = value.replace(",", "")
            if digits.isdigit() and own.get(key) is None and key not in filled:
                filled[key] = int(digits)
        elif field == "vertical" and not own.get("vertical") and "vertical" not in filled:
            filled["vertical"] = value
        elif field == "tech_stack" and not own.get("tech_stack"):
            filled.setdefault("tech_stack", []).append(value)
    if facts:
        filled["research_facts"] = [dict(f) for f in facts]
    return filled


def grounded(
    found: Sequence[Mapping[str, Any]],
    contact: Mapping[str, Any],
    passages: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], int]:
    """The signals (or facts) whose quote holds, with their source resolved, and how many
    were dropped (module docstring). A web source becomes the page's URL, and a signal's
    ``observed_on`` the passage's date."""
    by_ref = {str(p["ref"]): p for p in passages}
    own = "\n".join(_texts(_imported(contact)))
    kept: list[dict[str, Any]] = []
    for item in found:
        quote = str(item.get("quote") or "")
        if len(quote.split()) < MIN_QUOTE_WORDS:
            continue
        passage = by_ref.get(str(item.get("source") or "").strip())
        if passage is not None:
            if not verbatim([item], passage["text"])[0]:
                continue
            resolved = {**item, "source": passage["url"], "source_ref": passage["ref"]}
            if "observed_on" in item or "type" in item:
                resolved["observed_on"] = passage["published"]
                resolved["fetched_on"] = passage["fetched"]
            kept.append(resolved)
        elif verbatim([item], own)[0]:
            kept.append(dict(item))
    return kept, len(found) - len(kept)


def one_per_event(signals: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The signals with one kept per event: a news item is read on its article, in the feed,
    on the news index and in its press release, and they are one signal (the first, the
    best ranked), not several AGT-005 could not tell apart (CONST-006 wants exactly one
    referenced). An event is a type on a day, or a type whose quote holds another's (or is
    held by it); and a signal whose detail CONST-006 would match to a kept one's, of any
    type (a job board's postings in one city: "Hiring a Medical Assistant in Omaha, NE."
    and "Hiring a Registered Nurse in Omaha, NE." name one hiring event to it), is not
    kept either: a draft referencing it would match two."""
    kept: list[dict[str, Any]] = []
    for signal in signals:
        quote = _words(signal.get("quote"))
        day = signal.get("observed_on")
        same = [k for k in kept if k.get("type") == signal.get("type")]
        if any(day and k.get("observed_on") == day for k in same) or any(
            quote and (quote in _words(k.get("quote")) or _words(k.get("quote")) in quote)
            for k in same
        ):
            continue
        detail = str(signal.get("detail") or "")
        if detail and any(signal_matches(detail, str(k.get("detail") or "")) for k in kept):
            continue
        kept.append(signal)
    return kept


def _words(text: Any) -> str:
    return " ".join(str(text or "").casefold().split())


def _imported(contact: Mapping[str, Any]) -> dict[str, Any]:
    """The contact as imported: what this system wrote onto it left out."""
    own = {k: v for k, v in contact.items() if k not in SYSTEM_FIELDS}
    enrichment = own.get("enrichment")
    if isinstance(enrichment, Mapping):
        own["enrichment"] = {k: v for k, v in enrichment.items() if k not in SYSTEM_ENRICHMENT}
    return own


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)
