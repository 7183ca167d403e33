"""Offline answers for AGT-001's chat: ``orchestrator_reply`` and ``conversation_summary``.

Context shapes (callers build exactly these; a missing required key raises
``ValidationFailed`` naming it):

- ``orchestrator_reply`` (the contract is ``colony.contracts.chat.OrchestratorReply``) reads
  the prompt too: the person's message (the last user turn), this turn's tool results (the
  ``source=tool`` blocks after it: ``{"ok", "result" | "error"}`` named by the block), the
  ``daily_brief`` and ``pending_approvals`` entities and the KC blocks' domains and titles;
  the tools offered are ``request.tools``, as a real provider sees them. With tool results
  from this turn it answers by describing them (counts, ids and names copied from the
  results; a failed tool is reported with its error message). Otherwise it maps the
  message's intent to one tool call, checked in this order, and only to tools offered:
  ``launch`` … ``campaign`` → ``launch_campaign`` (the first angle word named, default
  Signal; the tier as written — ``T9`` is passed through so the flow's argument check
  rejects it; ``P-001``-style ids as ``contact_external_ids``, else
  omitted); ``research``/``look up``/``look into`` with a domain or URL in the message →
  ``research_company`` (the first URL, else the first domain-like name, as written: the
  flow's argument check refuses what names no company; ``again``/``refresh`` → ``force``);
  ``pipeline``/``deals``/``snapshot`` → ``pipeline_snapshot``;
  ``approval``/``queue``/``pending`` → ``list_approvals``;
  ``write``/``draft``/``post``/``blog``/``newsletter``/``one-pager`` → ``ask_content_agent``
  (format from the word); ``search``/``find``/``knowledge``/a KC id → ``search_knowledge``
  (that domain when named). Anything else gets a text answer from the context: the brief's
  first sentence, the knowledge titles and the queue size. The tool call comes back as
  ``ModelResponse.tool_calls`` with empty text, as real providers do, which is why this one
  answers with a whole ``ModelResponse`` rather than a contract dict.
- ``conversation_summary`` reads the prompt (``colony.adapters.offline.prompt``): the
  ``turns`` block (``role: content`` lines) and the ``previous_summary`` block (the JSON of
  {decisions, entity_ids, pending_items, user_preferences}, or ``(none)``). Sentences with decision
  words, entity ids (``P-001``, ``AGT-005``, UUIDs), pending-work words and (user turns only)
  preference words; the previous summary's items come first, duplicates dropped, each list
  capped and the whole kept under ~300 estimated tokens by dropping the oldest items.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from colony.adapters.offline.common import (
    clip,
    humanise,
    object_list,
    opt_str,
    require_text,
    string_list,
)
from colony.adapters.offline.prompt import Prompt, blocks_in, parse
from colony.adapters.offline.usage import MODEL_NAME, estimate_tokens
from colony.contracts.chat import OrchestratorReply
from colony.contracts.common import ANGLES
from colony.errors import ValidationFailed
from colony.policy.outbound import split_sentences
from colony.ports import ModelRequest, ModelResponse, ToolCall, Usage

_I = re.IGNORECASE

# -- orchestrator_reply (AGT-001 chat turn) ----------------------------------------------------

_TIER = re.compile(r"\bT(\d{1,2})\b")
_CONTACT_ID = re.compile(r"\bP-\d{3,6}\b")
_KC_ID = re.compile(r"\bKC-(0[1-9]|10)\b")
_RESEARCH = re.compile(r"\b(?:research|look(?:ing)? (?:up|into)|read up on)\b", _I)
_AGAIN = re.compile(r"\b(?:again|refresh|re-?read)\b", _I)
_URL = re.compile(r"\bhttps?://[^\s\"'<>]+", _I)
# a name with a dot and a letter-led top label: ``acme.example's`` gives ``acme.example``
_HOST = re.compile(r"\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]\b", _I)
_FORMATS = (
    ("newsletter", "email_newsletter"),
    ("blog", "blog_post"),
    ("one-pager", "one_pager"),
    ("one pager", "one_pager"),
)


def _turn_inputs(request: ModelRequest) -> dict[str, Any]:
    """What AGT-001's rendered prompt tells it, in the shape ``_orchestrate`` reads."""
    prompt = parse(request.messages)
    users = [i for i, m in enumerate(request.messages) if m.role == "user"]
    after = request.messages[users[-1] + 1 :] if users else ()
    results: list[dict[str, Any]] = []
    for message in after:
        if message.role != "tool":
            continue
        for block in blocks_in(message.content, prompt.boundary):
            try:
                value = json.loads(block.text)
            except json.JSONDecodeError:
                value = {"ok": True, "clipped": block.text}
            if isinstance(value, Mapping):
                results.append({"name": block.get("name") or message.name, **value})
    brief = prompt.optional_entity("daily_brief")
    queue = prompt.optional_entity("pending_approvals")
    return {
        "message": prompt.task,
        "tool_results": results,
        "daily_brief": brief if isinstance(brief, str) and not brief.startswith("(") else None,
        "pending_approvals": queue if isinstance(queue, list) else [],
        "knowledge": [
            {"domain": b.get("domain"), "title": b.get("title")} for b in prompt.exemplars()
        ],
    }


def orchestrator_response(request: ModelRequest) -> ModelResponse:
    """AGT-001's turn: one tool call (with empty text) or an ``OrchestratorReply``."""
    ctx = _turn_inputs(request)
    offered = {str(t.get("name")) for t in request.tools if isinstance(t, Mapping)}
    decision = _orchestrate(ctx, offered)
    prompt = "".join(message.content for message in request.messages)
    calls: tuple[ToolCall, ...] = ()
    if isinstance(decision, ToolCall):
        text, calls = "", (decision,)
        out = json.dumps({"name": decision.name, "arguments": dict(decision.arguments)})
    else:
        text = OrchestratorReply.model_validate(decision).model_dump_json()
        out = text
    return ModelResponse(
        text=text,
        usage=Usage(tokens_in=estimate_tokens(prompt), tokens_out=estimate_tokens(out)),
        model=MODEL_NAME,
        tool_calls=calls,
    )


def _orchestrate(ctx: Mapping[str, Any], offered: set[str]) -> ToolCall | dict[str, Any]:
    message = " ".join(require_text(ctx, "message").split())
    results = object_list(ctx, "tool_results")
    if results:
        return {"answer": clip(" ".join(_describe(r) for r in results), 4000)}
    low = message.casefold()

    def call(name: str, arguments: dict[str, Any]) -> ToolCall | None:
        return ToolCall(name=name, arguments=arguments) if name in offered else None

    candidates: list[ToolCall | None] = []
    if "launch" in low and "campaign" in low:
        angle = next((a for a in ANGLES if a.casefold() in low), "Signal")
        tier = _TIER.search(message)
        arguments: dict[str, Any] = {"angle": angle, "tier": f"T{tier.group(1)}" if tier else "T1"}
        contacts = list(dict.fromkeys(_CONTACT_ID.findall(message)))
        if contacts:
            arguments["contact_external_ids"] = contacts
        candidates.append(call("launch_campaign", arguments))
    company = _company(message) if _RESEARCH.search(message) else None
    if company:
        arguments = {"domain": company, "force": bool(_AGAIN.search(message))}
        candidates.append(call("research_company", arguments))
    if any(w in low for w in ("pipeline", "deals", "snapshot")):
        candidates.append(call("pipeline_snapshot", {}))
    if any(w in low for w in ("approval", "queue", "pending")):
        candidates.append(call("list_approvals", {}))
    if re.search(r"\b(write|draft|post|blog|newsletter|one[- ]pager)\b", low):
        fmt = next((f for word, f in _FORMATS if word in low), "linkedin_post")
        candidates.append(call("ask_content_agent", {"topic": clip(message, 300), "format": fmt}))
    if re.search(r"\b(search|find|knowledge|what do we know)\b", low) or _KC_ID.search(message):
        arguments = {"query": clip(message, 500)}
        domain = _KC_ID.search(message)
        if domain:
            arguments["domain"] = domain.group(0)
        candidates.append(call("search_knowledge", arguments))
    chosen = next((c for c in candidates if c is not None), None)
    if chosen is not None:
        return chosen
    return {"answer": _plain_answer(ctx)}


def _company(message: str) -> str | None:
    """The website a message names: its first URL (trailing punctuation dropped), else its
    first domain-like name."""
    url = _URL.search(message)
    if url:
        return url.group(0).rstrip(".,;:!?)")
    host = _HOST.search(message)
    return host.group(0) if host else None


def _plain_answer(ctx: Mapping[str, Any]) -> str:
    parts = ["Offline orchestrator here (deterministic, not a language model)."]
    brief = opt_str(ctx, "daily_brief")
    if brief:
        first = split_sentences(brief)
        parts.append(f"Today's brief opens: {clip(first[0] if first else brief, 240)}")
    else:
        parts.append("No daily brief has been written today.")
    titles = [str(k.get("title") or k.get("domain")) for k in object_list(ctx, "knowledge")]
    if titles:
        parts.append("Related knowledge: " + "; ".join(titles[:3]) + ".")
    queue = object_list(ctx, "pending_approvals")
    parts.append(f"{len(queue)} approval item{'s' if len(queue) != 1 else ''} pending.")
    parts.append(
        "Ask me for the pipeline, a knowledge search, the approval queue, a content "
        "piece, a company's research or a campaign launch."
    )
    return " ".join(parts)


def _describe(item: Mapping[str, Any]) -> str:
    name = str(item.get("name") or "tool")
    if not item.get("ok"):
        error = item.get("error") if isinstance(item.get("error"), Mapping) else {}
        return f"I could not run {name}: {(error or {}).get('message', 'it failed')}."
    r = item.get("result") if isinstance(item.get("result"), Mapping) else {}
    r = r or {}
    if "clipped" in item:
        return f"{name} returned more than fits here; ask me for the part you need."
    if name == "launch_campaign":
        return (
            f"Launched campaign {r.get('name')!s} ({r.get('angle')}, {r.get('tier')}) as "
            f"run {r.get('run_id')} over {r.get('contacts')} prospects; AGT-002 has it."
        )
    if name == "research_company":
        return _researching(r)
    if name == "pipeline_snapshot":
        stages = r.get("deals_by_stage") or {}
        listed = (
            ", ".join(
                f"{humanise(str(k))} {v.get('deals')} (${v.get('value', 0):,.0f})"
                for k, v in stages.items()
            )
            or "no deals"
        )
        runs = ", ".join(f"{k} {v}" for k, v in (r.get("runs") or {}).items()) or "none"
        return (
            f"Pipeline: {listed}. Campaign runs: {runs}. "
            f"{r.get('approvals_pending', 0)} approval items pending."
        )
    if name == "search_knowledge":
        found = [
            f"[{x.get('domain')}] {x.get('title') or 'untitled'}" for x in r.get("results") or []
        ]
        return (
            ("Knowledge Core: " + "; ".join(found) + ".")
            if found
            else "The Knowledge Core has nothing on that."
        )
    if name == "list_approvals":
        items = [
            f"{x.get('id')} ({x.get('kind')}: {x.get('summary')})"
            for x in (r.get("items") or [])[:5]
        ]
        return f"{r.get('pending_total', 0)} pending approval items" + (
            ": " + "; ".join(items) + "." if items else "."
        )
    if name == "ask_content_agent":
        return (
            f"Asked the content agent for a {humanise(str(r.get('format')))} on "
            f"\u201c{r.get('topic')}\u201d (request {r.get('request_id')}); its draft "
            "will land in the approval queue."
        )
    return f"{name} finished."


_RESEARCH_STATES = {
    "started": "its pages are being read and kept for AGT-003 to quote",
    "running": "a pass over it was already under way",
    "ready": "it was researched this week, so nothing was fetched again (say refresh to "
    "read it anew)",
}


def _researching(r: Mapping[str, Any]) -> str:
    state = str(r.get("state"))
    return f"Research of {r.get('domain')}: {state}; {_RESEARCH_STATES.get(state, 'asked')}."


# -- conversation_summary ----------------------------------------------------------------------

_DECISION = re.compile(
    r"\b(?:approve[sd]?|decided|let'?s go|go ahead|launch(?:ed)?|confirmed|agreed)\b", _I
)
_PENDING = re.compile(
    r"\b(?:pending|awaiting|waiting|follow[- ]up|to-?do|need to|needs to|remind me|next step|"
    r"still need|not yet|tomorrow|later)\b",
    _I,
)
_PREFERENCE = re.compile(
    r"\b(?:prefer|always|never|don'?t|do not|please (?:use|keep|avoid)|I like|I want)\b", _I
)
_ENTITY = re.compile(
    r"\b(?:[A-Z]{1,6}-\d{1,6}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12})\b"
)
_LIST_CAPS = {"decisions": 8, "entity_ids": 20, "pending_items": 6, "user_preferences": 8}
_SUMMARY_TOKEN_BUDGET = 300


def _merge(previous: list[str], new: list[str], cap: int) -> list[str]:
    merged: list[str] = []
    seen: set[str] = set()
    for item in [*previous, *new]:
        key = " ".join(item.casefold().split())
        if key and key not in seen:
            seen.add(key)
            merged.append(item)
    return merged[-cap:]


_TURN = re.compile(r"^(user|assistant|tool|system): ", re.MULTILINE)


def _turns(text: str) -> list[dict[str, str]]:
    """``role: content`` lines back into turns (a turn's content may span lines)."""
    starts = list(_TURN.finditer(text))
    return [
        {"role": m.group(1), "content": text[m.end() : nxt.start() if nxt else len(text)].strip()}
        for m, nxt in zip(starts, [*starts[1:], None], strict=True)
    ]


def conversation_summary(prompt: Prompt) -> dict[str, Any]:
    """Decisions, entity ids, pending items and preferences, folded into the previous summary."""
    text = prompt.field_text("turns")
    if text is None:
        raise ValidationFailed("the prompt has no turns block")
    turns = _turns(text)
    shown = prompt.field_text("previous_summary")
    if shown is None:
        raise ValidationFailed("the prompt has no previous_summary block")
    previous = None if shown.strip() == "(none)" else prompt.field_json("previous_summary")
    if previous is not None and not isinstance(previous, Mapping):
        raise ValidationFailed("the previous_summary block must be an object or (none)")
    found: dict[str, list[str]] = {key: [] for key in _LIST_CAPS}
    for index, turn in enumerate(turns):
        content = turn.get("content")
        role = turn.get("role")
        if not isinstance(content, str):
            raise ValidationFailed(f"turns[{index}].content is missing")
        found["entity_ids"] += [m.group(0) for m in _ENTITY.finditer(content)]
        for sentence in split_sentences(content):
            item = clip(" ".join(sentence.split()), 160)
            if _DECISION.search(sentence) and not sentence.rstrip().endswith("?"):
                found["decisions"].append(item)
            if _PENDING.search(sentence):
                found["pending_items"].append(item)
            if role == "user" and _PREFERENCE.search(sentence):
                found["user_preferences"].append(item)
    summary: dict[str, list[str]] = {}
    for key, cap in _LIST_CAPS.items():
        before = string_list((previous or {}).get(key), f"previous_summary.{key}")
        summary[key] = _merge(before, found[key], cap)
    while estimate_tokens(json.dumps(summary)) > _SUMMARY_TOKEN_BUDGET:
        longest = max(summary, key=lambda k: sum(len(v) for v in summary[k]))
        if not summary[longest]:
            break
        summary[longest].pop(0)  # the oldest item goes first
    return summary
