"""Ids used everywhere (code, traces, terraform checks, the knowledge graph): one source of truth."""

from colony.registry.domains import DOMAINS, NOTION_SYNCED, Domain, check_domains

__all__ = ["DOMAINS", "NOTION_SYNCED", "Domain", "check_domains"]
