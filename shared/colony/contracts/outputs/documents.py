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

    title: str = Field(min_length=1, max_length=200, description="The piece's title.")
    format: Literal["linkedin_post", "blog_post", "one_pager", "email_newsletter"] = Field(
        description="The format asked for."
    )
    body: str = Field(min_length=1, max_length=8000, description="The piece.")


class KitSection(Strict):
    heading: str = Field(min_length=1, max_length=200, description="The section's heading.")
    body: str = Field(min_length=1, max_length=4000, description="The section.")


class DeploymentKit(Strict):
    """AGT-009: the deployment kit document's content (rendered to GCS elsewhere)."""

    title: str = Field(min_length=1, max_length=200, description="The kit's title.")
    sections: list[KitSection] = Field(
        min_length=1, max_length=8, description="The kit, section by section."
    )


class DailyBrief(Strict):
    """AGT-010 (seed §5.5): five sections, ≤250 words in all."""

    pipeline: str = Field(min_length=1, max_length=1500, description="The pipeline now.")
    alerts: str = Field(min_length=1, max_length=1500, description="What needs attention.")
    queue: str = Field(min_length=1, max_length=1500, description="The approval queue.")
    yesterday: str = Field(min_length=1, max_length=1500, description="What happened.")
    todays_priorities: str = Field(min_length=1, max_length=1500, description="What to do today.")

    @model_validator(mode="after")
    def _at_most_250_words(self) -> DailyBrief:
        words = sum(len(part.split()) for part in self.model_dump().values())
        if words > 250:
            raise ValueError(f"the brief has {words} words; the limit is 250")
        return self


class ConversationSummary(Strict):
    """AGT-001 history compaction (seed §6.3)."""

    decisions: list[Note] = Field(
        default_factory=list, max_length=10, description="What was decided."
    )
    entity_ids: list[Name] = Field(
        default_factory=list, max_length=20, description="The ids of what was discussed."
    )
    pending_items: list[Note] = Field(
        default_factory=list, max_length=10, description="What is still open."
    )
    user_preferences: list[Note] = Field(
        default_factory=list, max_length=10, description="How the person likes to work."
    )
