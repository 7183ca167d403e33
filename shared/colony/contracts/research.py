"""The research function's task (issue 33): research one company's domain for one org.

A task is the whole request body of a Cloud Tasks call to the ``research`` function. The
same task is scheduled again (later) while a site's pace holds the runner back; it reads the
job's row each time (``colony.store.research.jobs``), so a duplicate does nothing twice.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from colony.contracts.common import Strict


class ResearchTask(Strict):
    kind: Literal["research"] = "research"
    org_id: str = Field(min_length=1, max_length=200)
    domain: str = Field(min_length=1, max_length=253)
    pass_no: int = Field(ge=1)


class ResearchRequest(Strict):
    """``POST /orgs/{org}/research``: research a company's website for the org (its domain,
    or its website's URL); ``force`` researches again inside the freshness window."""

    domain: str = Field(min_length=1, max_length=2048)
    force: bool = False
