"""Run a set of cases against one model path and grade each outcome.

``run`` drives every case (``colony.evals.drive``), ``jobs`` at a time (a real model is
slow; the offline one is not), checks its outcome and each expected property
(``colony.evals.checks``), has the judge grade its ``rubric`` properties, and returns one
``CaseResult`` per case in the set's order. A case passes when its outcome is the one
expected and every property counted holds; a rubric property counts only when the judge is
trusted (``judge.agreement``).

``call_seconds`` opens a model window (``colony.deadline``) of that many seconds around each
case, as a function's invocation does: without one every attempt is cut at
``DEFAULT_CALL_SECONDS``, which a real model on a busy CPU can need more than once per call
(``make eval-local``).

Each result carries the case's template hash (``template_hash``: every template its agent's
profiles render plus their budgets and output caps, so two runs can be compared template ×
model), its model, tokens, latency and cost.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from colony.context.assembler import profile_of
from colony.context.budgets import BudgetBook
from colony.context.provenance import template_version
from colony.deadline import model_window
from colony.evals import checks, prices
from colony.evals.cases import Case, CaseSet
from colony.evals.drive import Env, Outcome, drive
from colony.evals.judge import ModelJudge

PROFILES = {"AGT-006": ("AGT-006/pass1", "AGT-006/pass2")}
CONTEXT_CHARS = 2000  # of a case's inputs, shown to the judge


@dataclass
class CaseResult:
    case: Case
    outcome: Outcome
    properties: list[dict[str, Any]] = field(default_factory=list)
    passed: bool = False
    model: str = ""
    template: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    cost_usd: float | None = None


_HASHES: dict[tuple[str, int], str] = {}


def template_hash(agent: str, budgets: BudgetBook) -> str:
    """The hash of what ``agent``'s prompts are made from (the module docstring)."""
    key = (agent, id(budgets))
    if key not in _HASHES:
        _HASHES[key] = _template_hash(agent, budgets)
    return _HASHES[key]


def _template_hash(agent: str, budgets: BudgetBook) -> str:
    digest = hashlib.sha256()
    for profile in PROFILES.get(agent, (agent,)):
        agent_id, output, template = profile_of(profile)
        budget, limits = budgets.for_profile(profile), budgets.call_for(profile)
        digest.update(f"{profile}:{output}:{template_version(agent_id, template)}".encode())
        digest.update(repr((budget, limits.output, limits.thinking)).encode())
    return digest.hexdigest()[:12]


def judge_context(case: Case) -> str:
    text = json.dumps(dict(case.inputs), ensure_ascii=False, default=str)
    return f"{case.title}\n{text[:CONTEXT_CHARS]}"


def grade(
    case: Case, outcome: Outcome, judge: ModelJudge | None, trusted: bool
) -> tuple[list[dict[str, Any]], bool]:
    ok, why = checks.outcome_holds(case, outcome)
    props = [{"check": "outcome", "passed": ok, "detail": why, "counted": True}]
    for prop in case.expect:
        if prop["check"] != checks.JUDGED:
            held, detail = checks.check(case, outcome, prop)
            props.append(
                {"check": prop["check"], "passed": held, "detail": detail, "counted": True}
            )
            continue
        if judge is None:
            continue
        if outcome.output is None:
            said = (False, f"no answer to judge ({outcome.status})")
        else:
            got = judge.grade(
                str(prop["criterion"]),
                [str(k) for k in prop.get("keywords") or ()],
                judge_context(case),
                checks.text_of(outcome.output),
            )
            said = (got.passed, "" if got.passed else got.reason)
        props.append({"check": "rubric", "passed": said[0], "detail": said[1], "counted": trusted})
    return props, all(p["passed"] for p in props if p["counted"])


def price_of(env: Env, local: bool, override: tuple[float, float] | None) -> Callable[[str], Any]:
    def price(model: str) -> tuple[float, float] | None:
        return override if override is not None else prices.per_million(model, local=local)

    return price


def run(
    cases: CaseSet,
    env: Env,
    *,
    judge: ModelJudge | None = None,
    judge_trusted: bool = False,
    jobs: int = 1,
    local: bool = False,
    price: tuple[float, float] | None = None,
    progress: Callable[[CaseResult], None] | None = None,
    call_seconds: float | None = None,
) -> list[CaseResult]:
    """Every case of ``cases`` run and graded (the module docstring)."""
    priced = price_of(env, local, price)

    def one(case: Case) -> CaseResult:
        with model_window(call_seconds):  # None: no window, as before
            outcome = drive(case, env)
        props, passed = grade(case, outcome, judge, judge_trusted)
        calls = outcome.calls
        model = calls[0].model if calls else env.llm.model_for(case.agent)
        tokens_in = sum(c.tokens_in for c in calls)
        tokens_out = sum(c.tokens_out for c in calls)
        result = CaseResult(
            case,
            outcome,
            props,
            passed,
            model,
            template_hash(case.agent, env.llm.budgets),
            tokens_in,
            tokens_out,
            round(sum(c.latency_ms for c in calls), 1),
            prices.cost(priced(model), tokens_in, tokens_out),
        )
        if progress is not None:
            progress(result)
        return result

    if jobs <= 1:
        return [one(c) for c in cases.cases]
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="eval") as pool:
        return list(pool.map(one, cases.cases))


def passed_ids(results: Sequence[CaseResult]) -> set[str]:
    return {r.case.id for r in results if r.passed}
