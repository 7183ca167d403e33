"""What a notification says (pure): an email digest or brief as plain text, a Slack message
as Block Kit. Each event is its subject line (the most prospect text a notification may
carry) and its link to /overview; nothing else of a prospect's is read here.

A subject line is untrusted text: in Slack's ``mrkdwn`` ``&``, ``<`` and ``>`` are escaped
(Slack's own rule), so a subject cannot turn into a link or a mention; in an email it is one
line of plain text, line breaks folded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from colony.flows.notifications.kinds import KINDS, LABELS
from colony.ports import SlackMessage

SUBJECT_CHARS = 200


def link(base: str, path: str) -> str:
    """``path`` (``/overview…``) on the chat function's address (relative without one)."""
    return base.rstrip("/") + path


def one_line(text: str, limit: int = SUBJECT_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def digest_email(base: str, events: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """The subject and text of an email digest of ``events`` (grouped by kind)."""
    lines = ["What happened in Colony since the last email:", ""]
    for kind in KINDS:
        mine = [e for e in events if e["kind"] == kind]
        if not mine:
            continue
        lines.append(f"{LABELS[kind]} ({len(mine)})")
        lines += [f"- {one_line(e['subject'])}: {link(base, e['link'])}" for e in mine]
        lines.append("")
    lines += _footer(base)
    count = len(events)
    subject = f"Colony: {count} update{'s' if count != 1 else ''}"
    return subject, "\n".join(lines)


def _footer(base: str) -> list[str]:
    return [
        f"Open Colony: {link(base, '/overview')}",
        "--",
        "You get these emails because you chose email for them in Colony;"
        f" change that at {link(base, '/overview#notifications')}",
        "",
    ]


def brief_lines(
    waiting_mine: int, waiting_org: int, numbers: Mapping[str, Any] | None
) -> list[str]:
    """The brief as a person gets it: their own waiting count first, then the org's numbers
    (the brief's SQL aggregates; its text stays on /overview)."""
    lines = [f"Waiting for you: {waiting_mine} item{'s' if waiting_mine != 1 else ''}"]
    if waiting_org != waiting_mine:
        lines.append(f"Waiting in the team's queue: {waiting_org}")
    if numbers:
        lines.append(
            f"Yesterday: {numbers.get('messages_sent', 0)} messages sent,"
            f" {numbers.get('replies_received', 0)} replies"
            f" ({numbers.get('replies_positive', 0)} positive,"
            f" {numbers.get('replies_negative', 0)} negative)"
        )
        lines.append(f"Circuit breaker: {numbers.get('circuit_breaker', 'closed')}")
    return lines


def brief_email(base: str, day: str, lines: Sequence[str]) -> tuple[str, str]:
    text = [
        f"Your Colony brief for {day}",
        "",
        *lines,
        "",
        f"The brief: {link(base, '/overview#brief')}",
    ]
    return f"Colony brief for {day}: {lines[0].lower()}", "\n".join([*text, "", *_footer(base)])


def slack_event(base: str, org_id: str, event: Mapping[str, Any], *, buttons: bool) -> SlackMessage:
    """One event as a Slack message; an item waiting gets Approve and Reject buttons (a
    click decides through the same person-authorised path as /overview)."""
    label, subject = LABELS.get(event["kind"], event["kind"]), one_line(event["subject"])
    url = link(base, event["link"])
    section = {"type": "mrkdwn", "text": f"*{label}*\n{slack_escape(subject)}"}
    open_button = {
        "type": "button",
        "action_id": "open",
        "text": {"type": "plain_text", "text": "Open in Colony"},
        "url": url if url.startswith(("http://", "https://")) else "https://colony.invalid/",
    }
    elements: list[dict[str, Any]] = [open_button]
    if buttons and event.get("item_id"):
        value = f"{org_id}:{event['item_id']}"
        elements = [
            _button("approve", "Approve", value, "primary"),
            _button("reject", "Reject", value, "danger"),
            open_button,
        ]
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": section},
        {"type": "actions", "block_id": "decide", "elements": elements},
    ]
    return SlackMessage(f"{label}: {subject}", tuple(blocks))


def slack_brief(base: str, day: str, lines: Sequence[str]) -> SlackMessage:
    text = "\n".join(slack_escape(line) for line in lines)
    url = link(base, "/overview#brief")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"Your brief for {day}"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": text}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{url}|The brief>"}]},
    ]
    return SlackMessage(f"Your brief for {day}: {lines[0]}", tuple(blocks))


def _button(action: str, label: str, value: str, style: str) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": action,
        "text": {"type": "plain_text", "text": label},
        "value": value,
        "style": style,
    }
