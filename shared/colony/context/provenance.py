"""What one model call's context was built from (issue 19 item 5), as JSON-ready data.

``of`` reads the assembly request and what the assembler kept: the Knowledge Core chunks
(id, domain, similarity, content hash), the entities (name, id, ``updated_at``), the
contact's signals kept (where each was read, its confidence and day), the daily
brief's id when the call was given one, the history turns kept (their stored row id, role,
name, tool call id; this call's own tool rounds after the earlier turns),
the template's version hash and the budget cuts. Ids, hashes and counts only, never the
text itself: the record sits beside usage numbers that are kept for months.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from colony.context import signals as signal_view
from colony.context import templates
from colony.registry.agents import AGENTS

MAX_ENTITY_ROWS = 50  # per entity name: a list of rows is recorded up to this many


def template_version(agent_id: str, template: str) -> str:
    """A short hash of every template text the call's prompt was rendered from."""
    names = ["system", template, *(f"constraints/{c}" for c in AGENTS[agent_id].constraints)]
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(templates.load(name).encode())
    return digest.hexdigest()[:16]


def _entity_ref(name: str, row: Any) -> dict[str, Any] | None:
    if not isinstance(row, Mapping) or row.get("id") is None:
        return None
    ref: dict[str, Any] = {"name": name, "id": str(row["id"])}
    if row.get("updated_at") is not None:
        ref["updated_at"] = str(row["updated_at"])
    return ref


def entity_refs(entities: Mapping[str, Any]) -> list[dict[str, Any]]:
    refs: list[dict[str, Any]] = []
    for name, value in entities.items():
        rows = value[:MAX_ENTITY_ROWS] if isinstance(value, list) else [value]
        refs += [ref for row in rows if (ref := _entity_ref(name, row)) is not None]
    return refs


def of(
    *,
    agent_id: str,
    template: str,
    exemplars: Sequence[Any],
    entities: Mapping[str, Any],
    history: Sequence[Any],
    trimmed: Mapping[str, int],
    signals: Sequence[Mapping[str, Any]] = (),
    sources: Sequence[Mapping[str, Any]] = (),
    brief_id: str | None = None,
    rounds: Sequence[Any] = (),
) -> dict[str, Any]:
    """The provenance record of one assembled call (see the module docstring); ``history``
    and ``rounds`` are the earlier turns and this call's own tool rounds the prompt kept."""
    refs = entity_refs(entities)
    brief = brief_id or next((r["id"] for r in refs if "brief" in r["name"]), None)
    return {
        "chunks": [
            {
                "id": e.chunk_id,
                "domain": e.domain,
                "similarity": e.similarity,
                "content_hash": e.content_hash,
            }
            for e in exemplars
        ],
        "entities": refs,
        "signals": [signal_view.reference(s) for s in signals],
        # the stored pages the call read (issue 33): where, and as of when
        "sources": [{k: s.get(k) for k in ("ref", "url", "published", "fetched")} for s in sources],
        "brief_id": brief,
        "history": [
            {
                k: v
                for k, v in (
                    ("id", t.id),
                    ("role", t.role),
                    ("name", t.name),
                    ("tool_call_id", t.tool_call_id),
                )
                if v
            }
            for t in (*history, *rounds)
        ],
        "template": {"name": template, "version": template_version(agent_id, template)},
        "budget_cuts": {k: v for k, v in trimmed.items() if v},
    }
