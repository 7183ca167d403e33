"""``make eval-local``: AGT-003/004/005 over a few demo contacts, against a real open model
served on this machine, through the project's own model path.

The path is the deployed one from the adapter down: ``OpenAIChatModel`` pointed at the local
``llama-server`` (``colony.local.llama_server``; an address that is not OpenAI's, so spoken
to as a compatible server: docs/architecture.md, "What a model call sends") → the real
``StructuredRunner`` (retries, the one repair, truncation, ``missing_data``) → ``call_agent``
(the real assembler, templates and budgets). Each call runs inside its function's model
window (``colony.deadline``), as deployed: a call the model cannot finish in time is a
timeout here too (``--call-seconds`` gives every call a longer window instead, to see what
the model would answer: outside any window a call is still cut at ``DEFAULT_CALL_SECONDS``).

What each agent is given, as its flow gives it (``colony.flows.campaigns``), less the
database: the demo org's ICP, the contact as imported (its own signals; AGT-004 and AGT-005
do not see AGT-003's answer, so one agent's failure does not decide the next one's figures),
no Knowledge Core exemplars and no research pages. AGT-003's signals and facts then go
through the flow's grounding (quotes kept or dropped), AGT-004's score through the policy's
tier decision (and its disqualifiers beside the demo's expected anti-ICP labels), AGT-005's
draft through CONST-006's check inside the runner, as in the flow.

This is a stopgap for ``colony eval --base-url`` (issue 37 item 3), which runs the full eval
sets; until it lands this loop is kept small. The figures and how to read them:
docs/quality.md, "A real model on this machine".
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from colony.adapters.openai_chat import OpenAIChatModel
from colony.context.assembler import AssemblyRequest
from colony.context.budgets import load_budgets
from colony.context.tokens import counter_for
from colony.contracts import IcpDefinition, OrgContext
from colony.deadline import model_window, window_seconds
from colony.errors import (
    DataMissing,
    ModelRefused,
    OutputInvalid,
    OutputTruncated,
    ProviderError,
    ProviderUnavailable,
    error_summary,
)
from colony.flows.campaigns.enrichment import grounded, vocabulary
from colony.flows.tenants.org_admin import DEFAULT_COMPETITORS
from colony.llm import StructuredRunner
from colony.llm.agent_call import LlmDeps, call_agent
from colony.local import llama_server
from colony.local.demo import read_json
from colony.local.eval_figures import CaseResult, Metered, figures, table
from colony.policy.outbound import check_outbound
from colony.policy.tiering import decide_tier
from colony.store.campaigns.signals import details, own

AGENTS = ("AGT-003", "AGT-004", "AGT-005")
FUNCTION_OF = {"AGT-003": "enrichment", "AGT-004": "qualification", "AGT-005": "message-generator"}
# A strong fit with three signals, an anti-ICP contact (AICP-01), a fit with an expansion.
DEFAULT_CONTACTS = ("P-001", "P-007", "P-021")
TODAY = "2026-12-01"  # the demo's "today": its signals are dated relative to it
ANGLE, TIER = "Signal", "T1"  # AGT-005's campaign: the demo's first sequence

Check = Callable[[Any], Sequence[str]] | None


def _contact(external_id: str) -> dict[str, Any]:
    """The demo contact as its row reads (``store.campaigns.campaigns.contact``)."""
    for row in read_json("contacts.json"):
        if row["external_id"] == external_id:
            none = dict.fromkeys(("icp_score", "icp_disqualifiers", "icp_recommendation"))
            return {"id": f"demo-{external_id}", **row, **none}
    raise SystemExit(f"no demo contact {external_id!r} (shared/colony/local/demo/contacts.json)")


def request_for(agent: str, contact: Mapping[str, Any]) -> tuple[AssemblyRequest, Check]:
    """``agent``'s assembly request for ``contact`` as its flow builds it, and the check its
    flow hands the runner (AGT-005's CONST-006)."""
    icp = read_json("icp.json")
    org = read_json("org.json")
    context = OrgContext(org_name=org["name"], icp=IcpDefinition(**icp))
    signals = own(contact.get("signals"))
    bare = {k: v for k, v in contact.items() if k != "signals"}
    check: Check = None
    if agent == "AGT-003":
        entities: dict[str, Any] = {"contact": dict(contact)}
        task: dict[str, Any] = {"today": TODAY, "icp_vocabulary": vocabulary(icp)}
        signals = []  # AGT-003 reads the contact's own list inside the entity
    elif agent == "AGT-004":
        entities, task = {"contact": bare, "icp_rubric": icp["rubric"]}, {"today": TODAY}
    else:
        entities = {"contact": bare}
        task = {"angle": ANGLE, "tier": TIER, "step": 1, "competitors": list(DEFAULT_COMPETITORS)}
        said = details(signals)

        def check(message: Any) -> list[str]:
            return check_outbound(
                message, tier=TIER, contact_signals=said, competitors=DEFAULT_COMPETITORS
            )

    request = AssemblyRequest(
        agent, org["id"], "eval-local", context, (), entities, (), task, signals=tuple(signals)
    )
    return request, check


def judged(agent: str, contact: Mapping[str, Any], output: Mapping[str, Any]) -> dict[str, Any]:
    """What the flow does next with a valid answer, kept as the case's notes."""
    if agent == "AGT-003":
        signals, dropped = grounded(output.get("signals") or [], contact, [])
        facts, facts_dropped = grounded(output.get("facts") or [], contact, [])
        return {
            "signals": len(output.get("signals") or []),
            "signals_kept": len(signals),
            "facts": len(output.get("facts") or []),
            "facts_kept": len(facts),
            "quotes_dropped": dropped + facts_dropped,
        }
    if agent == "AGT-004":
        icp = read_json("icp.json")
        decision = decide_tier(output["total_score"], icp["tiers"], output["disqualifiers"])
        expected = read_json("anti_icp_expected.json").get(contact["external_id"], [])
        return {
            "total_score": output["total_score"],
            "disqualifiers": output["disqualifiers"],
            "expected_disqualifiers": expected,
            "disqualifiers_right": sorted(output["disqualifiers"]) == sorted(expected),
            "tier": decision.tier,
            "recommendation": decision.recommendation,
        }
    return {"signal_referenced": output.get("signal_referenced")}


def run_case(
    deps: LlmDeps, meter: Metered, agent: str, contact_id: str, seconds: float | None = None
) -> CaseResult:
    """One ``call_agent`` for ``agent`` on a demo contact, classified by how it ended, inside
    a model window of ``seconds`` (None: its function's, as deployed)."""
    contact = _contact(contact_id)
    request, check = request_for(agent, contact)
    seconds = seconds or window_seconds(FUNCTION_OF[agent])
    started = time.monotonic()
    outcome, detail, notes = "valid", "", {}
    try:
        with model_window(seconds):
            result = call_agent(deps, request, check=check)
        assert result.output is not None
        notes = judged(agent, contact, result.output.model_dump(mode="json"))
    except DataMissing as error:
        outcome, detail = "missing_data", ", ".join(error.fields)
    except OutputTruncated as error:
        outcome, detail = "truncated", error_summary(error)
    except ModelRefused as error:
        outcome, detail = "refused", error_summary(error)
    except OutputInvalid as error:
        # the runner's message names the contract and the problems, never input values
        outcome, detail = "invalid", str(error)[:600]
    except ProviderUnavailable as error:
        outcome, detail = "timeout", error_summary(error)
    except ProviderError as error:
        outcome, detail = "provider_error", error_summary(error)
    sent = tuple(meter.take())
    case = CaseResult(agent, contact_id, outcome, time.monotonic() - started, sent, detail, notes)
    if case.outcome == "valid" and case.repairs:
        case = CaseResult(agent, contact_id, "repaired", case.seconds, sent, detail, notes)
    return case


def local_deps(base_url: str, model: str) -> tuple[LlmDeps, Metered]:
    """The model path of a deployed function, over the local server."""
    meter = Metered(OpenAIChatModel(api_key="local", base_url=base_url))
    budgets = load_budgets()
    runner = StructuredRunner(meter)
    deps = LlmDeps(meter, model, budgets, runner, counter_for(model), "openai", pinned=True)
    return deps, meter


def run(
    base_url: str,
    model: str,
    contacts: Sequence[str],
    agents: Sequence[str],
    seconds: float | None = None,
    cases_file: Path | None = None,
) -> dict[str, Any]:
    """Each agent on each contact; every case is also appended to ``cases_file`` as it
    ends (JSON Lines), so a run stopped early keeps what it measured."""
    deps, meter = local_deps(base_url, model)
    load_before = os.getloadavg()
    cases: list[CaseResult] = []
    # contact by contact, so a run cut short still has every agent's first cases
    for contact in contacts:
        for agent in agents:
            case = run_case(deps, meter, agent, contact, seconds)
            print(
                f"eval-local: {agent} {contact}: {case.outcome} in {case.seconds:.0f} s"
                f" ({len(case.sent)} request(s)) {case.detail[:160]}",
                flush=True,
            )
            cases.append(case)
            if cases_file is not None:
                with cases_file.open("a") as out:
                    out.write(json.dumps(_case_json(case)) + "\n")
    per_agent = {
        a: figures([c for c in cases if c.agent == a], window_seconds(FUNCTION_OF[a]))
        for a in agents
    }
    return {
        "model": model,
        "contacts": list(contacts),
        "call_seconds": seconds or "the function's model window",
        # what else this machine was doing: the figures are this machine's, at this load
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "per_agent": per_agent,
        "cases": [_case_json(c) for c in cases],
    }


def _case_json(case: CaseResult) -> dict[str, Any]:
    return {
        "agent": case.agent,
        "contact": case.contact,
        "outcome": case.outcome,
        "seconds": round(case.seconds, 1),
        "requests": [vars(s) for s in case.sent],
        "detail": case.detail,
        "notes": case.notes,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="eval-local", description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", default=",".join(DEFAULT_CONTACTS))
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--base-url", help="an OpenAI-compatible server already running")
    parser.add_argument(
        "--call-seconds", type=float, help="every call's window (default: its function's)"
    )
    parser.add_argument("--threads", type=int, default=0, help="0: chosen by the load")
    args = parser.parse_args(argv)
    # a stop (make's, or a kill) still stops the server: ``serving`` ends in ``finally``
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    contacts = [c for c in args.contacts.split(",") if c]
    agents = [a for a in args.agents.split(",") if a in AGENTS]
    cache = llama_server.cache_dir()
    alias = llama_server.MODEL.name
    out = cache / "reports" / f"eval-local-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    cases_file = out.with_suffix(".cases.jsonl")
    if args.base_url:
        report = run(args.base_url, alias, contacts, agents, args.call_seconds, cases_file)
    else:
        binary = llama_server.build_server(cache)
        model = llama_server.fetch_model(cache)
        threads = args.threads or llama_server.threads_for_load()
        options = llama_server.ServerOptions(threads=threads)
        log = cache / "logs" / "llama-server.log"
        with llama_server.serving(binary, model, alias, log, options) as base_url:
            print(f"eval-local: {alias} on {base_url}, {threads} thread(s) (log: {log})")
            report = run(base_url, alias, contacts, agents, args.call_seconds, cases_file)
    out.write_text(json.dumps(report, indent=1))
    print(table(report["per_agent"]))
    print(f"eval-local: report in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
