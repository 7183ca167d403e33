"""Notion sync benchmark: a 100-page workspace through the re-embed worker.

A scratch database gets an org; a local Notion stand-in (real API shapes, pagination) holds
``--pages`` pages generated from ``--seed``: headings, paragraphs of varied length (some
past the chunk budget), bulleted lists, and unsupported blocks. Pages are synced through
``notion_reembed.reembed`` (the Cloud Tasks worker's code):

1. initial: every chunk embedded, one batched embedding call per page;
2. re-sync, nothing changed: target 0 embedding calls;
3. re-sync after one paragraph of one page changed: target exactly that chunk re-embedded;
4. random edits (``--edits``, seeded, so every run makes the same ones) of five kinds,
   equally likely, each on a random page that is then synced: a sentence of a paragraph or
   list item rewritten, inserted or deleted (``rewrite``, ``insert``, ``delete``); a heading
   renamed (``heading``); a paragraph or list item moved elsewhere on its page (``move``).
   The texts embedded per edit are reported for each kind separately. Target, for the three
   sentence edits: p50 = 1, p95 <= 2. Headings and moves have none, and are not expected to
   meet it: a heading is carried onto the block right after it, so renaming one re-embeds
   that block's chunk; a move changes the moved block's chunk and those of the neighbours
   whose list or carried heading it changes. Their figures say what they cost.

The embedder is the offline one, counting calls. Prints one JSON line.

    python bench/notion_sync.py [--pages 100] [--edits 200] [--seed 19]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

from colony.adapters.notion import notion_for_token
from colony.contracts.reembed import NotionReembed
from colony.flows.knowledge import notion_reembed
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local import embedded
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database, connect_factory
from colony.store.knowledge import notion_workspaces
from colony.testing.fakes import CountingEmbedder
from colony.testing.inline import InlineTransport, local_deps
from colony.testing.notion_server import NotionServer, block

ORG = "org_bench_notion"
DATABASE = "d" * 32  # the Notion database every page lives in, mapped to KC-01
WORKSPACE = "ws-bench"
DOMAINS = {DATABASE: "KC-01"}
TOPICS = (
    "utilization dashboards",
    "lease abstraction",
    "site selection",
    "Epic integration",
    "space planning",
    "HIPAA posture",
    "pricing tiers",
    "rollout playbooks",
)
WHO = ("Facilities leaders", "The CFO", "Our SE team", "Clinic managers", "Real estate teams")
DO = ("review", "compare", "question", "rely on", "report on", "plan around")
WHEN = ("before a lease renewal", "every quarter", "across the portfolio", "in the pilot")


@dataclass
class Block:
    """One text block of a generated page: a heading, a paragraph or a list item."""

    kind: str  # the Notion block type
    sentences: list[str] = field(default_factory=list)


def sentence(rng: random.Random) -> str:
    topic = rng.choice(TOPICS)
    return (
        f"{rng.choice(WHO)} {rng.choice(DO)} {topic} {rng.choice(WHEN)}"
        f" at {rng.randint(2, 400)} sites, with {rng.randint(2, 90)}% fewer surprises."
    )


def generate_page(rng: random.Random, n: int) -> list[Block]:
    """A page as writers make them: a few sections of paragraphs (about one in five past the
    180-word chunk budget), some with a bulleted list."""
    page = [Block("heading_1", [f"Page {n}: {rng.choice(TOPICS)} at ZoomProp"])]
    for section in range(rng.randint(2, 4)):
        page.append(Block("heading_2", [f"Section {section}: {rng.choice(TOPICS)}"]))
        for _ in range(rng.randint(1, 3)):
            length = rng.randint(14, 22) if rng.random() < 0.2 else rng.randint(2, 9)
            page.append(Block("paragraph", [sentence(rng) for _ in range(length)]))
        if rng.random() < 0.5:
            for _ in range(rng.randint(3, 7)):
                page.append(Block("bulleted_list_item", [sentence(rng)]))
    return page


def blocks(page: list[Block]) -> list[dict[str, Any]]:
    out = []
    for b in page:
        out.append(block(b.kind, " ".join(b.sentences)))
        if b.kind == "paragraph":
            out.append(block("image", external={"url": "https://x/i.png"}))
    return out


SENTENCE_EDITS = ("rewrite", "insert", "delete")
EDITS = (*SENTENCE_EDITS, "heading", "move")


def edit(rng: random.Random, page: list[Block]) -> str:
    """One edit of ``page``, of a kind drawn from ``EDITS``; returns the kind. A sentence
    edit rewrites, inserts or deletes one sentence of one paragraph or list item (one left
    without sentences is deleted); ``heading`` renames a heading; ``move`` takes a paragraph
    or list item out and puts it back elsewhere below the page's title."""
    texts = [b for b in page if not b.kind.startswith("heading")]
    op = rng.choice(EDITS)
    if op == "heading":
        target = rng.choice([b for b in page if b.kind.startswith("heading")])
        label = target.sentences[0].split(":")[0]
        target.sentences = [f"{label}: {rng.choice(TOPICS)} (revision {rng.randrange(10**6)})"]
        return op
    target = rng.choice(texts)
    if op == "move":
        start = page.index(target)
        page.remove(target)
        places = [i for i in range(1, len(page) + 1) if i != start]
        page.insert(rng.choice(places), target)
        return op
    at = rng.randrange(len(target.sentences))
    if op == "rewrite":
        target.sentences[at] = sentence(rng)
    elif op == "insert":
        target.sentences.insert(at + rng.randint(0, 1), sentence(rng))
    else:
        del target.sentences[at]
        if not target.sentences:
            page.remove(target)
    return op


def job(page: str) -> NotionReembed:
    return NotionReembed(
        org_id=ORG, workspace_id=WORKSPACE, page_id=page, domain="KC-01", edited_time="t"
    )


def sync_all(deps: Deps, client: Any, pages: list[str], embedder: CountingEmbedder) -> dict:
    calls, texts = len(embedder.calls), embedder.texts_embedded
    chunks = 0
    started = time.perf_counter()
    for page in pages:
        chunks += notion_reembed.reembed(deps, job(page), lambda ws: client)["chunks"]
    seconds = time.perf_counter() - started
    batches = [len(b) for b in embedder.calls[calls:]]
    return {
        "embedding_calls": len(batches),
        "texts_embedded": embedder.texts_embedded - texts,
        "chunks": chunks,
        "seconds": round(seconds, 3),
        "chunks_per_s": round(chunks / seconds, 1) if seconds else None,
        "batch_sizes": {
            "min": min(batches),
            "max": max(batches),
            "mean": round(sum(batches) / len(batches), 2),
        }
        if batches
        else None,
    }


def percentile(values: list[int], q: float) -> int:
    """Nearest rank: the smallest value at least ``q`` of the values are at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def random_edits(
    deps: Deps,
    client: Any,
    server: NotionServer,
    pages: dict[str, list[Block]],
    embedder: CountingEmbedder,
    rng: random.Random,
    count: int,
) -> dict:
    per_kind: dict[str, list[int]] = {kind: [] for kind in EDITS}
    for _ in range(count):
        page_id = rng.choice(sorted(pages))
        op = edit(rng, pages[page_id])
        server.put_page(page_id, "KC page", blocks(pages[page_id]), parent_database=DATABASE)
        before = embedder.texts_embedded
        notion_reembed.reembed(deps, job(page_id), lambda ws: client)
        per_kind[op].append(embedder.texts_embedded - before)
    sentences = [n for kind in SENTENCE_EDITS for n in per_kind[kind]]
    return {
        "edits": count,
        "sentence_edits": spread(sentences),
        "by_kind": {kind: spread(values) for kind, values in per_kind.items()},
    }


def spread(per_edit: list[int]) -> dict[str, Any]:
    """How many texts the edits re-embedded: count, percentiles, mean and histogram."""
    if not per_edit:
        return {"edits": 0}
    return {
        "edits": len(per_edit),
        "p50": percentile(per_edit, 0.5),
        "p95": percentile(per_edit, 0.95),
        "max": max(per_edit),
        "mean": round(sum(per_edit) / len(per_edit), 3),
        "histogram": {str(n): per_edit.count(n) for n in sorted(set(per_edit))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    rng = random.Random(args.seed)
    with (
        embedded.scratch_database(Settings.from_env(), "bench_notion") as base,
        NotionServer() as server,
    ):
        db = Database(connect_factory(base, "app"))
        with db.transaction(ORG) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'bench')", (ORG,))
            notion_workspaces.connect(cur, ORG, WORKSPACE, "colony-notion-bench", DOMAINS)
        embedder = CountingEmbedder(dim=base.embedding_dim)
        knowledge = KnowledgeStore(db, embedder)
        settings = Settings.from_env({"COLONY_NOTION_BASE_URL": server.url})
        deps = local_deps(settings, db, InlineTransport(), llm_from_settings(settings), knowledge)
        client = notion_for_token(settings, "secret_bench", attempts=4)
        pages = {f"{n:032x}": generate_page(rng, n) for n in range(1, args.pages + 1)}
        for page_id, page in pages.items():
            server.put_page(page_id, "KC page", blocks(page), parent_database=DATABASE)
        ids = sorted(pages)
        initial = sync_all(deps, client, ids, embedder)
        unchanged = sync_all(deps, client, ids, embedder)
        page = pages[ids[7]]
        first = next(b for b in page if b.kind == "paragraph")
        first.sentences[0] = first.sentences[0].replace("sites", "audited sites", 1)
        server.put_page(ids[7], "KC page", blocks(page), parent_database=DATABASE)
        one_changed = sync_all(deps, client, ids, embedder)
        edits = random_edits(deps, client, server, pages, embedder, rng, args.edits)
        client.close()
        db.close()
    sentence = edits["sentence_edits"]
    print(
        json.dumps(
            {
                "bench": "notion_sync",
                "pages": args.pages,
                "seed": args.seed,
                "initial": initial,
                "resync_unchanged": unchanged,
                "one_paragraph_changed": one_changed,
                "random_edits": edits,
                "targets": {
                    "resync_unchanged_embedding_calls": 0,
                    "one_paragraph_texts_embedded": 1,
                    "sentence_edit_p50": 1,
                    "sentence_edit_p95_max": 2,
                },
                "met": unchanged["embedding_calls"] == 0
                and one_changed["texts_embedded"] == 1
                and sentence.get("p50") == 1
                and sentence.get("p95", 3) <= 2,
            }
        )
    )


if __name__ == "__main__":
    main()
