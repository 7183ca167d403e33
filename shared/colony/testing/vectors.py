"""Synthetic Knowledge Core corpora with real neighbourhood structure, for tests and benches.

Uniform random high-dimensional vectors have no neighbours worth finding, so vectors here are
drawn around shared cluster centres; clusters span every org and domain, which is what makes
filtered search hard: most of a query's true neighbours belong to other orgs and domains.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from colony.knowledge.bulk import BulkChunk

# ~30% of rows in the largest domain down to 1% in the smallest (sums to 1).
SKEWED_DOMAIN_WEIGHTS: dict[str, float] = {
    "KC-01": 0.30,
    "KC-02": 0.20,
    "KC-03": 0.14,
    "KC-04": 0.10,
    "KC-05": 0.08,
    "KC-06": 0.06,
    "KC-07": 0.05,
    "KC-08": 0.04,
    "KC-09": 0.02,
    "KC-10": 0.01,
}


@dataclass(frozen=True)
class Corpus:
    vectors: np.ndarray  # (n, dim) float32, unit rows
    orgs: np.ndarray  # (n,) org ids
    domains: np.ndarray  # (n,) domain ids
    centres: np.ndarray  # (clusters, dim)
    model: str

    def chunks(self, batch: int = 5000) -> Iterator[list[BulkChunk]]:
        """The corpus as BulkChunk batches (one source per row)."""
        for start in range(0, len(self.vectors), batch):
            yield [
                BulkChunk(
                    org_id=str(self.orgs[i]),
                    domain=str(self.domains[i]),
                    source="seed",
                    source_id=f"syn-{i}",
                    chunk_index=0,
                    content=f"synthetic chunk {i}",
                    content_hash=f"h{i}",
                    embedding_model=self.model,
                    embedding=self.vectors[i].tolist(),
                )
                for i in range(start, min(start + batch, len(self.vectors)))
            ]

    def queries(self, n: int, seed: int = 1) -> np.ndarray:
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, len(self.centres), n)
        q = self.centres[picks] + rng.normal(0, 0.35, (n, self.centres.shape[1]))
        return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def clustered_corpus(
    n: int,
    dim: int,
    *,
    orgs: int = 5,
    clusters: int = 200,
    weights: dict[str, float] | None = None,
    model: str = "synthetic-v1",
    seed: int = 0,
) -> Corpus:
    rng = np.random.default_rng(seed)
    weights = weights or SKEWED_DOMAIN_WEIGHTS
    names = list(weights)
    p = np.array([weights[d] for d in names], dtype=np.float64)
    centres = rng.normal(0, 1, (clusters, dim)) / np.sqrt(dim)
    assignment = rng.integers(0, clusters, n)
    vectors = centres[assignment] + rng.normal(0, 0.5 / np.sqrt(dim), (n, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    domains = np.array(names)[rng.choice(len(names), n, p=p / p.sum())]
    org_ids = np.array([f"org_{i}" for i in range(orgs)])[rng.integers(0, orgs, n)]
    return Corpus(vectors.astype(np.float32), org_ids, domains, centres * np.sqrt(dim), model)


def cluster_centres(dim: int, clusters: int, seed: int = 0) -> np.ndarray:
    """Unit-scale cluster centres for ``around`` (the same scale ``clustered_corpus`` uses)."""
    return np.random.default_rng(seed).normal(0, 1, (clusters, dim)) / np.sqrt(dim)


def around(centres: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` unit float32 vectors drawn around random ``centres`` (as ``clustered_corpus``
    draws them), for corpora too large to build at once: generate them batch by batch."""
    dim = centres.shape[1]
    picks = rng.integers(0, len(centres), n)
    vectors = (centres[picks] + rng.normal(0, 0.5 / np.sqrt(dim), (n, dim))).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def skewed_domains(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` domain ids drawn with ``SKEWED_DOMAIN_WEIGHTS``."""
    names = list(SKEWED_DOMAIN_WEIGHTS)
    p = np.array([SKEWED_DOMAIN_WEIGHTS[d] for d in names], dtype=np.float64)
    return np.array(names)[rng.choice(len(names), n, p=p / p.sum())]
