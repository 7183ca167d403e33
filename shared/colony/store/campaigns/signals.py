"""A contact's buying signals as AGT-003 extracted them (issue 19 item 1): one row per signal
with its provenance (where it was read, the words it rests on, the model's confidence).
The quote is the contact's own data: untrusted, shown to people and models only as data.

A re-enrichment replaces the contact's set (the latest extraction is what is known); rows
are read strongest first, so a budget that cannot take them all cuts the weakest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from colony.store.db import Row, fetch_all

DELETE_FOR_CONTACT = "DELETE FROM contact_signals WHERE contact_id = %s"
INSERT = """
INSERT INTO contact_signals (org_id, contact_id, signal_key, type, detail, quote, source,
                             confidence, observed_on, agent_id, run_id)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, contact_id, signal_key) DO UPDATE SET
    detail = EXCLUDED.detail, source = EXCLUDED.source,
    confidence = greatest(contact_signals.confidence, EXCLUDED.confidence),
    observed_on = EXCLUDED.observed_on, run_id = EXCLUDED.run_id
"""
FOR_CONTACT = """
SELECT type, detail, quote, source, confidence, observed_on, agent_id, run_id, created_at
FROM contact_signals WHERE contact_id = %s
ORDER BY confidence DESC, observed_on DESC NULLS LAST, type, signal_key
LIMIT %s
"""
# A contact named by a person: its id, else the best name/company match (a chat tool's
# argument; escaped for LIKE, so ``%`` in it is only a character).
FIND_CONTACT = r"""
SELECT id, name, title, company FROM contacts
WHERE id = %s OR name ILIKE '%%' || %s || '%%' ESCAPE '\'
   OR company ILIKE '%%' || %s || '%%' ESCAPE '\'
ORDER BY (id = %s) DESC, (name ILIKE %s ESCAPE '\') DESC, name, id
LIMIT 2
"""
MAX_READ = 50  # AGT-003 returns at most 10 per run; a reader never needs more than this


def signal_key(signal_type: str, quote: str) -> str:
    """One row per (type, quote): the same words read twice are one signal."""
    text = f"{signal_type}\x00{' '.join(quote.casefold().split())}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def replace_for_contact(
    cur: Any,
    org_id: str,
    contact_id: str,
    signals: Sequence[Mapping[str, Any]],
    *,
    run_id: str | None,
    agent_id: str = "AGT-003",
) -> int:
    """Replace the contact's signals with ``signals`` (each ``{type, detail, quote, source,
    confidence, observed_on?}``); return how many are stored."""
    cur.execute(DELETE_FOR_CONTACT, (contact_id,))
    for s in signals:
        cur.execute(
            INSERT,
            (
                org_id,
                contact_id,
                signal_key(str(s["type"]), str(s["quote"])),
                s["type"],
                s["detail"],
                s["quote"],
                s["source"],
                float(s["confidence"]),
                s.get("observed_on"),
                agent_id,
                run_id,
            ),
        )
    return len({signal_key(str(s["type"]), str(s["quote"])) for s in signals})


def known_for(cur: Any, contact: Mapping[str, Any]) -> list[Row]:
    """What is known of ``contact``'s signals: its stored ones (``for_contact``), else — a
    contact AGT-003 has not read yet, imported and never enriched — its own ``signals`` list
    as the row holds it (type, detail, date; no quote, source or confidence to show)."""
    return for_contact(cur, str(contact["id"])) or own(contact.get("signals"))


def own(listed: Any) -> list[Row]:
    """A contact row's own ``signals`` list (type, detail, date) in the stored signals' shape,
    without the quote, source and confidence it does not have."""
    return [
        {"type": s.get("type"), "detail": s["detail"], "observed_on": s.get("date")}
        for s in (listed if isinstance(listed, list) else [])
        if isinstance(s, Mapping) and isinstance(s.get("detail"), str) and s["detail"].strip()
    ]


def details(signals: Sequence[Mapping[str, Any]]) -> list[str]:
    """The signals' details: what an outbound message must reference one of (CONST-006)."""
    return [str(s["detail"]) for s in signals if s.get("detail")]


def find_contact(cur: Any, text: str) -> list[Row]:
    """Up to two contacts ``text`` names (two: the caller can say it is ambiguous)."""
    like = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return fetch_all(cur, FIND_CONTACT, (text, like, like, text, like))


def for_contact(cur: Any, contact_id: str, limit: int = MAX_READ) -> list[Row]:
    """The contact's stored signals, strongest first (none: ``[]``)."""
    rows = fetch_all(cur, FOR_CONTACT, (contact_id, max(1, min(limit, MAX_READ))))
    for row in rows:
        row["confidence"] = round(float(row["confidence"]), 3)
        if row.get("observed_on") is not None:
            row["observed_on"] = row["observed_on"].isoformat()
        row.pop("created_at", None)
    return rows
