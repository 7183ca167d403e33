"""AGT-003 Prospect Enrichment: summarise a contact, keep its signals with their provenance
(``colony.store.campaigns.signals``) and hand it on to qualification.

A signal's quote must be verbatim: one the contact's data does not contain is dropped with
its signal, and the count (``quotes_dropped``) is kept in the step's output and on the
call's trace."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from colony.contracts import HandoffEnvelope
from colony.contracts.outputs.campaigns import ProspectEnrichment
from colony.flows.campaigns.campaign import handoff, step_key
from colony.flows.campaigns.specialist import assembly_request, handle_handoff, load_contact
from colony.flows.deps import FlowDeps
from colony.llm.agent_call import call_agent
from colony.policy.grounding import verbatim
from colony.runtime.steps import step
from colony.store.campaigns import campaigns, signals
from colony.store.db import Row


def enrich(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """The ``enrichment`` function's Pub/Sub handler."""
    return handle_handoff(deps, event, event_id, "AGT-003", _enrich)


def _enrich(
    deps: FlowDeps, org: str, campaign: Row, run_id: str, contact_id: str, envelope: HandoffEnvelope
) -> str:
    contact = load_contact(deps, org, contact_id)

    def compute() -> dict[str, Any]:
        request = assembly_request(deps, org, run_id, "AGT-003", envelope, {"contact": contact}, {})
        result = call_agent(deps.llm, request)
        assert isinstance(result.output, ProspectEnrichment)
        output = result.output.model_dump(mode="json")
        output["signals"], dropped = grounded(output.get("signals") or [], request.entities)
        deps.llm.annotate(result.call_id, quotes_dropped=dropped)  # on the call's trace
        return {**output, "quotes_dropped": dropped}

    def apply(cur: Any, output: Mapping[str, Any]) -> None:
        extra = {"summary": output["summary"], "persona": output.get("persona")}
        campaigns.add_enrichment(cur, contact_id, extra)
        kept = [{**s, "quote": s.get("quote") or s["detail"]} for s in output.get("signals") or []]
        signals.replace_for_contact(cur, org, contact_id, kept, run_id=run_id)

    step(deps.db, org, run_id, step_key("AGT-003", contact_id), compute, apply)
    handoff(deps, org, campaign, run_id, contact_id, "AGT-004")
    return "enriched"


def grounded(
    found: Sequence[Mapping[str, Any]], entities: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], int]:
    """AGT-003's signals whose ``quote`` occurs word for word (whitespace normalised) in the
    text the agent was given (every text value of its entities), and how many were dropped:
    a quote the contact's data does not contain is not one, and neither is its signal
    (``policy.grounding.verbatim``, as AGT-006's quotes). A signal without a quote is kept: its
    detail stands for it."""
    source = "\n".join(_texts(entities))
    kept = [dict(s) for s in found if not s.get("quote") or verbatim([s], source)[0]]
    return kept, len(found) - len(kept)


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)
