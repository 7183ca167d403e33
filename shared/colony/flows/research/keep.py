"""What one fetch comes to, kept with its provenance (issue 33 item 4).

Every URL asked for gets a ``research_sources`` row saying what happened (``outcome``,
``detail``: a recorded, explained answer for every fault a site can have). A body read whole
is kept in the assets bucket under ``research/<org>/<source id>/``: the bytes as received
(named by their sha256) and the extracted text (named by its own), then read into
passages that are embedded for AGT-003; a body whose bytes did not change is neither stored
nor embedded again. A page that needs a browser to show its text is rendered first where a
browser is configured (``rendering``: its text replaces the raw page's, its screenshot is kept
beside it). A 304 confirms the stored copy: its bytes are read back from the bucket
(never from the site) so the pass can follow its links again. A fetch that brings no body
over a copy we keep (a 5xx, a timeout, a refusal) changes only what the row says the fetch
came to: the copy, its validators and passages stand, and the next pass asks for it
conditionally again.

The reader (``colony.research.read``) never raises for what a page holds (a parser's surprise
is ``problem="unreadable"``); text it finds is data, stored and shown as data, never acted on.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from colony import research
from colony.flows.deps import FlowDeps
from colony.flows.research import rendering
from colony.ports.web import FetchResult
from colony.research.document import Document
from colony.store.db import Row
from colony.store.research import sources

PASSAGE_CHARS = 700  # about 150 tokens: a few of them fit AGT-003's entity budget
MAX_PASSAGES = 40  # per document: a huge page is read, not all of it embedded
_EXT = {"page": ".html", "feed": ".xml", "sitemap": ".xml", "job_board": ".json", "pdf": ".pdf"}


@dataclass(frozen=True, slots=True)
class Kept:
    """A fetch as kept: its source id, the document read (None: nothing was read), and
    whether its body was downloaded now (a 304 or a refusal downloads nothing)."""

    source_id: str
    doc: Document | None
    downloaded: bool


def object_prefix(org_id: str) -> str:
    """Where an org's research objects live (erasure deletes the whole folder)."""
    return f"research/{org_id}/"


def keep(
    deps: FlowDeps,
    org_id: str,
    domain: str,
    pass_no: int,
    role: str,
    result: FetchResult,
    previous: Row | None,
) -> Kept:
    """Record ``result`` (fetched as ``role``) for ``org_id``'s research of ``domain``."""
    row: dict[str, Any] = {
        "domain": domain,
        "url": result.url,
        "final_url": result.final_url,
        "role": role,
        "outcome": result.outcome,
        "status": result.status,
        "detail": result.detail,
        "fetched_at": result.fetched_at,
        "content_type": result.content_type,
        "charset": result.charset,
        "etag": result.etag,
        "last_modified": result.last_modified,
        "needs_browser": False,
        "pass": pass_no,
    }
    sid = sources.source_id(domain, result.url)
    if result.outcome == "not_modified" and previous is not None and previous["raw_object"]:
        with deps.db.transaction(org_id) as cur:
            sources.touch(cur, sid, result.fetched_at, pass_no)
        return Kept(sid, _reread(deps, previous), downloaded=False)
    if result.outcome != "ok":
        with deps.db.transaction(org_id) as cur:
            if previous is not None and previous["raw_object"]:
                # a 5xx or a timeout on research again is not the page's end: the copy we
                # keep stands with its validators (asked conditionally next time) and passages
                sources.missed(cur, sid, result.outcome, result.status, result.detail, pass_no)
            else:
                sources.save(cur, org_id, row)
        return Kept(sid, None, downloaded=False)
    doc = research.read(result.final_url, result.content_type, result.content, result.text)
    content_hash = hashlib.sha256(result.content).hexdigest()
    prefix = f"{object_prefix(org_id)}{sid}/"
    raw_object = f"{prefix}{content_hash}{_EXT.get(doc.kind, '.bin')}"
    unchanged = previous is not None and previous["content_hash"] == content_hash
    shown = rendering.show(deps, result, doc, prefix, previous if unchanged else None)
    doc = shown.doc  # as a browser shows it, where the page needs one (rendering)
    text = document_text(doc)
    text_hash = hashlib.sha256(text.encode()).hexdigest()
    text_object = f"{prefix}{text_hash}.txt" if text else None
    same_text = previous is not None and previous["text_hash"] == text_hash
    if not unchanged:
        # as received, never served as the site's type from our bucket (its row keeps that)
        deps.blobs.put(raw_object, result.content, "application/octet-stream")
    if text_object and not same_text:  # a sitemap, an empty page: nothing read to keep
        deps.blobs.put(text_object, text.encode(), "text/plain; charset=utf-8")
    if shown.screenshot is not None:
        deps.blobs.put(shown.screenshot[0], shown.screenshot[1], "image/png")
    row.update(shown.fields)
    row.update(
        kind=doc.kind,
        problem=doc.problem,
        title=doc.title,
        downloaded_at=result.fetched_at,
        published_at=doc.published_at,
        date_source=doc.date_source,
        content_hash=content_hash,
        raw_object=raw_object,
        text_hash=text_hash if text else None,
        text_object=text_object,
        text_chars=len(text),
        needs_browser=doc.needs_browser,
    )
    found = [] if same_text else passages(doc)
    vectors = deps.knowledge.embed_texts([t for t, _ in found]) if found else []
    with deps.db.transaction(org_id) as cur:
        sources.save(cur, org_id, row)
        if not same_text:
            sources.replace_passages(cur, org_id, sid, found, deps.knowledge.model, vectors)
    return Kept(sid, doc, downloaded=True)


def document_text(doc: Document) -> str:
    """The text kept for a document: its main text, then one block per item (a feed entry,
    a job post) with its title, date and place. A quote AGT-003 keeps must occur in it."""
    blocks = [doc.text] if doc.text else []
    blocks += [_item_text(i) for i in doc.items if i.title or i.text]
    return "\n\n".join(blocks)


def passages(doc: Document) -> list[tuple[str, date | None]]:
    """``doc``'s text cut into passages of about ``PASSAGE_CHARS`` on paragraph (else
    sentence) boundaries, each with its date: an item's own, else the document's. A sitemap
    and a robots-style list of URLs has none worth reading."""
    if doc.kind == "sitemap":
        return []
    found: list[tuple[str, date | None]] = []
    if doc.text:
        found += [(p, doc.published_at) for p in _cut(doc.text)]
    for item in doc.items:
        if item.title or item.text:
            found += [(p, item.published_at or doc.published_at) for p in _cut(_item_text(item))]
    return found[:MAX_PASSAGES]


def _item_text(item: Any) -> str:
    head = " · ".join(
        part
        for part in (
            item.title,
            item.published_at.isoformat() if item.published_at else None,
            item.location,
        )
        if part
    )
    return f"{head}\n{item.text}".strip() if item.text else head


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _cut(text: str) -> list[str]:
    """Passages of whole paragraphs up to ``PASSAGE_CHARS``; a longer paragraph by sentence,
    a longer sentence by characters. Every passage is ``text``'s own words in order (only
    whitespace between them may differ), so a quote found in a passage is found in the
    stored text, whitespace normalised as ``policy.grounding.verbatim`` compares."""
    pieces: list[str] = []
    for para in (p.strip() for p in re.split(r"\n\s*\n", text)):
        if not para:
            continue
        if len(para) <= PASSAGE_CHARS:
            pieces.append(para)
            continue
        for sentence in _SENTENCE.split(para):
            while len(sentence) > PASSAGE_CHARS:
                pieces.append(sentence[:PASSAGE_CHARS])
                sentence = sentence[PASSAGE_CHARS:]
            if sentence:
                pieces.append(sentence)
    merged: list[str] = []
    for piece in pieces:
        if merged and len(merged[-1]) + 1 + len(piece) <= PASSAGE_CHARS and "\n" not in piece:
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return merged


def _reread(deps: FlowDeps, previous: Row) -> Document:
    raw = deps.blobs.get(previous["raw_object"])
    charset = previous["charset"]
    text = raw.decode(charset, errors="replace") if charset else None
    return research.read(previous["final_url"], previous["content_type"], raw, text)
