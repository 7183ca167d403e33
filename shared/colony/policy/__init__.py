"""Deterministic policy no model is trusted with: anti-ICP rules (CONST-002) and the outbound
message shape (CONST-006). Pure functions over plain data; no I/O, no LLM."""

from colony.policy.anti_icp import RuleMatch, match_rules, validate_rules
from colony.policy.outbound import check_outbound, check_shape, count_sentences

__all__ = [
    "RuleMatch",
    "check_outbound",
    "check_shape",
    "count_sentences",
    "match_rules",
    "validate_rules",
]
