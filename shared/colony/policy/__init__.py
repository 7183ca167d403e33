"""Deterministic policy no model is trusted with: anti-ICP rules (CONST-002) and the outbound
message shape (CONST-006). Pure functions over plain data; no I/O, no LLM."""

from typing import TYPE_CHECKING

from colony.lazy import lazy_names

if TYPE_CHECKING:  # the real names, for type checkers
    from colony.policy.anti_icp import RuleMatch, match_rules, validate_rules
    from colony.policy.outbound import check_outbound, check_shape, count_sentences

# Loaded on first use (PEP 562): a flow that only needs the sending schedule
# (``policy.schedule``) does not load the message-shape rules and their patterns.
_HOMES = {
    "RuleMatch": "colony.policy.anti_icp",
    "check_outbound": "colony.policy.outbound",
    "check_shape": "colony.policy.outbound",
    "count_sentences": "colony.policy.outbound",
    "match_rules": "colony.policy.anti_icp",
    "validate_rules": "colony.policy.anti_icp",
}

__all__ = [
    "RuleMatch",
    "check_outbound",
    "check_shape",
    "count_sentences",
    "match_rules",
    "validate_rules",
]


__getattr__ = lazy_names(__name__, _HOMES)
