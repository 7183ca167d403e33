"""Erasing one prospect (a data-subject request), inside the org's scope.

What a contact leaves behind, by the schema:

- ``contacts`` (the row: name, email, enrichment, signals), ``campaign_contacts``,
  ``sequence_enrollments``, ``contact_signals`` (AGT-003's, quoting its data), and its
  campaign work waiting for the org's budget (``budget_holds``: a handoff naming it, or its
  sequence step);
- its messages: ``outbox`` rows to it, ``approval_items`` about it (``subject_id``, or
  ``payload.contact_id``: outbound drafts, follow-ups), and their ``run_steps`` outputs; an
  item that merely mentions it among others (a campaign launch) is redacted, not deleted;
- its calls: ``recordings`` of the deals it is the contact of (``deals.contact_id``), with
  the approval items AGT-006/007 made from them (``subject_id`` = the recording, or
  ``payload.source.recording_id``), the ``run_steps`` of ``rec:<recording>`` runs, and the
  KC chunks approved from them (``kc_chunks.source = 'approval'`` with the item's id as
  ``source_id``, or ``tags.recording_id``); the transcripts in GCS are the caller's (their
  names are read here first: ``call_transcripts``);
- mentions: its id, email or full name anywhere else in the org's text (chat turns and
  events, briefs, dead letters, …) is replaced by ``REDACTED``, column by column over every
  text-like column of every org-scoped table (``store.tenants.erasure.searchable_columns``).

A deal it was the contact of stays the org's (its ``contact_id`` is cleared). The contact row
goes last: until it does, a re-run after a crash can still find what to redact by it.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_all, fetch_one, fetch_value
from colony.store.tenants.erasure import APPEND_ONLY, _ident, scoped_tables, searchable_columns

REDACTED = "[erased]"
MIN_NAME_LENGTH = 5  # a shorter "full name" would redact ordinary words

CONTACT = "SELECT id, name, email FROM contacts WHERE id = %s"
CALLS = """
SELECT r.id, r.transcript_uri FROM recordings r JOIN deals d ON d.id = r.deal_id
WHERE d.contact_id = %s
"""
ITEMS = """
SELECT id FROM approval_items
WHERE subject_id = ANY(%s::text[])
   OR payload->>'contact_id' = %s
   OR payload->'source'->>'recording_id' = ANY(%s::text[])
   OR payload->>'recording_id' = ANY(%s::text[])
"""
# (table, statement, the parameters it takes in order)
DELETES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "kc_chunks",
        "DELETE FROM kc_chunks WHERE (source = 'approval' AND source_id = ANY(%s::text[]))"
        " OR tags->>'recording_id' = ANY(%s::text[])",
        ("items", "calls"),
    ),
    (
        "outbox",
        "DELETE FROM outbox WHERE contact_id = %s OR approval_item_id = ANY(%s::text[])",
        ("contact", "items"),
    ),
    (
        "published_content",
        "DELETE FROM published_content WHERE approval_item_id = ANY(%s::text[])",
        ("items",),
    ),
    (
        "deployment_kits",
        "DELETE FROM deployment_kits WHERE approval_item_id = ANY(%s::text[])",
        ("items",),
    ),
    ("approval_items", "DELETE FROM approval_items WHERE id = ANY(%s::text[])", ("items",)),
    (
        "run_steps",
        "DELETE FROM run_steps WHERE run_id = ANY(%s::text[]) OR step_key LIKE '%%:' || %s"
        " OR strpos(coalesce(output::text, ''), %s) > 0",
        ("runs", "contact", "contact"),
    ),
    ("recordings", "DELETE FROM recordings WHERE id = ANY(%s::text[])", ("calls",)),
    ("campaign_contacts", "DELETE FROM campaign_contacts WHERE contact_id = %s", ("contact",)),
    (
        "sequence_enrollments",
        "DELETE FROM sequence_enrollments WHERE contact_id = %s",
        ("contact",),
    ),
    ("contact_signals", "DELETE FROM contact_signals WHERE contact_id = %s", ("contact",)),
    (
        "budget_holds",
        "DELETE FROM budget_holds WHERE event->'envelope'->'entity_ids' ? %s"
        " OR event->>'contact_id' = %s",
        ("contact", "contact"),
    ),
    ("deals", "UPDATE deals SET contact_id = NULL WHERE contact_id = %s", ("contact",)),
)
DELETE_CONTACT = "DELETE FROM contacts WHERE id = %s"
REDACT_AUDIT = "SELECT colony_redact_audit(current_setting('app.org_id', true), %s::text[], %s)"


def contact(cur: Any, contact_id: str) -> Row | None:
    return fetch_one(cur, CONTACT, (contact_id,))


def call_transcripts(cur: Any, contact_id: str) -> list[str]:
    """The ``gs://`` URIs of the transcripts of the contact's calls."""
    return [
        str(r["transcript_uri"])
        for r in fetch_all(cur, CALLS, (contact_id,))
        if r["transcript_uri"]
    ]


def tokens(row: Row) -> list[str]:
    """What identifies the contact in free text: its id, email and full name (if long enough
    not to match ordinary words)."""
    found = [str(row["id"])]
    if row.get("email"):
        found.append(str(row["email"]))
    name = str(row.get("name") or "").strip()
    if len(name) >= MIN_NAME_LENGTH:
        found.append(name)
    return found


def erase(cur: Any, row: Row) -> dict[str, int]:
    """Erase the contact ``row`` (from ``contact``) and everything derived from it; returns
    rows touched per table. One transaction: all of it or none."""
    contact_id = str(row["id"])
    calls = [str(r["id"]) for r in fetch_all(cur, CALLS, (contact_id,))]
    subjects = [contact_id, *calls]
    items = [str(r["id"]) for r in fetch_all(cur, ITEMS, (subjects, contact_id, calls, calls))]
    params = {
        "contact": contact_id,
        "calls": calls,
        "items": items,
        "runs": [f"rec:{c}" for c in calls],
    }
    touched: dict[str, int] = {}
    for table, sql, names in DELETES:
        cur.execute(sql, tuple(params[name] for name in names))
        touched[table] = touched.get(table, 0) + int(cur.rowcount)
    redacted = redact(cur, tokens(row))
    cur.execute(DELETE_CONTACT, (contact_id,))
    touched["contacts"] = int(cur.rowcount)
    touched["redacted"] = redacted
    return touched


def redact(cur: Any, needles: list[str]) -> int:
    """Replace every needle in every text-like column of the org's tables; rows changed."""
    # The audit log is append-only for the application: its owner's function redacts it.
    changed = int(fetch_value(cur, REDACT_AUDIT, ([n for n in needles if n], REDACTED)))
    org_tables = set(scoped_tables()) - {"contacts", *APPEND_ONLY}
    for table, column, udt in searchable_columns(cur):
        if table not in org_tables:
            continue
        cast = {"_text": "text[]", "varchar": "text"}.get(udt, udt)
        value = f"{_ident(column)}::text"
        for needle in needles:
            cur.execute(
                f"UPDATE {_ident(table)} SET {_ident(column)} = "
                f"replace({value}, %s, %s)::{cast} WHERE strpos({value}, %s) > 0",
                (needle, REDACTED, needle),
            )
            changed += int(cur.rowcount)
    return changed
