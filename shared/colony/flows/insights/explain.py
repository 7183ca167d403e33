"""``colony explain <output-id>`` and the /overview "Why?" panel (issue 19 item 5): the model
calls that made an output and what each one's context was built from.

``explain`` returns JSON-ready data (the HTTP endpoint sends it as it is); ``render`` turns it
into the text the CLI prints. Ids, hashes, similarities and counts only: no prompt text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colony.errors import NotFound
from colony.flows.deps import FlowDeps
from colony.flows.research import copies as research
from colony.store.knowledge import provenance


def _call(row: Mapping[str, Any]) -> dict[str, Any]:
    prov = dict(row["provenance"] or {})
    chunks = [c for c in prov.get("chunks") or () if isinstance(c, Mapping)]
    return {
        "call_id": row["call_id"],
        "agent_id": row["agent_id"],
        "run_id": row["run_id"],
        "model": row["model"],
        "at": str(row["created_at"]),
        "tokens_in": int(row["tokens_in"]),
        "tokens_out": int(row["tokens_out"]),
        # what the call asked the Knowledge Core for, hits or not; and the domains whose
        # chunks made it into the context (a queried domain missing there returned nothing,
        # or lost its chunks to the kc budget: ``budget_cuts`` says which)
        "kc_domains_queried": list(row["kc_domains_queried"] or ()),
        "kc_domains_hit": list(dict.fromkeys(str(c["domain"]) for c in chunks if c.get("domain"))),
        "context_budget_used": dict(row["context_budget_used"] or {}),
        "chunks": chunks,
        "entities": list(prov.get("entities") or ()),
        "signals": list(prov.get("signals") or ()),
        # the stored pages the call read (AGT-003): where, published and fetched when
        "sources": list(prov.get("sources") or ()),
        "brief_id": prov.get("brief_id"),
        "history": list(prov.get("history") or ()),
        "template": prov.get("template"),
        "budget_cuts": dict(prov.get("budget_cuts") or {}),
    }


def explain(deps: FlowDeps, org_id: str, output_id: str) -> dict[str, Any]:
    """The calls behind ``output_id`` (an approval item, a chat turn, a brief) in ``org_id``;
    ``NotFound`` when this org has no call on record for it."""
    with deps.db.transaction(org_id) as cur:
        rows = provenance.calls_for(cur, output_id)
    if not rows:
        raise NotFound(
            f"no model call on record for {output_id!r} in this org (an approval item id,"
            " a chat turn id, or a brief's id or date; items queued by a person have none)"
        )
    calls = [_call(r) for r in rows]
    # our stored copy of each page a call read or a signal it was given was read from
    pages = [(s, "url") for c in calls for s in c["sources"]]
    pages += [
        (s, "source") for c in calls for s in c["signals"] if research.is_url(s.get("source"))
    ]
    copies = research.stored_copies(deps, org_id, [str(s.get(key)) for s, key in pages])
    for page, key in pages:
        page.update(copies.get(str(page.get(key)), {}))
    return {"output_id": output_id, "kind": rows[0]["output_kind"], "calls": calls}


def _line(label: str, items: list[str]) -> list[str]:
    return [f"  {label}: (none)"] if not items else [f"  {label}:", *(f"    - {i}" for i in items)]


def _copy(link: Any) -> str:
    """A stored copy's signed link (or why there is none), on a line of its own."""
    if not isinstance(link, Mapping):
        return ""
    if "url" in link:
        return f"\n      stored copy: {link['url']}"
    return f"\n      stored copy: ({(link.get('error') or {}).get('message', 'none')})"


def render(explained: Mapping[str, Any]) -> str:
    """The readable text of ``explain``'s answer."""
    out = [f"{explained['output_id']} ({explained['kind']}): {len(explained['calls'])} call(s)"]
    for n, c in enumerate(explained["calls"], 1):
        template = c["template"] or {}
        out.append(
            f"call {n}: {c['agent_id']} {c['model']} at {c['at']}"
            f" ({c['tokens_in']} in / {c['tokens_out']} out) id {c['call_id'] or '(unrecorded)'}"
        )
        out.append(
            f"  template: {template.get('name', '?')} version {template.get('version', '?')}"
        )
        out += _line(
            "knowledge core chunks",
            [
                f"{k['domain']} chunk {k['id']} similarity {k['similarity']}"
                f" hash {str(k['content_hash'])[:12]}"
                for k in c["chunks"]
            ],
        )
        out.append(f"  domains queried: {', '.join(c['kc_domains_queried']) or '(none)'}")
        out.append(f"  domains with hits: {', '.join(c['kc_domains_hit']) or '(none)'}")
        out += _line(
            "entities",
            [f"{e['name']} {e['id']} updated {e.get('updated_at', '?')}" for e in c["entities"]],
        )
        out += _line(
            "contact signals",
            [
                " ".join(str(v) for k, v in s.items() if k != "stored_copy")
                + _copy(s.get("stored_copy"))
                for s in c["signals"]
            ],
        )
        out += _line(
            "web sources read",
            [
                f"{s.get('ref')} {s.get('url')} published {s.get('published') or '(undated)'}"
                f" fetched {s.get('fetched_on') or s.get('fetched')}" + _copy(s.get("stored_copy"))
                for s in c["sources"]
            ],
        )
        out.append(f"  brief: {c['brief_id'] or '(none)'}")
        out += _line(
            "history turns",
            [" ".join(str(v) for v in t.values()) for t in c["history"]],
        )
        cuts = ", ".join(f"{k} {v}" for k, v in sorted(c["budget_cuts"].items()))
        out.append(f"  budget cuts: {cuts or '(none)'}")
        used = ", ".join(f"{k} {v}" for k, v in c["context_budget_used"].items())
        out.append(f"  tokens per section: {used}")
    return "\n".join(out)
