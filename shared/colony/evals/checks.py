"""The deterministic properties a case expects of its outcome, one function each.

``check(case, outcome, prop)`` runs the property named by ``prop["check"]`` and returns
whether it holds and why not. Every case is also held to its ``outcome`` (``outcome_holds``):
the answer, ``missing_data``, a refusal or a tool call, as the case says. Where a rule is the
system's own, the property is that rule: CONST-002's matches are ``policy.anti_icp``'s (set
in the case when it was written), CONST-006 is ``policy.outbound.check_outbound`` and
``check_shape``, a tier is ``policy.tiering``'s, a quote is kept only by the flow's grounding
(``quotes_dropped``). ``rubric`` properties are not here: the judge grades them
(``colony.evals.judge``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from colony.contracts.outputs import OutboundMessage
from colony.errors import ValidationFailed
from colony.evals import numbers
from colony.evals.cases import Case
from colony.evals.drive import Outcome
from colony.flows.chat import tools
from colony.flows.insights.brief import render, word_count
from colony.flows.recordings.recording import COMPETITORS
from colony.policy.outbound import check_outbound, check_shape, count_sentences, signal_matches
from colony.store.campaigns.signals import details

Result = tuple[bool, str]
Check = Callable[[Case, Outcome, Mapping[str, Any]], Result]
JUDGED = "rubric"


def text_of(value: Any) -> str:
    """Every string an answer holds, one per line (what a person would read)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(text_of(v) for v in value.values())
    if isinstance(value, list | tuple):
        return "\n".join(text_of(v) for v in value)
    return ""


def field(output: Mapping[str, Any] | None, path: str) -> Any:
    value: Any = output or {}
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _said(outcome: Outcome, prop: Mapping[str, Any]) -> str:
    if prop.get("field"):
        return text_of(field(outcome.output, str(prop["field"])))
    if outcome.tool_calls:
        return json.dumps(outcome.tool_calls, ensure_ascii=False)
    return text_of(outcome.output)


def outcome_holds(case: Case, outcome: Outcome) -> Result:
    if outcome.status == case.outcome:
        return True, ""
    why = f"expected {case.outcome}, got {outcome.status}"
    if outcome.error:
        why += f" ({outcome.error})"
    if outcome.missing:
        why += f" (missing: {', '.join(outcome.missing)})"
    return False, why


def _missing_fields(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    named = " ".join(o.missing).casefold()
    ok = o.status == "missing_data" and any(w.casefold() in named for w in p["any"])
    return ok, "" if ok else f"missing {list(o.missing)}; expected one of {p['any']}"


def _rejected(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    return o.status == "rejected", f"status {o.status}"


def _disqualifiers(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    got = sorted(field(o.output, "disqualifiers") or [])
    return got == sorted(p["equal"]), f"disqualifiers {got}, expected {sorted(p['equal'])}"


def _label(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    got = field(o.output, "recommendation")
    return got == p["equal"], f"policy's outcome {got!r}, expected {p['equal']!r}"


def _tier(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    got, score = field(o.output, "tier"), field(o.output, "total_score")
    why = f"tier {got} (score {score}), expected {p['equal']} (rubric: {p.get('rubric_score')})"
    return got == p["equal"], why


def _within_weights(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    rubric = (case.icp or {}).get("rubric") or {}
    scores = field(o.output, "dimension_scores") or {}
    over = [d for d, v in scores.items() if v > int((rubric.get(d) or {}).get("weight", 100))]
    return not over, f"over their weight: {over}"


def _grounded(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    dropped = o.facts.get("quotes_dropped")
    return dropped == 0, f"{dropped} quote(s) not word for word in their source"


def _signal_types(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    got = {str(s.get("type")) for s in field(o.output, "signals") or []}
    lacking = sorted(set(p.get("include") or ()) - got)
    extra = sorted(got & set(p.get("exclude") or ()))
    return not lacking and not extra, f"not found: {lacking}; not stated but reported: {extra}"


def _same_value(got: Any, want: Any) -> bool:
    a, b = str(got).replace(",", "").strip(), str(want).replace(",", "").strip()
    return a.casefold() == b.casefold()


def _facts(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    kept = field(o.output, "facts") or []
    lacking = [
        f"{w['field']}={w['value']}"
        for w in p.get("include") or ()
        if not any(k["field"] == w["field"] and _same_value(k["value"], w["value"]) for k in kept)
    ]
    extra = [k["field"] for k in kept if k["field"] in (p.get("exclude_fields") or ())]
    return not lacking and not extra, f"facts not found: {lacking}; not to be filled: {extra}"


def _absent(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    said = _said(o, p).casefold()
    found = [t for t in p["texts"] if t.casefold() in said]
    return not found, f"carries {found}"


def _mentions(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    said = _said(o, p).casefold()
    words = [str(w) for w in p.get("any") or p.get("all") or ()]
    hits = [w for w in words if w.casefold() in said]
    ok = bool(hits) if "any" in p else len(hits) == len(words)
    return ok, f"mentions none of {words}" if "any" in p else f"lacks {set(words) - set(hits)}"


def _flagged(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    return bool(o.untrusted), "the detector flagged nothing"


def _competitors(case: Case) -> list[str]:
    return list(case.inputs.get("competitors") or COMPETITORS)


def _const_006(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    if o.output is None:
        return False, "no message"
    problems = check_outbound(
        OutboundMessage.model_validate(o.output),
        tier=str(case.inputs["tier"]),
        contact_signals=details(case.inputs.get("signals") or []),
        competitors=_competitors(case),
    )
    return not problems, "; ".join(problems)


def _shape(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    if o.output is None:
        return False, "no message"
    problems = check_shape(
        str(o.output["subject"]),
        str(o.output["body"]),
        tier=p["tier"],
        competitors=_competitors(case),
    )
    return not problems, "; ".join(problems)


def _equal(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    got = field(o.output, p["field"])
    return got == p["value"], f"{p['field']} is {got!r}, expected {p['value']!r}"


def _not_equal(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    got = field(o.output, p["field"])
    return o.output is not None and got != p["value"], f"{p['field']} is {got!r}"


def _signal_referenced(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    said = str(field(o.output, "signal_referenced") or "")
    return any(signal_matches(said, s) for s in p["one_of"]), f"referenced {said[:120]!r}"


def _max_sentences(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    n = count_sentences(str(field(o.output, p["field"]) or ""))
    return 0 < n <= int(p["max"]), f"{n} sentences (at most {p['max']})"


def _chunks(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    n = int(o.facts.get("chunks") or 0)
    return n >= int(p["min"]), f"{n} chunk(s)"


def _numbers_grounded(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    invented = numbers.ungrounded(text_of(o.output), o.seen)
    return o.output is not None and not invented, f"numbers no input states: {invented[:8]}"


def _sections(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    headings = " ".join(str(s.get("heading")) for s in field(o.output, "sections") or []).casefold()
    lacking = [k for k in p["keywords"] if k.casefold() not in headings]
    return o.output is not None and not lacking, f"no section on {lacking}"


def _word_limit(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    if o.output is None:
        return False, "no brief"
    n = word_count(render(o.output))
    return n <= int(p["max"]), f"{n} words"


def _brief_grounding(case: Case, o: Outcome) -> set[str]:
    prior = str(case.inputs.get("prior_brief") or "")
    day = str(case.inputs.get("brief_date") or "2026-12-01")
    return numbers.snapshot_numbers(o.facts.get("snapshot") or {}) | numbers.stated([prior, day])


def _numbers_match(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    if o.output is None:
        return False, "no brief"
    wrong = numbers.ungrounded(render(o.output), _brief_grounding(case, o))
    return not wrong, f"numbers the SQL aggregates do not give: {wrong[:8]}"


def _numbers_present(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    snapshot = o.facts.get("snapshot") or {}
    said = numbers.stated([render(o.output)]) if o.output else set()
    lacking = [k for k in p["keys"] if numbers.stated([str(snapshot.get(k))]) - said]
    return o.output is not None and not lacking, f"not stated: {lacking}"


def _first_tool(o: Outcome) -> Mapping[str, Any]:
    return o.tool_calls[0] if o.tool_calls else {}


def _tool(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    names = [c["name"] for c in o.tool_calls]
    return names[:1] == [p["name"]], f"called {names or 'no tool'}"


def _same_arg(got: Any, want: Any) -> bool:
    if isinstance(want, list):
        return isinstance(got, list) and sorted(map(str, got)) == sorted(map(str, want))
    return str(got).casefold() == str(want).casefold()


def _tool_args(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    args = _first_tool(o).get("arguments") or {}
    wrong = {k: args.get(k) for k, v in p["subset"].items() if not _same_arg(args.get(k), v)}
    return bool(o.tool_calls) and not wrong, f"arguments {wrong}"


def _tool_args_valid(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    call = _first_tool(o)
    try:
        tools.parse_args(str(call.get("name")), call.get("arguments") or {})
    except ValidationFailed as error:
        return False, str(error)[:200]
    return True, ""


def _not_tool(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    used = [c["name"] for c in o.tool_calls if c["name"] in p["names"]]
    return not used, f"called {used}"


def _no_tool(case: Case, o: Outcome, p: Mapping[str, Any]) -> Result:
    return not o.tool_calls, f"called {[c['name'] for c in o.tool_calls]}"


CHECKS: dict[str, Check] = {
    "missing_fields": _missing_fields,
    "rejected": _rejected,
    "disqualifiers": _disqualifiers,
    "label": _label,
    "tier": _tier,
    "dimensions_within_weights": _within_weights,
    "grounded": _grounded,
    "signal_types": _signal_types,
    "facts": _facts,
    "absent": _absent,
    "mentions": _mentions,
    "untrusted_flagged": _flagged,
    "const_006": _const_006,
    "shape": _shape,
    "equal": _equal,
    "not_equal": _not_equal,
    "signal_referenced": _signal_referenced,
    "max_sentences": _max_sentences,
    "chunks": _chunks,
    "numbers_grounded": _numbers_grounded,
    "sections": _sections,
    "word_limit": _word_limit,
    "numbers_match": _numbers_match,
    "numbers_present": _numbers_present,
    "tool": _tool,
    "tool_args": _tool_args,
    "tool_args_valid": _tool_args_valid,
    "not_tool": _not_tool,
    "no_tool": _no_tool,
}


def check(case: Case, outcome: Outcome, prop: Mapping[str, Any]) -> Result:
    """Whether ``outcome`` has ``prop``; a property the outcome cannot have (no answer to
    look at) fails with the outcome's own reason."""
    name = str(prop["check"])
    if name not in CHECKS:
        raise ValidationFailed(f"{case.id}: there is no check {name!r}")
    if outcome.status == "error":
        return False, f"no answer: {outcome.error}"
    try:
        passed, why = CHECKS[name](case, outcome, prop)
    except (AttributeError, KeyError, TypeError, ValueError) as broken:  # a wrong shape
        return False, f"{type(broken).__name__}: {str(broken)[:160]}"
    return passed, "" if passed else why


def names(props: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(p["check"]) for p in props if p["check"] != JUDGED]
