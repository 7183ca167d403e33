"""HubSpot's CRM search (``POST /crm/v3/objects/{type}/search``) over a ``HubSpotWorld``: the
request body as HubSpot reads it, its limits and its errors, shared by the HTTP stand-in and
the in-memory fake.

What it keeps of HubSpot's rules: at most 5 filter groups of at most 6 filters (18 in all),
groups OR'ed and a group's filters AND'ed; one sort; ``limit`` at most 200; ``after`` is an
offset, and no page reaches past the 10,000th result (400, whatever ``total`` says). Numbers
compare as numbers and datetimes as instants (an ISO time or epoch milliseconds); text
compares without case. Without a sort, results come in id order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from colony.testing.hubspot_world import HubSpotWorld, Obj

MAX_GROUPS, MAX_FILTERS, MAX_ALL_FILTERS = 5, 6, 18
MAX_LIMIT, MAX_RESULTS = 200, 10_000
TEXT_FIELDS = ("email", "firstname", "lastname", "name", "domain", "dealname")


class SearchRefused(ValueError):
    """A search HubSpot answers with 400 ``VALIDATION_ERROR``; the message is HubSpot's kind."""


def _comparable(value: str | None) -> float | str | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return value.lower()


def _compare(op: str, have: Any, want: Any) -> bool:
    if have is None or want is None or isinstance(have, str) != isinstance(want, str):
        return False
    checks: dict[str, Callable[[Any, Any], bool]] = {
        "LT": lambda a, b: a < b,
        "LTE": lambda a, b: a <= b,
        "GT": lambda a, b: a > b,
        "GTE": lambda a, b: a >= b,
    }
    return checks[op](have, want)


def matches(obj: Obj, flt: Mapping[str, Any]) -> bool:
    """Whether ``obj`` passes one filter."""
    op = str(flt.get("operator") or "EQ")
    name = str(flt.get("propertyName") or "")
    raw = obj.properties.get(name) if name != "hs_object_id" else obj.id
    have = _comparable(raw)
    if op == "HAS_PROPERTY":
        return raw not in (None, "")
    if op == "NOT_HAS_PROPERTY":
        return raw in (None, "")
    if op in ("IN", "NOT_IN"):
        wanted = {_comparable(str(v)) for v in flt.get("values") or []}
        return (have in wanted) == (op == "IN")
    if op in ("CONTAINS_TOKEN", "NOT_CONTAINS_TOKEN"):
        token = str(flt.get("value") or "").lower().strip("*")
        found = raw is not None and token in raw.lower()
        return found == (op == "CONTAINS_TOKEN")
    want = _comparable(None if flt.get("value") is None else str(flt["value"]))
    if op == "EQ":
        return have is not None and have == want
    if op == "NEQ":
        return have != want
    if op == "BETWEEN":
        high = _comparable(str(flt.get("highValue")))
        return _compare("GTE", have, want) and _compare("LTE", have, high)
    if op in ("LT", "LTE", "GT", "GTE"):
        return _compare(op, have, want)
    raise SearchRefused(f"Unknown operator: {op}")


def _check(body: Mapping[str, Any]) -> tuple[list[list[Mapping[str, Any]]], int, int]:
    groups = [list(g.get("filters") or []) for g in body.get("filterGroups") or []]
    if len(groups) > MAX_GROUPS:
        raise SearchRefused(f"There are {len(groups)} filter groups; the maximum is {MAX_GROUPS}")
    if any(len(g) > MAX_FILTERS for g in groups) or sum(map(len, groups)) > MAX_ALL_FILTERS:
        raise SearchRefused(
            f"A filter group may hold {MAX_FILTERS} filters, {MAX_ALL_FILTERS} in all"
        )
    limit = body.get("limit", 10)
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise SearchRefused(f"limit must be between 1 and {MAX_LIMIT}")
    after = str(body.get("after") or "0")
    if not after.isdigit():
        raise SearchRefused(f"after {after!r} is not a valid paging cursor")
    offset = int(after)
    if offset >= MAX_RESULTS:
        raise SearchRefused(
            f"Search results are limited to {MAX_RESULTS} for a query; narrow the filters"
        )
    if len(body.get("sorts") or []) > 1:
        raise SearchRefused("Only one sort is allowed")
    return groups, limit, offset


def _sort_key(body: Mapping[str, Any]) -> tuple[str | None, bool]:
    sorts = body.get("sorts") or []
    if not sorts:
        return None, False
    sort = sorts[0]
    if isinstance(sort, str):  # HubSpot also takes a bare name, ascending ("-name": descending)
        return sort.lstrip("-"), sort.startswith("-")
    return str(sort.get("propertyName")), str(sort.get("direction")) == "DESCENDING"


def search(
    world: HubSpotWorld, object_type: str, body: Mapping[str, Any]
) -> tuple[list[Obj], int, str | None]:
    """(this page's records, how many match in all, the next page's ``after`` or None)."""
    groups, limit, offset = _check(body)
    text = str(body.get("query") or "").lower()
    found = [
        obj
        for obj in world.live(object_type)
        if (not groups or any(all(matches(obj, f) for f in g) for g in groups))
        and (not text or any(text in (obj.properties.get(n) or "").lower() for n in TEXT_FIELDS))
    ]
    name, descending = _sort_key(body)
    if name is not None:
        # records without the property go last either way, as HubSpot lists them
        present = [o for o in found if o.properties.get(name) not in (None, "")]
        absent = [o for o in found if o.properties.get(name) in (None, "")]
        present.sort(key=lambda o: (_sortable(o.properties.get(name)), int(o.id)))
        if descending:
            present.reverse()
        found = present + absent
    page = found[offset : offset + limit]
    end = offset + len(page)
    # HubSpot hands out the cursor of the page past 10,000 too; asking for it is the 400
    after = str(end) if end < len(found) else None
    return page, len(found), after


def _sortable(value: str | None) -> tuple[int, float | str]:
    key = _comparable(value)
    return (0, key) if isinstance(key, float) else (1, str(key))
