"""Flow 3, the recording (SPEC §6.3; seed §5.3, §7.4): AGT-006 → AGT-007.

    Drive push ─► ``recordings.drive.ingest`` (the model-free webhook): transcript → GCS,
        ENT-006 row ─► colony-recording-intelligence
    AGT-006 analyse: check the transcript ─► split by tokens (overlap) ─► pass 1 per chunk,
        ``recording_parallelism`` at a time, each a durable step ─► aggregate ─► pass 2
        (durable; its effects in one transaction: signals + summary on the recording,
        deal_update and kc_update_candidate approval items) ─► colony-follow-up
    AGT-007 follow_up: the draft (KC-05/KC-04 grounding) ─► a follow_up approval item
        (``recordings.follow_up``)

A transcript that is empty, binary or too long ends as a ``failed`` recording with the reason
in ``error``: recorded and visible, acknowledged, never retried. Any other failure is retried;
the last delivery attempt marks the recording ``failed`` (the reason names the error's type
and code, never its text) before the message is dead-lettered. Handlers are idempotent on
their event ids and the durable steps make a redelivery recompute nothing finished.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from colony.context import untrusted
from colony.context.assembler import AssemblyRequest
from colony.context.tokens import counter_for
from colony.contracts import IcpDefinition, OrgContext
from colony.contracts.events import RecordingProcessed, RecordingReceived
from colony.contracts.outputs.recordings import CallSignals, CallSummary
from colony.errors import ContextBudgetExceeded, NotFound, ValidationFailed
from colony.flows import call_link
from colony.flows.approvals import flags
from colony.flows.crm import deal_writes
from colony.flows.deps import FlowDeps
from colony.flows.recordings import transcripts
from colony.knowledge.exemplars import to_exemplars
from colony.llm.agent_call import call_agent
from colony.policy.grounding import verbatim
from colony.registry.functions import AGENT_TOPICS
from colony.runtime import delivery, idempotency
from colony.runtime.steps import step
from colony.runtime.transport import publish
from colony.store import orgdata
from colony.store.approvals import approvals
from colony.store.deals import deals
from colony.store.recordings import recordings

PASS1_CHUNK_TOKENS = 1500  # focused, short context (seed §5.3), well inside the 3000 budget
OVERLAP_TOKENS = 120
EXEMPLARS_PER_DOMAIN = 1
COMPETITORS = ("CareSpace Analytics", "FacilityIQ", "LeaseLogic Health")  # no org list: these

# ─── AGT-006: two-pass recording intelligence ──────────────────────────────────────────


def analyse_event(deps: FlowDeps, event: Any, event_id: str) -> dict[str, Any]:
    """AGT-006 for one ``recording.received`` event.

    A failure that ends the delivery for good (the last attempt, or one never retried) marks
    the recording ``failed`` with the reason before the error goes on to the edge: otherwise
    a dead-lettered recording would read ``processing`` forever."""
    if not isinstance(event, RecordingReceived):
        raise ValidationFailed(f"AGT-006 does not take {type(event).__name__} events")
    org, recording_id = event.org_id, event.recording_id

    def give_up(reason: str) -> None:
        with deps.db.transaction(org) as cur:
            recordings.fail(cur, recording_id, reason)

    with delivery.on_give_up(give_up):
        return analyse(deps, org, recording_id, event_id)


def analyse(deps: FlowDeps, org: str, recording_id: str, event_id: str) -> dict[str, Any]:
    handler = "recording-intelligence"
    if idempotency.seen(deps.db, org, handler, event_id):
        return {"duplicate": True}
    with deps.db.transaction(org) as cur:
        recording = recording_row(cur, recording_id)
        recordings.start(cur, recording_id)
    if recording["status"] == "failed":
        idempotency.mark(deps.db, org, handler, event_id, detail="failed earlier")
        return {"status": "failed", "error": recording["error"]}
    if recording["status"] != "processed":
        try:
            outcome = _two_passes(deps, org, recording)
        except transcripts.TranscriptRejected as error:
            with deps.db.transaction(org) as cur:
                recordings.fail(cur, recording_id, f"{error.code}: {error}")
            idempotency.mark(deps.db, org, handler, event_id, detail=error.code)
            return {"status": "failed", "error": str(error)}
    else:
        outcome = {"status": "processed"}
    # Processed (now or by an earlier delivery whose publish may have been lost): AGT-007.
    event = RecordingProcessed(org_id=org, recording_id=recording_id)
    publish(deps.transport, AGENT_TOPICS["AGT-007"], event)
    idempotency.mark(deps.db, org, handler, event_id)
    return outcome


def _two_passes(deps: FlowDeps, org: str, recording: Mapping[str, Any]) -> dict[str, Any]:
    recording_id = recording["id"]
    if not recording["transcript_uri"]:
        raise transcripts.TranscriptRejected("the recording has no stored transcript")
    name = str(recording["transcript_uri"]).split("/", 3)[-1]
    try:
        data = deps.blobs.get(name)
    except NotFound:
        raise transcripts.TranscriptRejected("the stored transcript object is missing") from None
    tokens = counter_for(deps.llm.model)  # local tokenizer: splitting must not cost API calls
    text, count = transcripts.decode(data, tokens)
    planted = untrusted.scan([text])  # shown on every card drawn from this call
    chunks = transcripts.split(text, tokens, max_tokens=chunk_tokens(deps), overlap=OVERLAP_TOKENS)
    run_id = f"rec:{recording_id}"
    with deps.db.transaction(org) as cur:
        org_context = org_context_of(cur)
        deal = deals.with_contact(cur, recording["deal_id"]) if recording["deal_id"] else None

    def pass1(chunk: transcripts.Chunk) -> dict[str, Any]:
        def compute() -> dict[str, Any]:
            request = AssemblyRequest(
                "AGT-006/pass1",
                org,
                run_id,
                org_context,
                task={
                    "chunk": chunk.text,
                    "segment_label": f"{chunk.index + 1} of {len(chunks)}",
                    "competitors": list(COMPETITORS),  # a model can only spot names it is given
                },
            )
            result = call_agent(deps.llm, request)
            assert isinstance(result.output, CallSignals)
            found = result.output.model_dump(mode="json")["signals"]
            kept, dropped = verbatim(found, chunk.text)  # AGT-006's quotes: verbatim
            deps.llm.annotate(result.call_id, quotes_dropped=dropped)  # on the call's trace
            return {"signals": kept, "quotes_dropped": dropped}

        output = step(deps.db, org, run_id, f"pass1:{chunk.index}", compute)
        deps.faults.check("recording-intelligence.after_chunk", f"{recording_id}:{chunk.index}")
        return output

    workers = max(1, min(deps.settings.recording_parallelism, len(chunks)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agt006-pass1") as pool:
        # each worker in a copy of this context: the invocation's model window holds there too
        contexts = [contextvars.copy_context() for _ in chunks]
        outputs = list(pool.map(lambda c, chunk: c.run(pass1, chunk), contexts, chunks))
    signals = transcripts.aggregate([list(o["signals"]) for o in outputs])
    dropped = sum(int(o.get("quotes_dropped") or 0) for o in outputs)

    def compute_pass2() -> dict[str, Any]:
        return _pass2(deps, org, run_id, org_context, signals, deal)

    def apply(cur: Any, stored: Mapping[str, Any]) -> None:
        output, call_id = call_link.take(stored)
        recordings.finish(
            cur, recording_id, signals, output["executive_summary"], count, len(chunks), planted
        )
        changes = deal_changes(deal, output["crm_updates"])
        found = untrusted.merge(planted, output.get(flags.KEY) or ())
        if deal is not None and changes:
            payload = {
                "deal_id": deal["id"],
                "changes": changes,
                "source": {"recording_id": recording_id},
            }
            payload = flags.flagged(payload, found, untrusted.links_in(changes))
            item_id = approvals.add(
                cur,
                org,
                "deal_update",
                "AGT-006",
                payload,
                subject_id=deal["id"],
                run_id=run_id,
                call_id=call_id,
            )
            deal_writes.read_later(deps, cur, org, item_id, deal["id"])  # for its card
        for candidate in output["kc_updates"]:
            payload = {**candidate, "source": {"recording_id": recording_id}}
            payload = flags.flagged(payload, found, untrusted.links_in(candidate))
            approvals.add(
                cur,
                org,
                "kc_update_candidate",
                "AGT-006",
                payload,
                subject_id=recording_id,
                run_id=run_id,
                call_id=call_id,
            )

    output = step(deps.db, org, run_id, "pass2", compute_pass2, apply)
    return {
        "status": "processed",
        "chunks": len(chunks),
        "signals": len(signals),
        "quotes_dropped": dropped,  # not found in their chunk (policy.grounding.verbatim)
        "kc_candidates": len(output["kc_updates"]),
        "transcript_tokens": count,
    }


def chunk_tokens(deps: FlowDeps) -> int:
    """Pass-1 chunk size: ``PASS1_CHUNK_TOKENS``, or less if the configured task budget is
    smaller (the template's own words and a margin are left for)."""
    budget = deps.llm.budgets.for_profile("AGT-006/pass1").task
    return max(16, min(PASS1_CHUNK_TOKENS, budget - 150))


def _pass2(
    deps: FlowDeps,
    org: str,
    run_id: str,
    org_context: Any,
    signals: list[dict[str, Any]],
    deal: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Pass 2 over the aggregated signals, strongest first, dropping the weakest until the
    task fits its budget (the transcript itself never reaches pass 2)."""
    ranked = transcripts.for_pass2(signals)
    deal_view = deal_facts(deal)
    deal_context = (
        " | ".join(str(deal_view.get(k) or "unknown") for k in ("stage", "value", "next_action"))
        if deal_view
        else "no deal on record"
    )
    query = " ".join(s["quote"] for s in ranked[:6]) or "sales call"
    hits = deps.knowledge.retrieve(org, query, ("KC-09", "KC-04", "KC-06"), EXEMPLARS_PER_DOMAIN)
    exemplars = to_exemplars(hits)
    while True:
        request = AssemblyRequest(
            "AGT-006/pass2",
            org,
            run_id,
            org_context,
            exemplars,
            {"deal": deal_view} if deal_view else {},
            task={"signals_json": ranked, "deal_context": deal_context},
            kc_queried=tuple(hits),
        )
        try:
            result = call_agent(deps.llm, request)
            break
        except ContextBudgetExceeded as error:
            if error.section != "task" or not ranked:
                raise
            ranked = ranked[: max(0, len(ranked) - max(1, len(ranked) // 8))]
    assert isinstance(result.output, CallSummary)
    output = flags.flagged(
        result.output.model_dump(mode="json"), result.assembled.untrusted_instructions
    )
    return call_link.carry(output, result)


def deal_changes(deal: Mapping[str, Any] | None, crm: Mapping[str, Any]) -> dict[str, Any]:
    """CRM recommendations as a ``deal_update`` change set: only fields that would change."""
    if deal is None:
        return {}
    close = str(deal["close_date"]) if deal.get("close_date") else None
    wanted = {
        "stage": crm.get("deal_stage"),
        "next_action": crm.get("next_action"),
        "close_date": crm.get("close_date"),
    }
    current = {
        "stage": deal.get("stage"),
        "next_action": deal.get("next_action"),
        "close_date": close,
    }
    return {k: v for k, v in wanted.items() if v is not None and v != current[k]}


# ─── what AGT-006 and AGT-007 (recordings.follow_up) share ──────────────────────────────


def recording_row(cur: Any, recording_id: str) -> dict[str, Any]:
    """The recording row (RLS keeps it to the transaction's org), or ``NotFound``."""
    recording = recordings.get(cur, recording_id)
    if recording is None:
        raise NotFound(f"recording {recording_id!r} does not exist in this org")
    return recording


def org_context_of(cur: Any) -> Any:
    icp = orgdata.active_icp(cur)
    return OrgContext(org_name=orgdata.org_name(cur), icp=IcpDefinition(**icp) if icp else None)


def deal_facts(deal: Mapping[str, Any] | None) -> dict[str, Any]:
    if deal is None:
        return {}
    value = deal.get("value")
    return {
        "name": deal["name"],
        "stage": deal["stage"],
        "value": float(value) if value is not None else None,
        "next_action": deal.get("next_action"),
    }
