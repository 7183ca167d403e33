"""The Knowledge Core store (ENT-007) over PostgreSQL + pgvector: retrieval, and the way in
to writing it.

Every method takes the org and runs inside ``Database.transaction(org_id)``, so row-level
security scopes it. Queries name the org as well, but not for isolation: a constant org id
lets the planner prune ``kc_chunks`` to the org's one partition, so a statement opens only
that partition's indexes (``colony.knowledge.tiering``). Writing a source document's chunks
is ``colony.knowledge.sync``'s (its names are re-exported here); the retrieval statements
are ``colony.knowledge.retrieval``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from colony.errors import DimensionMismatch, ValidationFailed
from colony.knowledge import outcomes
from colony.knowledge.retrieval import exemplars_sql, retrieve_sql
from colony.knowledge.sync import (
    MAX_CHUNK_CHARS,
    SOURCES,
    ChunkIn,
    Source,
    SyncResult,
    check_source,
    content_hash,
    delete_chunks,
    sync_chunks,
)
from colony.ports import Embedder
from colony.registry import check_domains
from colony.store.db import Database, fetch_all
from colony.vectors import VectorParam, checked

__all__ = [
    "MAX_CHUNK_CHARS",
    "MAX_K",
    "SEARCH_SETTINGS",
    "SOURCES",
    "ChunkIn",
    "KnowledgeStore",
    "Retrieved",
    "Source",
    "SyncResult",
    "content_hash",
    "retrieve_sql",
]

MAX_K = 50

# Scan settings, set with the org scope (no extra round trip). relaxed_order lets pgvector
# keep walking the graph until LIMIT rows survive the model filter (the outer ORDER BY
# restores exact order). Without seq and bitmap scans the planner chooses between the
# (org, domain) HNSW graph and the (org, domain) btree followed by an exact sort, which it
# prefers for small sets: both answers are right. (Measured in bench/kc_retrieval.py: left
# to itself the planner sorts thousands of TOASTed vectors exactly, several times slower.)
# Without explicit sorts either, it takes a domain's graph wherever there is one: in a large
# org's partition it chose the btree and an exact sort for a 366-row domain (3.3 ms, against
# ~1.3 ms for the graph walk; bench/kc_tenants.py large-org p50 13.4 -> 8.6 ms). In the
# shared partition every plan sorts, so nothing changes there.
SEARCH_SETTINGS = {
    "hnsw.iterative_scan": "relaxed_order",
    "hnsw.ef_search": "40",
    "hnsw.max_scan_tuples": "20000",
    "enable_seqscan": "off",
    "enable_bitmapscan": "off",
    "enable_sort": "off",
    # A kept statement (``_search``) is planned once, generically, not five times first: with
    # the org and domains literals its one plan is the one a custom plan would be (HNSW in an
    # org's own partition, btree and sort in the shared one; compared by EXPLAIN EXECUTE).
    "plan_cache_mode": "force_generic_plan",
}

_TAG_VALUES = """
SELECT DISTINCT tags->>%s AS value FROM kc_chunks WHERE org_id = %s AND domain = %s AND tags ? %s
"""


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One chunk a retrieval returned, with where it came from and how close it was."""

    id: int
    domain: str
    source: str
    source_id: str
    chunk_index: int
    title: str | None
    content: str
    tags: dict[str, Any]
    similarity: float


_RETRIEVED_FIELDS = (
    "id",
    "domain",
    "source",
    "source_id",
    "chunk_index",
    "title",
    "content",
    "tags",
)


class KnowledgeStore:
    def __init__(self, db: Database, embedder: Embedder) -> None:
        self._db = db
        self._embedder = embedder

    @property
    def model(self) -> str:
        return self._embedder.model

    def sync_source(
        self, org_id: str, source: Source, source_id: str, chunks: Sequence[ChunkIn]
    ) -> SyncResult:
        """Make the stored chunks of one source document equal ``chunks``, in one transaction.

        Only chunks whose content hash changed (or that were embedded by another model) are
        embedded again; metadata-only changes are applied without an embedding call; chunks
        past the new end are deleted. An empty ``chunks`` removes the source.
        """
        with self._db.transaction(org_id) as cur:
            return self.sync_in(cur, org_id, source, source_id, chunks)

    def sync_in(
        self, cur: Any, org_id: str, source: Source, source_id: str, chunks: Sequence[ChunkIn]
    ) -> SyncResult:
        """``sync_source`` inside the caller's transaction (``cur`` scoped to ``org_id``).

        For callers whose write must commit or roll back with their own (an approved KC
        candidate is upserted in its approval decision's transaction, seed §6.4).
        """
        return sync_chunks(
            cur, org_id, source, source_id, chunks, model=self._embedder.model, embed=self._embed
        )

    def tag_values(self, org_id: str, domain: str, tag: str) -> list[str]:
        """Distinct comma-separated values of ``tag`` over a domain's chunks (e.g. KC-06
        ``competitors``), sorted."""
        check_domains([domain])
        with self._db.transaction(org_id) as cur:
            rows = fetch_all(cur, _TAG_VALUES, (tag, org_id, domain, tag))
        values = {v.strip() for r in rows for v in str(r["value"]).split(",") if v.strip()}
        return sorted(values)

    def delete_source(self, org_id: str, source: Source, source_id: str) -> int:
        check_source(source, source_id)  # before a transaction is opened: a bad value costs nothing
        with self._db.transaction(org_id) as cur:
            return delete_chunks(cur, org_id, source, source_id)

    def retrieve(
        self,
        org_id: str,
        query: str | Sequence[float],
        domains: Sequence[str],
        k_per_domain: int = 3,
        *,
        model: str | None = None,
    ) -> dict[str, list[Retrieved]]:
        """Top ``k_per_domain`` chunks for each domain, most similar first, in one query.

        ``query`` is a text (embedded here) or a vector, which must then name the ``model``
        that made it: vectors of different models are not comparable, so a mismatch raises.
        """
        return self._retrieve(org_id, query, domains, k_per_domain, model)

    def retrieve_in(
        self, cur: Any, org_id: str, query: str, domains: Sequence[str], k_per_domain: int = 3
    ) -> dict[str, list[Retrieved]]:
        """``retrieve`` inside the caller's transaction, which must have been opened with
        ``SEARCH_SETTINGS`` (``Database.transaction(org_id, settings=SEARCH_SETTINGS)``): a
        caller that reads other things too saves a transaction of its own."""
        domains = check_domains(domains)
        if not isinstance(k_per_domain, int) or not 1 <= k_per_domain <= MAX_K:
            raise ValidationFailed(f"k_per_domain must be an integer in 1..{MAX_K}")
        vector = self._embed([query])[0]
        return self._search_within(_in(cur), org_id, vector, domains, k_per_domain)

    def _search_within(
        self, read: _Read, org_id: str, vector: Sequence[float], domains: Sequence[str], k: int
    ) -> dict[str, list[Retrieved]]:
        out, shared = self._search(read, org_id, vector, domains, k, exact=False)
        # A graph walk can stop short (max_scan_tuples) when the org is a small part of
        # a big domain. Any domain that came back short is answered exactly instead, so
        # the result is always k rows or every row there is. Rows from the shared
        # partition (no graphs: exact already) mean every row of the org is there, so a
        # short domain there is simply a small one: no second round trip.
        short = [d for d in domains if len(out[d]) < k]
        if short and not shared:
            out.update(self._search(read, org_id, vector, short, k, exact=True)[0])
        return out

    def exemplars(
        self,
        org_id: str,
        vector: Sequence[float],
        *,
        angle: str,
        tier: str | None,
        k: int = 3,
        domains: Sequence[str] = (),
        k_per_domain: int = 2,
    ) -> tuple[list[outcomes.Picked], dict[str, list[Retrieved]]]:
        """AGT-005's ``k`` KC-08 exemplars for ``angle`` (``knowledge.outcomes``) and
        ``retrieve``'s hits for the other ``domains``, in one statement (``exemplars_sql``)
        read in one round trip, where a separate selection cost one more per draft. A domain the
        graph walk left short is answered exactly after, as ``retrieve`` does."""
        model = self._embedder.model
        picking = outcomes.picks_params(model, angle=angle, tier=tier, k=k)
        vector = checked(vector, self._embedder.dim, "the query vector")
        if not domains:
            with self._db.transaction(org_id) as cur:
                return outcomes.select(cur, org_id, vector, model, angle=angle, tier=tier, k=k), {}
        domains = check_domains(domains)
        if not isinstance(k_per_domain, int) or not 1 <= k_per_domain <= MAX_K:
            raise ValidationFailed(f"k_per_domain must be an integer in 1..{MAX_K}")
        params: list[Any] = [VectorParam(vector), *picking]
        for _ in domains:
            params += [model, k_per_domain]
        picks: list[outcomes.Picked] = []
        out: dict[str, list[Retrieved]] = {d: [] for d in domains}
        shared = False
        read = self._reader(org_id)
        for r in read(exemplars_sql(org_id, domains), params):
            if r["part"] == "pick":
                picks.append(outcomes.picked(r))
                continue
            shared = shared or bool(r["shared"])
            fields = {f: r[f] for f in _RETRIEVED_FIELDS}
            out[r["domain"]].append(Retrieved(**{**fields, "similarity": float(r["similarity"])}))
        short = [d for d in domains if len(out[d]) < k_per_domain]
        if short and not shared:  # as in ``_retrieve``: a walk that stopped short
            out.update(self._search(read, org_id, vector, short, k_per_domain, exact=True)[0])
        return picks, out

    def _retrieve(
        self,
        org_id: str,
        query: str | Sequence[float],
        domains: Sequence[str],
        k_per_domain: int,
        model: str | None,
    ) -> dict[str, list[Retrieved]]:
        domains = check_domains(domains)
        k = k_per_domain
        if not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValidationFailed(f"k_per_domain must be an integer in 1..{MAX_K}")
        if isinstance(query, str):
            vector = self._embed([query])[0]
        elif model != self._embedder.model:
            raise ValidationFailed(
                f"query vector from model {model!r} cannot search chunks embedded with"
                f" {self._embedder.model!r}; embedding models are never mixed in one query"
            )
        else:
            vector = checked(query, self._embedder.dim, "the query vector")
        return self._search_within(self._reader(org_id), org_id, vector, domains, k)

    def _reader(self, org_id: str) -> _Read:
        """Statements of ``org_id`` read with ``SEARCH_SETTINGS``, each in a transaction of its
        own and one round trip (``Database.read``), where a transaction around it took three.
        The exact re-read of a domain a walk left short sees a newer snapshot than the walk:
        each domain's rows still come from one statement."""
        return lambda sql, params: self._db.read(org_id, sql, params, settings=SEARCH_SETTINGS)

    def embed_query(self, text: str) -> list[float]:
        """``text`` as this store's model embeds it (one vector for several searches)."""
        return self._embed([text])[0]

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """``texts`` as this store's model embeds them, checked (other stores' passages
        are compared with this store's queries: research's, ``flows.research``)."""
        return self._embed(texts) if texts else []

    def _search(
        self,
        read: _Read,
        org_id: str,
        vector: Sequence[float],
        domains: Sequence[str],
        k: int,
        *,
        exact: bool,
    ) -> tuple[dict[str, list[Retrieved]], bool]:
        """The hits per domain, and whether they came from the shared partition."""
        params: list[Any] = [VectorParam(vector)]
        for _ in domains:
            params += [self._embedder.model, k]
        out: dict[str, list[Retrieved]] = {d: [] for d in domains}
        shared = False
        # Kept parsed and planned per connection (colony.store.wire.cached): parsing,
        # analysing and planning this text cost ~1.7 ms of a small org's ~3 ms round trip
        # (bench/kc_tenants.py profile); executed by name it is ~1.3 ms. The org and domains
        # stay literals, so the one plan kept still prunes to the org's partition; a move
        # (ATTACH) or an erasure (DROP) of the partition makes PostgreSQL re-plan it.
        sql = retrieve_sql(org_id, domains, exact=exact)
        for r in read(sql, params):
            fields = {key: value for key, value in r.items() if key != "shared"}
            shared = shared or bool(r["shared"])
            out[r["domain"]].append(Retrieved(**{**fields, "similarity": float(r["similarity"])}))
        return out, shared

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._embedder.embed(texts)
        if len(vectors) != len(texts):
            raise DimensionMismatch(
                f"{self._embedder.model!r} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        what = f"an embedding of {self._embedder.model!r} (this store holds {self._embedder.dim}-d)"
        return [checked(v, self._embedder.dim, what) for v in vectors]


_Read = Callable[[str, list[Any]], list[dict[str, Any]]]  # a statement's rows, as dicts


def _in(cur: Any) -> _Read:
    """Statements read through ``cur``, inside its transaction (kept, as ``_search`` wants)."""
    return lambda sql, params: fetch_all(cur, sql, params, cache=True)
