"""What driving one case shares: the environment (the model path, a database for AGT-010),
the outcome it records, and the one call every agent's case makes.

``call`` is ``colony.llm.agent_call.call_agent``, the path every flow takes: the assembler
(templates, budgets, the real token counter), the provider's adapter through the traced
model, the structured runner (repair, CONST-004's ``missing_data``) and the flow's own check.
Each call's tokens, latency, attempts and model are kept; a ``DataMissing`` answer is the
outcome ``missing_data``; any other error of ours or the provider's is ``error`` with its
summary (``colony.errors.error_summary``: never prompt text).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from colony.context import untrusted
from colony.context.assembler import AssemblyRequest
from colony.contracts import Exemplar, IcpDefinition, OrgContext
from colony.errors import ColonyError, DataMissing, OutputInvalid, error_summary
from colony.evals import numbers
from colony.evals.cases import Case
from colony.flows.deps import FlowDeps
from colony.knowledge.sync import content_hash
from colony.llm.agent_call import AgentResult, LlmDeps, call_agent
from colony.llm.runner import AnswerStream
from colony.local.demo import (
    DEMO_DIR,
    KcDocument,
    document_chunks,
    parse_front_matter,
    read_json,
)
from colony.store import Database

ORG_NAME = "ZoomProp"
RETRIEVED = 6  # chunks a case's retrieval returns at most
DETAIL_CHARS = 1000  # of an invalid answer's problems, in the report


@dataclass(frozen=True)
class Env:
    """Where a case runs: the model path, and a database for the cases that need one
    (AGT-010's numbers are SQL over the case's rows); ``run_id`` keeps one run's rows apart."""

    llm: LlmDeps
    db: Database | None = None
    run_id: str = "eval"


@dataclass
class CallStat:
    profile: str
    model: str
    tokens_in: int
    tokens_out: int
    latency_ms: float
    attempts: int
    template: str


@dataclass
class Outcome:
    """What a case ended in, after the flow's own handling of the answer."""

    status: str = "answer"  # answer | missing_data | rejected | tool | error
    output: dict[str, Any] | None = None
    missing: tuple[str, ...] = ()
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    # why an answer was invalid (the runner's list of problems): kept in the local report
    # beside the output it judges, never logged (the problems may quote the answer)
    error_detail: str | None = None
    calls: list[CallStat] = field(default_factory=list)
    untrusted: tuple[str, ...] = ()  # what the assembler's detector flagged, over every call
    facts: dict[str, Any] = field(default_factory=dict)  # per agent: quotes dropped, snapshot…
    seen: set[str] = field(default_factory=set)  # every number the prompts sent stated

    def fail(self, error: BaseException) -> Outcome:
        self.status, self.error = "error", error_summary(error)
        if isinstance(error, OutputInvalid):
            self.error_detail = str(error)[:DETAIL_CHARS]
        return self


class _Text:
    """A stream sink keeping the current attempt's text (AGT-001 streams its turns)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def feed(self, fragment: str) -> None:
        self.parts.append(fragment)

    def restart(self) -> None:
        self.parts.clear()


def call(
    env: Env,
    outcome: Outcome,
    request: AssemblyRequest,
    *,
    check: Callable[[Any], Sequence[str]] | None = None,
    stream: bool = False,
) -> AgentResult | None:
    """One model call through ``call_agent``, recorded on ``outcome``; None when it ended
    the case (missing data, an error)."""
    started = time.perf_counter()
    sink: AnswerStream | None = _Text() if stream else None
    try:
        result = call_agent(env.llm, request, check=check, stream=sink)
    except DataMissing as missing:
        outcome.status, outcome.missing = "missing_data", tuple(missing.fields)
        outcome.calls.append(_stat(env, request, started, None))
        return None
    except ColonyError as error:
        outcome.fail(error)
        outcome.calls.append(_stat(env, request, started, None))
        return None
    outcome.calls.append(_stat(env, request, started, result))
    outcome.seen |= numbers.stated(m.content for m in result.assembled.messages)
    found = untrusted.merge(outcome.untrusted, result.assembled.untrusted_instructions)
    outcome.untrusted = tuple(found)
    return result


def _stat(
    env: Env, request: AssemblyRequest, started: float, result: AgentResult | None
) -> CallStat:
    elapsed = (time.perf_counter() - started) * 1000
    if result is None:  # the tokens of a call that failed are not known here
        return CallStat(request.profile, env.llm.model_for(request.profile), 0, 0, elapsed, 0, "")
    template = result.assembled.provenance.get("template", {}).get("version", "")
    return CallStat(
        request.profile,
        result.model,
        result.usage.tokens_in,
        result.usage.tokens_out,
        elapsed,
        result.attempts,
        str(template),
    )


def contact_of(case: Case) -> dict[str, Any]:
    """The case's contact: given whole, or ``{"demo": "P-010", ...}``, the demo's contact
    with the keys given over it (``enrichment`` merged key by key; null removes a key)."""
    given = dict(case.inputs["contact"])
    name = given.pop("demo", None)
    if name is None:
        return given
    found = next(c for c in read_json("contacts.json") if c["external_id"] == name)
    contact = {"id": f"c-{str(name).lower()}", **copy.deepcopy(found)}
    changes = given.pop("enrichment", {})
    contact.update(given)
    for key, value in changes.items():
        if value is None:
            contact["enrichment"].pop(key, None)
        else:
            contact["enrichment"][key] = value
    return {k: v for k, v in contact.items() if v is not None}


def org_context(case: Case) -> OrgContext:
    icp = case.icp
    name = str(case.inputs.get("org_name") or ORG_NAME)
    return OrgContext(org_name=name, icp=IcpDefinition(**icp) if icp else None)


def chunks(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A case's Knowledge Core document as the chunks the Knowledge Core keeps of it:
    ``{"demo": "KC-05/x.md"}`` is the demo's file, chunked as ``colony demo`` loads it
    (``local.demo.document_chunks``: its front matter as title and tags); a document given
    inline is one chunk."""
    if "demo" not in entry:
        return [dict(entry)]
    path = DEMO_DIR / "kc" / str(entry["demo"])
    meta, body = parse_front_matter(path.read_text(encoding="utf-8"))
    title = meta.pop("title", path.stem)
    doc = KcDocument(path.parent.name, path.stem, title, meta, body)
    return [
        {"domain": c.domain, "title": c.title, "content": c.content, "tags": c.tags}
        for c in document_chunks(doc)
    ]


def exemplars(case: Case, default: Sequence[str] = ()) -> list[Exemplar]:
    """What retrieval returned for the case, best first, as exemplars (``to_exemplars``):
    the chunks of its documents taken in turn (each document's first, then each one's
    second…), at most ``RETRIEVED``; ``default`` (demo paths) when the case names none.
    The assembler keeps what its Knowledge Core budget holds, the best first."""
    entries = case.inputs.get("kc")
    if entries is None:
        entries = [{"demo": d} for d in default]
    per_doc = [chunks(e) for e in entries]
    ranked = [c[i] for i in range(max(map(len, per_doc), default=0)) for c in per_doc if i < len(c)]
    return [
        Exemplar(
            domain=d["domain"],
            title=d.get("title"),
            content=d["content"],
            tags={k: str(v) for k, v in (d.get("tags") or {}).items()},
            similarity=round(0.9 - 0.05 * i, 4),  # best first, as retrieval orders them
            content_hash=content_hash(d["content"]),
        )
        for i, d in enumerate(ranked[:RETRIEVED])
    ]


@dataclass(frozen=True)
class LlmOnly:
    """What the flows' helpers that read only ``deps.llm`` (a message's check, the pass-1
    chunk size) are given here: the eval has no function's other parts."""

    llm: LlmDeps


def llm_only(env: Env) -> FlowDeps:
    return cast(FlowDeps, LlmOnly(env.llm))
