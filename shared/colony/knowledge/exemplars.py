"""Turn retrievals into prompt exemplars (the bridge from layer 1 to the bundle)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from colony.contracts import Exemplar
from colony.knowledge.store import Retrieved


def to_exemplars(
    hits: Mapping[str, Sequence[Retrieved]], *, top: int | None = None
) -> list[Exemplar]:
    """Exemplars ordered by similarity across domains (best first), optionally the ``top`` few."""
    ranked = sorted(
        (h for items in hits.values() for h in items), key=lambda h: h.similarity, reverse=True
    )
    return [
        Exemplar(
            domain=h.domain,  # type: ignore[arg-type]  # validated KC id from the store
            title=h.title,
            content=h.content,
            tags={k: str(v) for k, v in h.tags.items()},
            similarity=round(h.similarity, 4),
        )
        for h in ranked[:top]
    ]
