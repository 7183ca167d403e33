"""The ten Knowledge Core domains (ENT-007), SPEC §4."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from colony.errors import UnknownDomain

Origin = Literal["notion", "approved_output"]


@dataclass(frozen=True, slots=True)
class Domain:
    """One Knowledge Core domain (KC-xx) and where its knowledge comes from."""

    id: str
    name: str
    origin: Origin


DOMAINS: dict[str, Domain] = {
    d.id: d
    for d in (
        Domain("KC-01", "product & positioning", "notion"),
        Domain("KC-02", "ICP & anti-ICP rubric", "notion"),
        Domain("KC-03", "buyer personas", "notion"),
        Domain("KC-04", "objection handling", "notion"),
        Domain("KC-05", "case studies & proof points", "notion"),
        Domain("KC-06", "competitive landscape", "notion"),
        Domain("KC-07", "brand voice & style", "notion"),
        Domain("KC-08", "outbound exemplars", "approved_output"),
        Domain("KC-09", "call insights", "approved_output"),
        Domain("KC-10", "onboarding playbooks", "approved_output"),
    )
}

NOTION_SYNCED: tuple[str, ...] = tuple(d.id for d in DOMAINS.values() if d.origin == "notion")


def check_domains(domains: Iterable[str]) -> tuple[str, ...]:
    """Return the domains as a de-duplicated tuple in the given order, or raise on an unknown id."""
    seen: dict[str, None] = {}
    for domain in domains:
        if domain not in DOMAINS:
            raise UnknownDomain(
                f"unknown Knowledge Core domain {domain!r}; expected one of KC-01..KC-10"
            )
        seen[domain] = None
    if not seen:
        raise UnknownDomain("no Knowledge Core domain given; name at least one of KC-01..KC-10")
    return tuple(seen)
