"""The recording's agents, driven as ``flows.recordings`` drives them.

- AGT-006: the transcript is decoded and checked (``transcripts.decode``: empty, binary or
  too long is refused before any model call), scanned for planted instructions, split into
  the flow's pass-1 chunks (``recording.chunk_tokens``, the flow's overlap), each chunk's
  signals kept only where their quote is in that chunk (``policy.grounding.verbatim``),
  aggregated (``transcripts.aggregate``) and ranked for pass 2 (``transcripts.for_pass2``),
  which sees the deal as the flow shows it (``recording.deal_facts``). The outcome's output
  is pass 2's answer with the kept ``signals`` and the ``deal_changes`` it would propose.
- AGT-007: the summary with the org's competitors redacted (``policy.outbound
  .redact_competitors``, as the flow does), the deal and its contact, checked in full by
  ``check_shape`` at the follow-up's tier (T3).
"""

from __future__ import annotations

from typing import Any

from colony.context import untrusted
from colony.context.assembler import AssemblyRequest, assemble
from colony.context.tokens import counter_for
from colony.errors import ContextBudgetExceeded
from colony.evals.cases import Case
from colony.evals.drive.base import Env, Outcome, call, exemplars, llm_only, org_context
from colony.flows.recordings import recording, transcripts
from colony.flows.recordings.follow_up import FOLLOW_UP_TIER
from colony.local.demo import DEMO_DIR
from colony.policy.grounding import verbatim
from colony.policy.outbound import check_shape, redact_competitors

PASS2_KC = ("KC-09/objection-frequency-tracker.md", "KC-04/price-too-high.md")
FOLLOW_UP_KC = ("KC-05/proof-points-at-a-glance.md",)


def analyse(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    tokens = counter_for(env.llm.model)
    demo = case.inputs.get("transcript_demo")  # one of the demo's transcripts, by file name
    given = (
        (DEMO_DIR / "transcripts" / str(demo)).read_text() if demo else case.inputs["transcript"]
    )
    try:
        text, count = transcripts.decode(str(given).encode("utf-8"), tokens)
    except transcripts.TranscriptRejected as refused:
        outcome.status, outcome.error = "rejected", refused.code
        return outcome
    outcome.untrusted = tuple(untrusted.scan([text]))
    size = recording.chunk_tokens(llm_only(env))
    chunks = transcripts.split(text, tokens, max_tokens=size, overlap=recording.OVERLAP_TOKENS)
    org = org_context(case)
    competitors = list(case.inputs.get("competitors") or recording.COMPETITORS)
    kept: list[list[dict[str, Any]]] = []
    dropped = 0
    for chunk in chunks:
        task = {
            "chunk": chunk.text,
            "segment_label": f"{chunk.index + 1} of {len(chunks)}",
            "competitors": competitors,
        }
        built = AssemblyRequest("AGT-006/pass1", "org_eval", env.run_id, org, task=task)
        result = call(env, outcome, built)
        if result is None or result.output is None:
            return outcome
        found, lost = verbatim(result.output.model_dump(mode="json")["signals"], chunk.text)
        kept.append(found)
        dropped += lost
    signals = transcripts.aggregate(kept)
    outcome.facts.update(chunks=len(chunks), transcript_tokens=count, quotes_dropped=dropped)
    deal = case.inputs.get("deal")
    view = recording.deal_facts(deal)
    deal_context = (
        " | ".join(str(view.get(k) or "unknown") for k in ("stage", "value", "next_action"))
        if view
        else "no deal on record"
    )
    ranked = transcripts.for_pass2(signals)
    while True:  # as the flow's pass 2: the weakest signals dropped until the task fits
        built = AssemblyRequest(
            "AGT-006/pass2",
            "org_eval",
            env.run_id,
            org,
            exemplars(case, PASS2_KC),
            {"deal": view} if view else {},
            task={"signals_json": ranked, "deal_context": deal_context},
            kc_queried=("KC-09", "KC-04", "KC-06"),
        )
        try:
            assemble(built, budgets=env.llm.budgets, counter=env.llm.counter)
        except ContextBudgetExceeded as over:
            if over.section != "task" or not ranked:
                return outcome.fail(over)
            ranked = ranked[: max(0, len(ranked) - max(1, len(ranked) // 8))]
            continue
        break
    outcome.facts["pass2_signals"] = len(ranked)
    result = call(env, outcome, built)
    if result is None or result.output is None:
        return outcome
    summary = result.output.model_dump(mode="json")
    changes = recording.deal_changes(deal, summary["crm_updates"]) if deal else {}
    outcome.output = {**summary, "signals": signals, "deal_changes": changes}
    return outcome


def follow_up(case: Case, env: Env) -> Outcome:
    outcome = Outcome()
    deal = dict(case.inputs["deal"])
    competitors = list(case.inputs.get("competitors") or recording.COMPETITORS)
    summary = redact_competitors(
        str(case.inputs["recording_summary"]), competitors, "another vendor"
    )
    contact = {
        "name": deal.get("contact_name"),
        "title": deal.get("contact_title"),
        "company": deal.get("contact_company"),
    }
    built = AssemblyRequest(
        "AGT-007",
        "org_eval",
        env.run_id,
        org_context(case),
        exemplars(case, FOLLOW_UP_KC),
        {"deal": recording.deal_facts(deal), "contact": contact},
        task={"recording_summary": summary},
        kc_queried=("KC-05", "KC-04"),
    )

    def const_006(m: Any) -> list[str]:
        return check_shape(m.subject, m.body, tier=FOLLOW_UP_TIER, competitors=competitors)

    result = call(env, outcome, built, check=const_006)
    if result is not None and result.output is not None:
        outcome.output = result.output.model_dump(mode="json")
    return outcome
