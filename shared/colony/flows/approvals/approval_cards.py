"""What a person needs on an approval card to decide from it, per kind (issue 20 item 1).

``detail(row, competitors)`` is pure: it takes a row of
``store.approvals.approvals.pending_detailed`` (the item, its contact, campaign and current deal)
and returns the card's ``detail``:

    outbound_message, follow_up   subject, body, to, prospect {name, title, company}, tier,
                                  angle, step, signal used, the contact's signals (each
                                  {detail, quote, source, confidence, observed_on}: the
                                  stored ones, strongest first; a contact never enriched
                                  shows its own list, with no quote, source or confidence),
                                  exemplars (when the draft recorded them), CONST checks,
                                  research {domain, outcome, finished_at} (how research of
                                  the company ended: ``no_website`` says why no page is
                                  quoted); a signal read from a web page also gets its
                                  stored copy (a signed link) and fetch day
                                  (``approval_queue``)
    sequence_task                 a LinkedIn or call step, for a person: channel, step, the
                                  step's guidance, the drafted talking points (subject,
                                  body), and what an outbound message shows besides
                                  (prospect, tier, angle, signals, exemplars, checks); no
                                  ``to``: nothing is sent
    deal_update                   the deal, and a diff {field, from, to} against it now;
                                  for a deal linked to HubSpot, what the card read there
                                  (``crm_read``: each field's value and when it was set)
    crm_conflict                  HubSpot changed a field since its card read it: per field
                                  ours, what we read (and when), HubSpot's now (and when),
                                  and which side ``keep`` chooses (ours or theirs)
    kc_update_candidate           content, target domain, confidence
    content_piece                 title, format, body
    tool_action                   tool and arguments
    deployment_kit                (its link is on the card itself)
    missing_data                  title, the agent, the prospect and ``missing_data``: the
                                  fields the agent said it lacked (CONST-004); dismiss only

plus, for every kind, ``editable`` (the fields an edit may replace) and ``labels`` (what
approving and rejecting it mean to the person: "Done" and "Skip" for a task), both from
``colony.flows.approvals.editable``, and ``missing``: what the card would show but the item
does not carry, so a reviewer sees a gap as a gap rather than as nothing. The CONST checks
are run now, against the draft as it stands and the contact's current signals (the same
``policy.outbound`` rules the drafting call had to pass), so a card never claims a check the
policy would not make today.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from colony.flows.approvals.editable import APPROVE_REJECT, EDITABLE, LABELS
from colony.policy.outbound import check_outbound, check_shape
from colony.store.campaigns.signals import own as own_signals

MESSAGE_KINDS = ("outbound_message", "follow_up")
TASK_KIND = "sequence_task"
# Drafts AGT-005 wrote for a contact (checked against the whole of CONST-006, one signal too).
CONTACT_DRAFTS = ("outbound_message", TASK_KIND)
# Kinds whose cards run the CONST-006 checks (and so need the org's competitors).
CHECKED_KINDS = (*MESSAGE_KINDS, TASK_KIND)
# What the card shows of each of the contact's signals: where it came from and how sure.
SIGNAL_FIELDS = ("detail", "quote", "source", "confidence", "observed_on")


def detail(row: Mapping[str, Any], competitors: Sequence[str]) -> dict[str, Any]:
    kind = str(row["kind"])
    payload: Mapping[str, Any] = row.get("payload") or {}
    shown: dict[str, Any] = {"editable": sorted(EDITABLE.get(kind, ()))}
    if kind in EDITABLE:
        approve, reject = LABELS.get(kind, APPROVE_REJECT)
        shown["labels"] = {"approve": approve, "reject": reject}
    missing: list[str] = []
    if kind in MESSAGE_KINDS:
        shown.update(_message(row, payload, competitors, missing))
    elif kind == TASK_KIND:
        shown.update(_message(row, payload, competitors, missing))
        del shown["to"]  # nothing is sent: a person reaches them on the step's channel
        shown.update(_pick(payload, ("channel",), missing))
        shown["guidance"] = payload.get("guidance")
    elif kind == "deal_update":
        shown.update(_deal(row, payload, missing))
    elif kind == "crm_conflict":
        shown.update(_crm_conflict(row, payload, missing))
    elif kind == "kc_update_candidate":
        shown.update(_pick(payload, ("content", "domain", "confidence"), missing))
    elif kind == "content_piece":
        shown.update(_pick(payload, ("title", "format", "body"), missing))
    elif kind == "tool_action":
        shown.update({"tool": payload.get("tool"), "arguments": payload.get("arguments") or {}})
    elif kind == "missing_data":
        shown.update(_pick(payload, ("title", "agent_id"), missing))
        shown["prospect"] = _prospect(row, missing)
    if payload.get("missing_data"):  # what the drafting agent itself said it lacked
        shown["missing_data"] = [str(m) for m in _as_list(payload["missing_data"])]
    shown["missing"] = missing
    return shown


def _message(
    row: Mapping[str, Any],
    payload: Mapping[str, Any],
    competitors: Sequence[str],
    missing: list[str],
) -> dict[str, Any]:
    shown = _pick(payload, ("subject", "body"), missing)
    shown["to"] = payload.get("to")
    shown["tier"] = payload.get("tier")
    shown["angle"] = payload.get("angle_used")
    shown["step"] = payload.get("sequence_step")
    shown["signal_used"] = payload.get("signal_referenced")
    prospect = _prospect(row, missing)
    if prospect is not None:
        shown["prospect"] = prospect
    known = _as_list(row.get("stored_signals")) or own_signals(row.get("contact_signals"))
    shown["signals"] = [
        {k: s.get(k) for k in SIGNAL_FIELDS}
        for s in known
        if isinstance(s, Mapping) and s.get("detail")
    ]
    research = row.get("contact_research")
    if isinstance(research, Mapping):  # what research of the company came to (issue 33)
        shown["research"] = {k: research.get(k) for k in ("domain", "outcome", "finished_at")}
    signals = [str(s["detail"]) for s in shown["signals"]]
    exemplars = payload.get("exemplars")
    if exemplars:
        shown["exemplars"] = [_exemplar(e) for e in _as_list(exemplars)]
    else:
        missing.append("exemplars")
    for field, value in (("tier", shown["tier"]), ("angle", shown["angle"])):
        if not value and row["kind"] in CONTACT_DRAFTS:
            missing.append(field)
    shown["checks"] = _checks(row["kind"], payload, signals, competitors)
    return shown


def _prospect(row: Mapping[str, Any], missing: list[str]) -> dict[str, Any] | None:
    if row.get("contact_name") is None:
        missing.append("prospect")
        return None
    return {
        "name": row.get("contact_name"),
        "title": row.get("contact_title"),
        "company": row.get("contact_company"),
    }


def _checks(
    kind: str, payload: Mapping[str, Any], signals: list[str], competitors: Sequence[str]
) -> list[dict[str, Any]]:
    """CONST-006 as it judges the draft now: one entry, with its problems (none: passes)."""
    subject, body = payload.get("subject"), payload.get("body")
    if not isinstance(subject, str) or not isinstance(body, str):
        return []
    tier = str(payload.get("tier") or "T3")
    if kind in CONTACT_DRAFTS and isinstance(payload.get("signal_referenced"), str):
        from colony.contracts import OutboundMessage  # lazy: pydantic, only for this kind

        try:
            message = OutboundMessage.model_validate(
                {k: payload.get(k) for k in ("subject", "body", "angle_used", "signal_referenced")}
            )
        except ValueError:
            problems = ["the draft no longer matches the outbound message contract"]
        else:
            problems = check_outbound(
                message, tier=tier, contact_signals=signals, competitors=list(competitors)
            )
        rule = "CONST-006 shape, one signal, no competitor"
    else:
        problems = check_shape(subject, body, tier=tier, competitors=list(competitors))
        rule = "CONST-006 shape, no competitor"
    return [{"rule": rule, "ok": not problems, "problems": problems}]


def _deal(row: Mapping[str, Any], payload: Mapping[str, Any], missing: list[str]) -> dict[str, Any]:
    raw = payload.get("changes")
    changes: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    known = row.get("deal_name") is not None
    if not known:
        missing.append("deal")
    diff = [
        {"field": field, "from": _plain(row.get(f"deal_{field}")) if known else None, "to": value}
        for field, value in changes.items()
    ]
    shown: dict[str, Any] = {"deal": {"id": payload.get("deal_id"), "name": row.get("deal_name")}}
    shown["diff"] = diff
    if isinstance(payload.get("rationale"), str):
        shown["rationale"] = payload["rationale"]
    read = payload.get("crm_read")
    if isinstance(read, Mapping):  # what HubSpot held when the card was built
        shown["crm_read"] = {k: read.get(k) for k in ("provider", "deal", "read_at", "fields")}
    return shown


def _crm_conflict(
    row: Mapping[str, Any], payload: Mapping[str, Any], missing: list[str]
) -> dict[str, Any]:
    if row.get("deal_name") is None:
        missing.append("deal")
    keys = ("field", "ours", "read", "read_at", "theirs", "theirs_ours", "changed_at")
    fields = [
        {k: f.get(k) for k in keys}
        for f in _as_list(payload.get("fields"))
        if isinstance(f, Mapping)
    ]
    return {
        "deal": {"id": payload.get("deal_id"), "name": row.get("deal_name")},
        "crm_deal": payload.get("crm_deal"),
        "fields": fields,
        "keep": payload.get("keep"),
        "choices": ["ours", "theirs"],
    }


def _pick(payload: Mapping[str, Any], fields: Sequence[str], missing: list[str]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for field in fields:
        value = payload.get(field)
        if value is None or value == "":
            missing.append(field)
        shown[field] = value
    return shown


def _exemplar(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return {
            "id": value.get("id") or value.get("document_id"),
            "domain": value.get("domain"),
            "title": value.get("title"),
            "text": str(value.get("content") or value.get("text") or "")[:400],
        }
    return {"id": None, "domain": None, "title": None, "text": str(value)[:400]}


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _plain(value: Any) -> Any:
    """A database value as JSON can carry it (a Decimal or a date as text)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
