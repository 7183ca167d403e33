"""The research function's task (issue 33): research one company's domain for one org; and
what names a company (``domain_of``), which every way of asking for research shares.

A task is the whole request body of a Cloud Tasks call to the ``research`` function. The
same task is scheduled again (later) while a site's pace holds the runner back; it reads the
job's row each time (``colony.store.research.jobs``), so a duplicate does nothing twice.

``domain_of`` is here, below the flows, because a chat tool's argument model
(``colony.contracts.chat.ResearchCompanyArgs``) refuses what names no company before
anything is queued, and ``colony.flows.research.requests`` keys research by the same rule.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from colony.contracts.common import Strict

_DOMAIN = re.compile(
    r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$"
)
# Names that are a machine's or a network's, never a company's: loopback (RFC 6761), the
# cloud's own (``metadata.google.internal``: the research fetch refuses these names too,
# ``colony.adapters.web_guard``), reverse DNS of an address, and the never-existing.
_NOT_A_COMPANY = ("localhost", "internal", "arpa", "invalid")


def domain_of(value: str | None) -> str | None:
    """A company domain as research keys it (lower-case, IDNA, no scheme, path, port or
    ``www.``), or None when ``value`` names none (an IP address, ``localhost``, a metadata
    host such as ``metadata.google.internal`` is not a company)."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        host = urlsplit(text if "//" in text else f"//{text}").hostname or ""
        host = host.rstrip(".").encode("idna").decode("ascii").lower()
    except (UnicodeError, ValueError):
        return None
    host = host.removeprefix("www.")
    if not _DOMAIN.fullmatch(host) or host.rpartition(".")[2] in _NOT_A_COMPANY:
        return None
    return host


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
