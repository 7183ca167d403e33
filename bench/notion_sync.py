"""Notion sync benchmark: a 100-page workspace through the re-embed worker, three times.

A scratch database gets an org; a local Notion stand-in (real API shapes, pagination) holds
``--pages`` pages of a few paragraphs each (plus unsupported blocks). Every page is synced
through ``notion_reembed.reembed`` — the Cloud Tasks worker's code — three times:

1. initial: every chunk embedded, one batched embedding call per page;
2. re-sync, nothing changed: target 0 embedding calls;
3. re-sync after one paragraph of one page changed: target exactly that chunk re-embedded.

The embedder is the offline one, counting calls. Prints one JSON line.

    python bench/notion_sync.py [--pages 100]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from colony.adapters.notion import notion_for_token
from colony.contracts.events import NotionReembed
from colony.flows import notion_reembed
from colony.knowledge import KnowledgeStore
from colony.llm.agent_call import llm_from_settings
from colony.local import embedded
from colony.runtime.deps import Deps
from colony.settings import Settings
from colony.store import Database, connect_factory, notion_workspaces
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


def paragraphs(page: int) -> list[str]:
    out = []
    for n in range(5):
        topic = TOPICS[(page + n) % len(TOPICS)]
        out.append(
            f"Page {page} section {n}: how ZoomProp handles {topic} for multi-site health"
            f" systems. " + f"Facilities leaders use it to decide on {topic} with evidence. " * 18
        )
    return out


def blocks(texts: list[str]) -> list[dict[str, Any]]:
    out = [block("heading_2", "Overview")]
    for text in texts:
        out += [block("paragraph", text), block("image", external={"url": "https://x/i.png"})]
    return out


def sync_all(deps: Deps, client: Any, pages: list[str], embedder: CountingEmbedder) -> dict:
    calls, texts = len(embedder.calls), embedder.texts_embedded
    chunks = 0
    started = time.perf_counter()
    for page in pages:
        job = NotionReembed(
            org_id=ORG, workspace_id=WORKSPACE, page_id=page, domain="KC-01", edited_time="t"
        )
        chunks += notion_reembed.reembed(deps, job, lambda ws: client)["chunks"]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100)
    args = parser.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
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
        settings = Settings.from_env(
            {
                "COLONY_NOTION_BASE_URL": server.url,
            }
        )
        deps = local_deps(settings, db, InlineTransport(), llm_from_settings(settings), knowledge)
        client = notion_for_token(settings, "secret_bench", attempts=4)
        pages = [f"{n:032x}" for n in range(1, args.pages + 1)]
        for n, page in enumerate(pages):
            server.put_page(page, f"KC page {n}", blocks(paragraphs(n)), parent_database=DATABASE)
        initial = sync_all(deps, client, pages, embedder)
        unchanged = sync_all(deps, client, pages, embedder)
        edited = paragraphs(7)
        edited[2] = edited[2].replace("with evidence", "with audited evidence", 1)
        server.put_page(pages[7], "KC page 7", blocks(edited), parent_database=DATABASE)
        one_changed = sync_all(deps, client, pages, embedder)
        client.close()
        db.close()
    print(
        json.dumps(
            {
                "bench": "notion_sync",
                "pages": args.pages,
                "initial": initial,
                "resync_unchanged": unchanged,
                "one_paragraph_changed": one_changed,
                "targets": {
                    "resync_unchanged_embedding_calls": 0,
                    "one_paragraph_texts_embedded": 1,
                },
                "met": unchanged["embedding_calls"] == 0 and one_changed["texts_embedded"] == 1,
            }
        )
    )


if __name__ == "__main__":
    main()
