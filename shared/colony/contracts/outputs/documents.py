"""The documents agents write for people: AGT-008's content piece, AGT-009's deployment kit
and AGT-010's daily brief (seed §5.5), and AGT-001's summary of the turns it compacts (seed
§6.3)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from colony.contracts.common import Strict
from colony.contracts.outputs.common import Name, Note


class ContentPiece(Strict):
    """AGT-008."""

    title: str = Field(min_length=1, max_length=200)
    format: Literal["linkedin_post", "blog_post", "one_pager", "email_newsletter"]
    body: str = Field(min_length=1, max_length=8000)


class KitSection(Strict):
    heading: str = Field(min_length=1, max_length=200)
    body: str = Field(min_length=1, max_length=4000)


class DeploymentKit(Strict):
    """AGT-009: the deployment kit document's content (rendered to GCS elsewhere)."""

    title: str = Field(min_length=1, max_length=200)
    sections: list[KitSection] = Field(min_length=1, max_length=8)


class DailyBrief(Strict):
    """AGT-010 (seed §5.5): five sections, ≤250 words in all."""

    pipeline: str = Field(min_length=1, max_length=1500)
    alerts: str = Field(min_length=1, max_length=1500)
    queue: str = Field(min_length=1, max_length=1500)
    yesterday: str = Field(min_length=1, max_length=1500)
    todays_priorities: str = Field(min_length=1, max_length=1500)

    @model_validator(mode="after")
    def _at_most_250_words(self) -> DailyBrief:
        words = sum(len(part.split()) for part in self.model_dump().values())
        if words > 250:
            raise ValueError(f"the brief has {words} words; the limit is 250")
        return self


class ConversationSummary(Strict):
    """AGT-001 history compaction (seed §6.3)."""

    decisions: list[Note] = Field(default_factory=list, max_length=10)
    entity_ids: list[Name] = Field(default_factory=list, max_length=20)
    pending_items: list[Note] = Field(default_factory=list, max_length=10)
    user_preferences: list[Note] = Field(default_factory=list, max_length=10)
