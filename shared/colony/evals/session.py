"""One eval run from end to end: the model path for a provider, the judge, the cases run and
graded, the report written (JSON and HTML) and, when Langfuse is configured, recorded there.

``Target`` names what runs the agents: the offline model, OpenAI or Gemini with their keys
from the environment (as the functions read them), or any OpenAI-compatible server at a
``base_url`` through the project's own OpenAI adapter (which speaks to an address that is
not OpenAI's as to a compatible server: ``adapters.openai_chat``). The model path is
``llm_from_settings``: the adapter, tracing (Langfuse when configured), the runner, the
budgets and the token counter the functions use.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from colony.context.budgets import load_budgets
from colony.evals import judge as judging
from colony.evals import langfuse_runs, page, report
from colony.evals.cases import CaseSet
from colony.evals.drive import Env
from colony.evals.runner import CaseResult, run
from colony.llm.agent_call import LlmDeps, chat_model_from_settings, llm_from_settings
from colony.settings import Settings
from colony.store import Database

NO_KEY = "sk-no-key"  # what a local server is sent when no key is set: it checks none


@dataclass(frozen=True)
class Target:
    provider: str = "offline"  # offline | openai | gemini
    model: str | None = None
    base_url: str | None = None  # an OpenAI-compatible server (provider openai)

    @property
    def local(self) -> bool:
        """A server on this machine (it costs nothing)."""
        host = (self.base_url or "").split("//", 1)[-1].split("/", 1)[0].split(":", 1)[0]
        return host in ("localhost", "127.0.0.1", "::1", "[::1]")


def settings_for(settings: Settings, target: Target) -> Settings:
    changes: dict[str, Any] = {"llm_provider": target.provider, "llm_model": target.model}
    if target.base_url:
        changes.update(llm_provider="openai", openai_base_url=target.base_url)
        if not settings.openai_api_key:
            changes["openai_api_key"] = NO_KEY
    return dataclasses.replace(settings, **changes)


def llm_for(settings: Settings, target: Target) -> LlmDeps:
    return llm_from_settings(settings_for(settings, target))


def judge_for(settings: Settings, spec: str, model: str | None) -> judging.ModelJudge | None:
    """``none``, ``offline`` (the keyword judge) or a provider (``openai``, ``gemini``, or a
    base URL of a compatible server) with the judge's own ``model``."""
    if spec == "none":
        return None
    if spec == "offline":
        return judging.offline_judge()
    target = Target("openai", model, spec) if "://" in spec else Target(spec, model)
    chosen = settings_for(settings, target)
    chat = chat_model_from_settings(chosen)
    default = load_budgets(chosen.budgets_file).model_for(chosen.llm_provider)
    return judging.ModelJudge(chat, model or default)


def run_id(started: datetime) -> str:
    return f"{started:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def execute(
    settings: Settings,
    cases: CaseSet,
    target: Target,
    *,
    out: Path,
    db: Database | None = None,
    judge: str = "offline",
    judge_model: str | None = None,
    jobs: int = 1,
    price: tuple[float, float] | None = None,
    gates: Mapping[str, float] | None = None,
    selection: Mapping[str, Any] | None = None,
    progress: Callable[[CaseResult], None] | None = None,
    call_seconds: float | None = None,
) -> tuple[dict[str, Any], Path]:
    """Run ``cases`` against ``target``; the report and the directory it was written to
    (``out/<run id>/report.json`` and ``report.html``)."""
    started = datetime.now(UTC)
    identity = run_id(started)
    llm = llm_for(settings, target)
    grader = judge_for(settings, judge, judge_model)
    agreed = judging.agreement(grader) if grader is not None else None
    clock = time.perf_counter()
    try:
        results = run(
            cases,
            Env(llm, db, identity),
            judge=grader,
            judge_trusted=bool(agreed and agreed["trusted"]),
            jobs=jobs,
            local=target.local or target.provider == "offline",
            price=price,
            progress=progress,
            call_seconds=call_seconds,
        )
    finally:
        llm.tracer.shutdown()  # the agents' traces exported (Langfuse, when configured)
    agents = sorted({r.case.agent for r in results})
    provider = target.provider if not target.base_url else "openai-compatible"
    meta: dict[str, Any] = {
        "id": identity,
        "started_at": started.isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - clock, 1),
        "provider": provider,
        "model": llm.model,
        "base_url": target.base_url,
        "sets": cases.digest,
        "selection": dict(selection or {}),
        "call_seconds": call_seconds,
    }
    built = report.build(
        results, meta, judge=agreed, limits=report.thresholds(agents, provider, gates)
    )
    folder = out / identity
    report.write(built, folder / "report.json")
    (folder / "report.html").write_text(page.render(built), encoding="utf-8")
    if langfuse_runs.configured(settings):
        built["langfuse"] = langfuse_runs.record(settings, built, list(cases.cases))
        report.write(built, folder / "report.json")
    return built, folder
