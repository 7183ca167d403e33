"""An org's sending domains (``sending_domains``, migration 0045): each with its DKIM selector,
public key and the name of the secret that holds its private key, and what the last DNS check
found. Which org a verified domain belongs to is ``store.claims`` (kind ``sending_domain``).

Every function takes a cursor from ``Database.transaction(org_id)``: RLS shows the org's own
domains only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from colony.store.db import Row, fetch_all, fetch_one

Status = Literal["pending", "verified", "paused"]
COLUMNS = (
    "domain, selector, public_key, key_secret, status, problems, added_by, added_at,"
    " checked_at, verified_at, paused_at"
)
ADD = """
INSERT INTO sending_domains (org_id, domain, selector, public_key, key_secret, added_by)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, domain) DO NOTHING
RETURNING domain
"""
GET = f"SELECT {COLUMNS} FROM sending_domains WHERE domain = %s"
ALL = f"SELECT {COLUMNS} FROM sending_domains ORDER BY domain"
RECHECKED = f"""
SELECT {COLUMNS} FROM sending_domains WHERE status IN ('verified', 'paused') ORDER BY domain
"""
PAUSED = f"SELECT {COLUMNS} FROM sending_domains WHERE status = 'paused' ORDER BY domain"
# One statement per outcome, so the status and its times move together (the table's CHECK).
RECORD = """
UPDATE sending_domains SET
    status = %s,
    problems = %s::jsonb,
    checked_at = now(),
    verified_at = CASE WHEN %s = 'verified' AND status <> 'verified' THEN now()
                       ELSE verified_at END,
    paused_at = CASE WHEN %s = 'paused' THEN coalesce(paused_at, now()) END
WHERE domain = %s
RETURNING status
"""
SECRET_NAMES = "SELECT key_secret FROM sending_domains ORDER BY domain"


def add(
    cur: Any,
    org_id: str,
    domain: str,
    selector: str,
    public_key: str,
    key_secret: str,
    actor: str,
) -> bool:
    """Add a pending domain with its key; False when the org already has it (kept as is)."""
    params = (org_id, domain, selector, public_key, key_secret, actor)
    return fetch_one(cur, ADD, params) is not None


def get(cur: Any, domain: str) -> Row | None:
    return fetch_one(cur, GET, (domain,))


def listing(cur: Any) -> list[Row]:
    return fetch_all(cur, ALL)


def rechecked(cur: Any) -> list[Row]:
    """The domains the daily check looks at: those that passed once (verified or paused)."""
    return fetch_all(cur, RECHECKED)


def paused(cur: Any) -> list[Row]:
    return fetch_all(cur, PAUSED)


def record(cur: Any, domain: str, status: Status, problems: Sequence[dict[str, str]]) -> None:
    """What a check found: the domain's new status and problems (none when it passes)."""
    cur.execute(RECORD, (status, json.dumps(list(problems)), status, status, domain))


def secret_names(cur: Any) -> list[str]:
    """The secrets that hold the org's DKIM private keys (its erasure deletes them)."""
    return [str(r["key_secret"]) for r in fetch_all(cur, SECRET_NAMES)]
