"""The one assembler every LLM call goes through (SPEC §5; seed §5.1, §6.2, §7.3).

Pure: given the agent profile, retrieved exemplars, entities, history and the task, it renders
the four-section system prompt (role, domain grounding with ICP and anti-ICP, behavioural
constraints, the data policy: ``colony.context.system_prompt``), a context message and the
task message, and returns them with a per-section token account counted by the target
model's tokenizer.

Untrusted text stays data (``colony.context.untrusted``): the system message holds only our
instructions, the org admins' ICP and the policy; Knowledge Core exemplars and entities go in
a user-role context message, tool results and the rolling summary keep their own turns, and
every task value that is not ours — all but ``TRUSTED_TASK_FIELDS`` — is rendered into the
template as a data block. Each block's boundary is random per call and its content escaped, so
the text cannot end its block. What the detector flags in that text comes back as
``untrusted_instructions`` for the trace and the approval card.

Each section must fit its budget. Over budget, in this order of what gives way:
  entity   non-essential fields (raw enrichment HTML, full transcript text) are stripped,
           then the weakest stored pages, the weakest of the contact's signals (lowest
           confidence, then oldest; never below one), the oldest steps of a sequence's
           thread (never below the newest) (``colony.context.entity_section``);
  kc       the least similar exemplars are dropped, never below one;
  history  the oldest turns are dropped (the caller folds them into a summary, seed §6.3);
           the call's own tool rounds (sent after the task) are kept first;
  task     optional payload fields (those not named by the template) are stripped.
The role, the constraints and the template's required task fields are never cut; a section
that still cannot fit raises ``ContextBudgetExceeded`` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from colony.context import entity_section, provenance, templates, untrusted
from colony.context.budgets import Budget, BudgetBook
from colony.context.serialize import compact, dumps
from colony.context.system_prompt import system_message
from colony.contracts import AgentContextBundle, Exemplar, OrgContext, ToolDefinition
from colony.errors import ContextBudgetExceeded, ValidationFailed
from colony.ports import Counter, Message
from colony.registry.agents import PROFILES, agent

_COMPUTED = frozenset({"task_json"})
# Agents whose job is to read raw enrichment (AGT-003 reads ENT-002 raw): they get the
# non-essential fields while the budget allows. Everyone else never sees them.
RAW_READERS = frozenset({"AGT-003"})
# Task fields our own code (or the signed-in person, for AGT-001's message) sets, and a
# sequence step's guidance, which the org's admins wrote as an instruction (like the ICP in the
# system message): rendered as they are. Every other task value is data.
TRUSTED_TASK_FIELDS = frozenset(
    {
        "angle",
        "tier",
        "step",
        "channel",
        "guidance",
        "segment_label",
        "today",
        "brief_date",
        "format",
        "message",
    }
)


@dataclass(frozen=True)
class AssemblyRequest:
    """What one model call is assembled from: the profile, the org, the retrieved exemplars,
    the entities, the history and the task."""

    profile: str  # "AGT-005", or a pass such as "AGT-006/pass1"
    org_id: str
    run_id: str
    org: OrgContext
    exemplars: Sequence[Exemplar] = ()  # best first
    entities: Mapping[str, Any] = field(default_factory=dict)  # name → row or list of rows
    history: Sequence[Message] = ()  # oldest first; the summary is an assistant "summary"
    task: Mapping[str, Any] = field(default_factory=dict)
    tools: Sequence[ToolDefinition] = ()
    # the KC domains the exemplars were retrieved from, in order, hits or not (traced as
    # ``kc_domains_queried``); empty when the call retrieved nothing
    kc_queried: Sequence[str] = ()
    # this call's own tool rounds so far (assistant tool calls, their tool results), oldest
    # first: sent after the task, since the model made them answering it; they share the
    # history budget and are kept before any earlier turn
    tool_rounds: Sequence[Message] = ()
    # the contact's signals (``colony.store.campaigns.signals``: quote, source, confidence,
    # observed_on), any order: rendered strongest first as the ``signals`` entity, the weakest
    # cut first
    signals: Sequence[Mapping[str, Any]] = ()
    # passages of the company's stored pages (``colony.flows.research``: ref, url, dates,
    # text), best first: rendered as the ``sources`` entity, the weakest cut first, before
    # any signal
    sources: Sequence[Mapping[str, Any]] = ()
    # the steps of a sequence the contact already got (``colony.flows.outbound.sequences``:
    # id, step, channel, subject, text, outcome, on), oldest first: rendered as the
    # ``thread`` entity, the oldest cut first, never below the newest
    thread: Sequence[Mapping[str, Any]] = ()
    # the daily brief the context carries (its row id): recorded in the call's provenance
    brief_id: str | None = None


@dataclass(frozen=True)
class AssembledContext:
    """The assembled call: its bundle and messages, the per-section token account against the
    budget, what was trimmed, and what the context was built from."""

    bundle: AgentContextBundle
    messages: tuple[Message, ...]
    account: dict[str, int]
    budget: Budget
    output_name: str
    kc_domains: tuple[str, ...]  # the domains queried for this call (``kc_queried``)
    trimmed: dict[str, int]
    tokenizer: str
    boundary: str = ""
    untrusted_instructions: tuple[str, ...] = ()
    # what the context was built from (``colony.context.provenance``): ids, hashes, cuts
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_in(self) -> int:
        return sum(self.account.values())


def profile_of(profile: str) -> tuple[str, str, str]:
    """(agent id, output contract, template) for a profile."""
    if profile in PROFILES:
        return PROFILES[profile]
    a = agent(profile)
    return a.id, a.output, a.template


def _check(section: str, tokens: int, budget: Budget, what: str) -> None:
    limit = budget.of(section)
    if tokens > limit:
        raise ContextBudgetExceeded(
            f"the {section} section needs {tokens} tokens but its budget is {limit} ({what})",
            section=section,
            tokens=tokens,
            budget=limit,
        )


def _kc_block(exemplars: Sequence[Exemplar], boundary: str) -> str:
    if not exemplars:
        return ""
    parts = ["KNOWLEDGE CORE EXEMPLARS:"]
    for e in exemplars:
        tags = ", ".join(f"{k}={v}" for k, v in sorted(e.tags.items()))
        parts.append(
            untrusted.block(
                boundary, e.content.strip(), source="kc", domain=e.domain, title=e.title, tags=tags
            )
        )
    return "\n".join(parts)


def _history_turn(turn: Message, boundary: str) -> Message:
    """Tool results and our rolling summary are data in their own turns."""
    if turn.role == "tool":
        text = untrusted.block(boundary, turn.content, source="tool", name=turn.name)
    elif turn.role == "assistant" and turn.name == "summary":
        text = untrusted.block(boundary, turn.content, source="summary")
    elif turn.role == "system":  # no caller may put data in the system role
        return Message("assistant", untrusted.block(boundary, turn.content, source="summary"))
    else:
        return turn
    return Message(turn.role, text, turn.tool_calls, turn.tool_call_id, turn.name)


def _newest_within(
    turns: Sequence[Message],
    boundary: str,
    count: Callable[[str], int],
    budget: int,
    spent: int,
) -> tuple[list[Message], int]:
    """The newest of ``turns`` (rendered, oldest first) that fit ``budget`` after ``spent``."""
    kept: list[Message] = []
    for turn in reversed(turns):
        sent = _history_turn(turn, boundary)
        tokens = count(sent.content)
        if budget == 0 or spent + tokens > budget:
            break
        kept.insert(0, sent)
        spent += tokens
    return kept, spent


def _task_text(
    template: str, task: Mapping[str, Any], optional: Mapping[str, Any], boundary: str
) -> str:
    names = templates.fields(template)
    variables: dict[str, Any] = {}
    missing = sorted(n for n in names - _COMPUTED if n not in task)
    if missing:
        raise ValidationFailed(
            f"task for template {template!r} lacks required field(s): {', '.join(missing)}"
        )
    for name in names - _COMPUTED:
        value = task[name]
        text = value if isinstance(value, str) else dumps(compact(value))
        trusted = name in TRUSTED_TASK_FIELDS
        variables[name] = text if trusted else untrusted.block(boundary, text, source=name)
    if "task_json" in names:
        text = dumps(compact(dict(optional))) if optional else "{}"
        variables["task_json"] = untrusted.block(boundary, text, source="task")
    return templates.render(template, variables)


def _untrusted_texts(
    req: AssemblyRequest, kept: Sequence[Exemplar], history: Sequence[Message]
) -> list[str]:
    texts = [e.content for e in kept] + [e.title or "" for e in kept]
    texts += [dumps(compact(v)) for v in req.entities.values()]
    texts += [dumps(compact(dict(s))) for s in req.signals]
    texts += [str(s.get("text") or "") for s in req.sources]  # pages from the open web
    texts += [dumps(compact(dict(t))) for t in req.thread]  # what the contact already got
    texts += [t.content for t in history if t.role in ("tool", "system") or t.name == "summary"]
    texts += [
        v if isinstance(v, str) else dumps(compact(v))
        for k, v in req.task.items()
        if k not in TRUSTED_TASK_FIELDS
    ]
    return texts


def assemble(
    req: AssemblyRequest,
    *,
    budgets: BudgetBook,
    counter: Counter,
    boundary: str | None = None,
) -> AssembledContext:
    """Assemble one call; ``boundary`` is fixed only by tests (a fresh one per call)."""
    boundary = boundary or untrusted.new_boundary()
    agent_id, output_name, template = profile_of(req.profile)
    budget = budgets.for_profile(req.profile)
    trimmed = {
        "entity_fields_stripped": 0,
        "exemplars_dropped": 0,
        "signals_dropped": 0,
        "sources_dropped": 0,
        "thread_dropped": 0,
        "history_dropped": 0,
        "task_fields_stripped": 0,
    }
    count = counter.count

    system = system_message(req.org, req.org_id, agent_id, boundary)
    _check("system", count(system), budget, "role, grounding and constraints are never cut")

    # kc: drop the least similar exemplars; never below one while the budget allows any.
    kept = list(req.exemplars) if budget.kc > 0 else []
    kc = _kc_block(kept, boundary)
    while len(kept) > 1 and count(kc) > budget.kc:
        kept.pop()
        kc = _kc_block(kept, boundary)
    _check("kc", count(kc), budget, f"{len(kept)} exemplar(s) left")
    trimmed["exemplars_dropped"] = len(req.exemplars) - len(kept)

    # entity: compact, fitted by what gives way first (colony.context.entity_section)
    deal = {"deal": {"stage": req.org.deal_stage}} if req.org.deal_stage else {}
    section = entity_section.fit(
        {**req.entities, **deal},
        signals=req.signals,
        sources=req.sources,
        thread=req.thread,
        keep_raw=agent_id in RAW_READERS,
        boundary=boundary,
        count=count,
        budget=budget.entity,
    )
    entity, signals, sources = section.text, section.signals, section.sources
    trimmed["entity_fields_stripped"] = int(section.stripped)
    trimmed["signals_dropped"] = len(req.signals) - len(signals)
    trimmed["sources_dropped"] = len(req.sources) - len(sources)
    trimmed["thread_dropped"] = len(req.thread) - len(section.thread)
    _check("entity", count(entity), budget, "after stripping non-essential fields and signals")

    # history: this call's tool rounds, then earlier turns, newest first, until the budget
    # is spent (a tool round cut here is one the caller's pairing sends as plain text).
    rounds, spent = _newest_within(req.tool_rounds, boundary, count, budget.history, 0)
    history, spent = _newest_within(req.history, boundary, count, budget.history, spent)
    if len(rounds) < len(req.tool_rounds):
        history = []  # an earlier turn never outlives a newer round
    trimmed["history_dropped"] = (
        len(req.history) - len(history) + len(req.tool_rounds) - len(rounds)
    )

    # task: required (template) fields are never cut; optional ones go first, largest first.
    required = templates.fields(template) - _COMPUTED
    optional = {k: v for k, v in req.task.items() if k not in required}
    task = _task_text(template, req.task, optional, boundary)
    while optional and count(task) > budget.task:
        largest = max(optional, key=lambda k: len(dumps(compact(optional[k]))))
        del optional[largest]
        trimmed["task_fields_stripped"] += 1
        task = _task_text(template, req.task, optional, boundary)
    _check("task", count(task), budget, "required task fields are never cut")

    context_block = "\n\n".join(part for part in (kc, entity) if part)
    messages = (
        Message("system", system),
        *([Message("user", context_block)] if context_block else []),
        *history,
        Message("user", task),
        *rounds,
    )
    account = {
        "system": count(system),
        "kc": count(kc),
        "entity": count(entity),
        "history": spent,
        "task": count(task),
    }
    bundle = AgentContextBundle(
        org_id=req.org_id,
        run_id=req.run_id,
        agent_role=agent_id,
        system_prompt=system,
        knowledge_core_exemplars=kept,
        org_context=req.org,
        task_payload=dict(req.task),
        tool_definitions=list(req.tools),
    )
    domains = tuple(dict.fromkeys(req.kc_queried))
    flags = untrusted.scan(_untrusted_texts(req, kept, (*req.history, *req.tool_rounds)))
    return AssembledContext(
        bundle,
        messages,
        account,
        budget,
        output_name,
        domains,
        trimmed,
        counter.label,
        boundary,
        tuple(flags),
        provenance.of(
            agent_id=agent_id,
            template=template,
            exemplars=kept,
            entities={**req.entities, "thread": section.thread},
            history=req.history[len(req.history) - len(history) :],
            trimmed=trimmed,
            signals=signals,
            sources=sources,
            brief_id=req.brief_id,
            rounds=req.tool_rounds[len(req.tool_rounds) - len(rounds) :],
        ),
    )
