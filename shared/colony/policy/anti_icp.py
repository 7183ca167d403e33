"""CONST-002: the deterministic anti-ICP filter.

A rule is ``{id, field, op, value, reason}`` (ENT-010 ``anti_icp_rules``). ``field`` is a
dotted path into a contact dict shaped like ``local/demo/contacts.json`` entries: top-level
fields (``email``, ``title``) and nested ones (``enrichment.vertical``).

Semantics, chosen to be predictable rather than clever:

- ``eq`` / ``neq``: equality; strings compare case-insensitively (and stripped), numbers by
  value (``34 == 34.0``), anything else with ``==``.
- ``lt`` / ``lte`` / ``gt`` / ``gte``: numeric. The rule's value must be a number; a contact
  value that is not a number (or a numeric string) cannot be compared and does not match.
- ``in`` / ``not_in``: the rule's value must be a list. A list-valued contact field is ``in``
  when any element is in the rule's list and ``not_in`` when none is.
- ``contains``: substring for strings, membership for lists (case-insensitive either way).
- ``missing``: the path is absent, ``None``, a blank string or an empty list/dict.

An absent field matches only ``missing``: every other operator needs a value to compare, and
an anti-ICP rule disqualifies, so it never fires without evidence (a separate ``missing`` rule
is how a policy says "no data means out", as AICP-06 does for email).

A malformed rule (no id, duplicate id, no field, unknown op, absent or wrongly typed value)
raises ``ValidationFailed`` naming the rule. All rules are checked before any is evaluated, so
a broken rule set fails for every contact, never silently passes some.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colony.errors import FieldsInvalid, ValidationFailed

OPS = ("eq", "neq", "lt", "lte", "gt", "gte", "in", "not_in", "contains", "missing")
_NUMERIC_OPS = ("lt", "lte", "gt", "gte")
_LIST_OPS = ("in", "not_in")
_ABSENT = object()


@dataclass(frozen=True, slots=True)
class RuleMatch:
    """An anti-ICP rule that matched, and why."""

    rule_id: str
    reason: str


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _rule_name(rule: Any, index: int) -> str:
    if isinstance(rule, Mapping) and isinstance(rule.get("id"), str) and rule["id"].strip():
        return f"anti-ICP rule {rule['id']!r}"
    return f"anti-ICP rule #{index}"


def validate_rules(rules: Sequence[Mapping[str, Any]]) -> None:
    """Raise ``ValidationFailed`` naming the first malformed rule (``FieldsInvalid``, its
    field as ``<index>.<key>``: a form puts the message beside it); return if all are sound."""
    if isinstance(rules, str | bytes) or not isinstance(rules, Sequence):
        raise ValidationFailed("anti-ICP rules must be a list of rule objects")
    seen: set[str] = set()
    for index, rule in enumerate(rules):
        name = _rule_name(rule, index)

        def bad(key: str, problem: str, index: int = index, name: str = name) -> FieldsInvalid:
            message, path = f"{name} {problem}", f"{index}.{key}" if key else str(index)
            return FieldsInvalid(message, [{"field": path, "message": message}])

        if not isinstance(rule, Mapping):
            raise bad("", "is not an object")
        rule_id = rule.get("id")
        if not isinstance(rule_id, str) or not rule_id.strip():
            raise bad("id", "has no id")
        if rule_id in seen:
            raise bad("id", "is defined twice")
        seen.add(rule_id)
        field = rule.get("field")
        if (
            not isinstance(field, str)
            or not field.strip()
            or any(not part for part in field.split("."))
        ):
            raise bad("field", f"has no valid field path (got {field!r})")
        op = rule.get("op")
        if op not in OPS:
            raise bad("op", f"has unknown op {op!r}; expected one of {OPS}")
        if op == "missing":
            continue
        if "value" not in rule or rule["value"] is None:
            raise bad("value", f"(op {op!r}) has no value")
        value = rule["value"]
        if op in _NUMERIC_OPS and not _is_number(value):
            raise bad("value", f"(op {op!r}) needs a numeric value, got {value!r}")
        if op in _LIST_OPS and (isinstance(value, str | bytes) or not isinstance(value, Sequence)):
            raise bad("value", f"(op {op!r}) needs a list value, got {value!r}")
        if op in _LIST_OPS and not value:
            raise bad("value", f"(op {op!r}) has an empty list value")
        if op == "contains" and (isinstance(value, str) and not value.strip()):
            raise bad("value", "(op 'contains') has an empty value")


def resolve(contact: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path, or ``_ABSENT`` when any step is missing."""
    current: Any = contact
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        else:
            return _ABSENT
    return current


def _is_missing(value: Any) -> bool:
    if value is _ABSENT or value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, Mapping | list | tuple | set):
        return len(value) == 0
    return False


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().casefold()
    if _is_number(value):
        return float(value)
    return value


def _eq(left: Any, right: Any) -> bool:
    return bool(_norm(left) == _norm(right))


def _as_number(value: Any) -> float | None:
    if _is_number(value):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.replace(",", "").strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _elements(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple | set) else [value]


def _evaluate(op: str, actual: Any, expected: Any) -> bool:
    if op == "missing":
        return _is_missing(actual)
    if actual is _ABSENT or actual is None:
        return False
    if op == "eq":
        return _eq(actual, expected)
    if op == "neq":
        return not _eq(actual, expected)
    if op in _NUMERIC_OPS:
        number = _as_number(actual)
        if number is None:
            return False
        limit = float(expected)
        return {
            "lt": number < limit,
            "lte": number <= limit,
            "gt": number > limit,
            "gte": number >= limit,
        }[op]
    if op in _LIST_OPS:
        wanted = [_norm(item) for item in expected]
        hit = any(_norm(item) in wanted for item in _elements(actual))
        return hit if op == "in" else not hit
    # contains
    if isinstance(actual, str):
        return str(expected).strip().casefold() in actual.casefold()
    return any(_eq(item, expected) for item in _elements(actual))


def match_rules(contact: Mapping[str, Any], rules: Sequence[Mapping[str, Any]]) -> list[RuleMatch]:
    """Every rule the contact matches, in rule order. Malformed rules raise first."""
    if not isinstance(contact, Mapping):
        raise ValidationFailed("contact must be an object")
    validate_rules(rules)
    matches: list[RuleMatch] = []
    for rule in rules:
        op = str(rule["op"])
        actual = resolve(contact, str(rule["field"]))
        if _evaluate(op, actual, rule.get("value")):
            reason = rule.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                reason = f"{rule['field']} {op} {rule.get('value')!r}"
            matches.append(RuleMatch(rule_id=str(rule["id"]), reason=reason))
    return matches
