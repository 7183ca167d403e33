"""What an approval card says about untrusted text behind its draft (issue 14 item 4).

A card's payload carries ``untrusted_instructions`` when there is anything to show: what the
detector flagged in the text the drafting call read (``AssembledContext``) and every link or
address the draft itself would carry. The /overview card shows them as a warning; the
defence (data blocks, people decide) does not depend on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from colony.context import untrusted
from colony.llm.agent_call import AgentResult

KEY = "untrusted_instructions"
_LINK = "asks to insert link "


def of_draft(
    result: AgentResult,
    output: Mapping[str, Any],
    *,
    allowed: Iterable[str] = (),
    own_domains: Iterable[str] = (),
) -> list[str]:
    """The flags for a draft: its call's findings, then the links/addresses in the draft.
    An ``allowed`` address (the recipient's own, which their record carries) is not a
    planted one, wherever it appears; nor is a link to one of ``own_domains`` (the
    recipient's company site, which their enrichment quotes) in what the call read."""
    keep = [a for a in allowed if a]
    planted = {f"asks to insert address {a}".lower() for a in keep}
    domains = [d.lower().strip(".") for d in own_domains if d]
    findings = [
        f
        for f in result.assembled.untrusted_instructions
        if f.lower() not in planted and not _own_link(f, domains)
    ]
    return untrusted.merge(findings, untrusted.links_in(output, keep))


def _own_link(flag: str, domains: list[str]) -> bool:
    if not domains or not flag.startswith(_LINK):
        return False
    link = flag[len(_LINK) :]
    host = urlsplit(link if "://" in link else f"https://{link}").hostname or ""
    return any(host == d or host.endswith(f".{d}") for d in domains)


def flagged(payload: Mapping[str, Any], *groups: Iterable[str]) -> dict[str, Any]:
    """``payload`` with the flags of ``groups`` added to any it has (none: unchanged)."""
    flags = untrusted.merge(payload.get(KEY) or (), *groups)
    return {**payload, KEY: flags} if flags else dict(payload)
