"""Turn retrievals into prompt exemplars (the bridge from layer 1 to the bundle)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from colony.contracts import Exemplar
from colony.knowledge.outcomes import Picked
from colony.knowledge.store import Retrieved
from colony.knowledge.sync import content_hash
from colony.registry import check_domains


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
            chunk_id=h.id,
            content_hash=content_hash(h.content),
        )
        for h in ranked[:top]
    ]


# What the prompt is told of a KC-08 pick: how it was written and how it fared, not whom it
# was for (contact, campaign and approval ids stay in the Knowledge Core).
PROMPT_TAGS = frozenset({"angle", "tier", "step", "persona", "signal", "outcome"})


def picked_exemplars(picked: Sequence[Picked]) -> list[Exemplar]:
    """KC-08 picks as exemplars, in their chosen order, each saying how it was chosen."""
    return [
        Exemplar(
            domain="KC-08",
            title=p.title,
            content=p.content,
            tags={
                **{k: str(v) for k, v in p.tags.items() if k in PROMPT_TAGS},
                "selected_by": p.selected_by,
            },
            similarity=round(p.similarity, 4),
            chunk_id=p.id,
            content_hash=content_hash(p.content),
        )
        for p in picked
    ]


def hinted_domains(agent_domains: Sequence[str], hints: Sequence[str]) -> tuple[str, ...]:
    """The domains an agent queries for a handoff (seed §7.2).

    With hints, only the hinted domains the agent may read (in hint order); without hints,
    all of the agent's domains. An agent with no declared domains (AGT-001) may read any.
    A hint outside the agent's domains is ignored rather than widening its reads.
    """
    hints = check_domains(hints) if hints else ()
    if not hints:
        return tuple(agent_domains)
    if not agent_domains:
        return hints
    allowed = [d for d in hints if d in agent_domains]
    return tuple(allowed) or tuple(agent_domains)
