"""Dead letters: messages no function accepted after bounded attempts (``dead_letters``).

Written by the local transport's sink (``colony.adapters.dead_letters.DbDeadLetters``)
under the org the message names; one row per (org, topic, message id), however often it
dies.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

ADD = """
INSERT INTO dead_letters (org_id, topic, message_id, data, attributes, attempts, last_error)
VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s)
ON CONFLICT (org_id, topic, message_id) DO NOTHING
"""


def data_column(data: bytes) -> str:
    """The ``data`` column: the message itself when it is JSON, else ``{"base64": ...}``."""
    try:
        return json.dumps(json.loads(data.decode("utf-8")))
    except ValueError:  # UnicodeDecodeError is a ValueError
        return json.dumps({"base64": base64.b64encode(data).decode("ascii")})


def add(
    cur: Any,
    org_id: str,
    topic: str,
    message_id: str,
    data: bytes,
    attributes: Mapping[str, str],
    attempts: int,
    last_error: str,
) -> bool:
    """Record one dead letter; False if this message was recorded already."""
    cur.execute(
        ADD,
        (
            org_id,
            topic,
            message_id,
            data_column(data),
            json.dumps(dict(attributes)),
            attempts,
            last_error,
        ),
    )
    return bool(cur.rowcount == 1)
