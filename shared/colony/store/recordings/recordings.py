"""ENT-006, recordings: one row per Drive transcript, its status and AGT-006's signals.

Every function takes the cursor of a transaction opened under the recording's org
(``Database.transaction(org_id)``), so RLS scopes each statement. A recording is unique per
(org, Drive file): adding one twice stores it once. Its status only moves forward,
``received`` → ``processing`` → ``processed`` or ``failed``, and a processed recording is never
marked failed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

KNOWN_FILES = "SELECT id, source_file_id, status FROM recordings WHERE source_file_id = ANY(%s)"
ADD = """
INSERT INTO recordings (org_id, deal_id, source_file_id, title, transcript_uri, status, error)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, source_file_id) DO NOTHING RETURNING id
"""
RECORDING = """
SELECT id, deal_id, source_file_id, title, transcript_uri, status, signals, summary, error,
       untrusted_instructions
FROM recordings WHERE id = %s
"""
START = "UPDATE recordings SET status = 'processing' WHERE id = %s AND status = 'received'"
FAIL = "UPDATE recordings SET status = 'failed', error = %s WHERE id = %s AND status <> 'processed'"
FINISH = """
UPDATE recordings SET status = 'processed', signals = %s::jsonb, summary = %s, error = NULL,
    transcript_tokens = %s, chunk_count = %s, untrusted_instructions = %s::jsonb,
    processed_at = now()
WHERE id = %s
"""


def known_files(cur: Any, file_ids: Sequence[str]) -> dict[str, Row]:
    """Drive file id → its recording (id, source_file_id, status), for the files stored."""
    return {r["source_file_id"]: r for r in fetch_all(cur, KNOWN_FILES, (list(file_ids),))}


def add(
    cur: Any,
    org_id: str,
    source_file_id: str,
    title: str,
    *,
    deal_id: str | None,
    transcript_uri: str | None,
    status: str,
    error: str | None,
) -> str | None:
    """Store the recording of one Drive file; its id, or None if the file was stored before."""
    params = (org_id, deal_id, source_file_id, title, transcript_uri, status, error)
    row = fetch_one(cur, ADD, params)
    return str(row["id"]) if row is not None else None


def get(cur: Any, recording_id: str) -> Row | None:
    """The recording (None: not in this org)."""
    return fetch_one(cur, RECORDING, (recording_id,))


def start(cur: Any, recording_id: str) -> None:
    """``received`` → ``processing`` (any other status stays)."""
    cur.execute(START, (recording_id,))


def fail(cur: Any, recording_id: str, reason: str) -> None:
    """Mark it ``failed`` with ``reason``, unless it was processed."""
    cur.execute(FAIL, (reason, recording_id))


def finish(
    cur: Any,
    recording_id: str,
    signals: Sequence[Any],
    summary: str,
    transcript_tokens: int,
    chunk_count: int,
    untrusted_instructions: Sequence[str] = (),
) -> None:
    """Mark it ``processed`` with its signals and summary (clearing any error), and what the
    injection detector flagged in its transcript."""
    params = (
        json.dumps(signals),
        summary,
        transcript_tokens,
        chunk_count,
        json.dumps(list(untrusted_instructions)),
        recording_id,
    )
    cur.execute(FINISH, params)
