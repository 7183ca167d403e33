"""Ids used everywhere (code, traces, terraform, the knowledge graph): one source of truth."""

from colony.registry.domains import DOMAINS, NOTION_SYNCED, Domain, check_domains

__all__ = ["DOMAINS", "NOTION_SYNCED", "Domain", "check_domains"]
