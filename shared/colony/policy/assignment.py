"""Assignment rules (issue 35 item 1): which of an org's people a new prospect goes to.

An org's rules (its team settings, ``colony.flows.tenants.team``) are a list tried in order;
the first whose ``field`` holds one of its ``values`` (case and outer spaces aside) names
the pool, its ``members``; a prospect no rule matches, or whose rule has no active member
left, goes to every active member in turn (round robin). Within a pool it is round robin
too: the next person after the one who got the last prospect from that pool.

    {"rules": [{"field": "territory", "values": ["EMEA"], "members": ["user_a", "user_b"]},
               {"field": "segment", "values": ["enterprise"], "members": ["user_c"]}]}

A field is a prospect's own column (``company_domain``, ``title``, ``company``) or what an
import or enrichment kept beside it (``territory``, ``segment``, ``country``,
``industry``). Pure: no I/O; the flow reads the prospects and the people and applies picks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colony.errors import ValidationFailed

COLUMNS = ("company_domain", "title", "company")
FIELDS = (*COLUMNS, "territory", "segment", "country", "industry")
MAX_RULES = 50
MAX_VALUES = 100


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: prospects whose ``field`` is one of ``values`` go to ``members`` in turn."""

    field: str
    values: frozenset[str]
    members: tuple[str, ...]


def parse(assignment: Mapping[str, Any]) -> list[Rule]:
    """The rules of a stored or submitted ``assignment`` object; a rule that cannot work is a
    ``ValidationFailed`` naming it."""
    rules = assignment.get("rules", [])
    if not isinstance(rules, list) or len(rules) > MAX_RULES:
        raise ValidationFailed(f"assignment.rules: a list of at most {MAX_RULES} rules")
    parsed = []
    for i, rule in enumerate(rules):
        where = f"assignment.rules[{i}]"
        if not isinstance(rule, Mapping) or set(rule) != {"field", "values", "members"}:
            raise ValidationFailed(f"{where}: an object with field, values and members")
        field, values, members = rule["field"], rule["values"], rule["members"]
        if field not in FIELDS:
            raise ValidationFailed(f"{where}.field: {field!r} is not one of {', '.join(FIELDS)}")
        if not _strings(values, MAX_VALUES):
            raise ValidationFailed(f"{where}.values: 1 to {MAX_VALUES} non-empty strings")
        if not _strings(members, 200) or len(set(members)) != len(members):
            raise ValidationFailed(f"{where}.members: 1 to 200 distinct user ids")
        parsed.append(Rule(field, frozenset(_norm(v) for v in values), tuple(members)))
    return parsed


def _strings(value: Any, most: int) -> bool:
    return (
        isinstance(value, list)
        and 1 <= len(value) <= most
        and all(isinstance(v, str) and v.strip() and len(v) <= 200 for v in value)
    )


def _norm(value: str) -> str:
    return " ".join(value.split()).casefold()


def field_of(prospect: Mapping[str, Any], field: str) -> str | None:
    """The prospect's value for ``field``: its column, or what its enrichment kept."""
    value = prospect.get(field) if field in COLUMNS else None
    if value is None:
        enrichment = prospect.get("enrichment") or {}
        value = enrichment.get(field) if isinstance(enrichment, Mapping) else None
    return _norm(value) if isinstance(value, str) and value.strip() else None


def pool_for(
    prospect: Mapping[str, Any], rules: Sequence[Rule], active: Sequence[str]
) -> list[str]:
    """Who may get ``prospect``: the first matching rule's active members, in the rule's
    order; else every active person (``active``, in the order they joined)."""
    here = set(active)
    for rule in rules:
        if field_of(prospect, rule.field) in rule.values:
            pool = [m for m in rule.members if m in here]
            if pool:
                return pool
    return list(active)


def pool_key(pool: Sequence[str]) -> str:
    """A pool's name for its round-robin cursor (the same people: the same name)."""
    return "pool:" + hashlib.sha256("\n".join(sorted(pool)).encode()).hexdigest()[:24]


def next_in(pool: Sequence[str], last: str | None) -> str:
    """Round robin: the person after ``last`` in ``pool`` (the first when ``last`` is not in
    it)."""
    if last is not None and last in pool:
        return pool[(list(pool).index(last) + 1) % len(pool)]
    return pool[0]
