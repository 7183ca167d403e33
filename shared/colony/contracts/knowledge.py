"""What the Knowledge Core editor accepts (issue 34 item 2): a document a person writes or
edits in one domain, and a KC-08 exemplar seeded by angle and tier. Unknown fields are an
error; the texts are stripped and bounded; tags are short names with short values."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from colony.contracts.common import KcDomainId, OutboundAngle, SequenceTier, Strict

Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
# A document is chunked (``knowledge.chunk_text``); an exemplar is one chunk, kept whole, so
# it stays under the store's chunk limit (``knowledge.sync.MAX_CHUNK_CHARS``).
Body = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100_000)]
ExemplarBody = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=8_000)
]
TagName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
TagValue = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]


class KcDocumentWrite(Strict):
    """A document as a person wrote it: its domain, title, text and tags."""

    domain: KcDomainId
    title: Title
    body: Body
    tags: dict[TagName, TagValue] = Field(default_factory=dict, max_length=12)


class ExemplarSeed(Strict):
    """A KC-08 outbound exemplar: a message the team holds up for an angle and tier (and,
    if it is a follow-up, its step)."""

    angle: OutboundAngle
    tier: SequenceTier
    title: Title
    body: ExemplarBody
    step: int | None = Field(default=None, ge=1, le=10)
