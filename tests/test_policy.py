"""Deterministic policy: the anti-ICP filter (CONST-002) and the outbound shape (CONST-006)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from colony.contracts.outputs import OutboundMessage
from colony.errors import ValidationFailed
from colony.policy import check_outbound, check_shape, count_sentences, match_rules
from colony.policy.anti_icp import validate_rules
from colony.policy.outbound import competitor_mentions, redact_competitors, split_sentences

pytestmark = pytest.mark.covers("CONST-002", "CONST-006")

DEMO = Path(__file__).resolve().parents[1] / "shared" / "colony" / "local" / "demo"
COMPETITORS = ["CareSpace Analytics", "FacilityIQ", "LeaseLogic Health"]


def _json(name: str) -> Any:
    return json.loads((DEMO / name).read_text())


# -- anti-ICP: the demo data -------------------------------------------------------------------


def test_demo_contacts_match_exactly_the_expected_rules() -> None:
    rules = _json("icp.json")["anti_icp_rules"]
    expected: dict[str, list[str]] = _json("anti_icp_expected.json")
    contacts = _json("contacts.json")
    assert len(contacts) == 36
    clean = 0
    for contact in contacts:
        matches = match_rules(contact, rules)
        ids = [m.rule_id for m in matches]
        assert ids == expected.get(contact["external_id"], []), contact["external_id"]
        assert all(m.reason for m in matches)
        clean += not ids
    assert clean == 28


def test_match_carries_the_rule_reason() -> None:
    rules = _json("icp.json")["anti_icp_rules"]
    (contact,) = [c for c in _json("contacts.json") if c["external_id"] == "P-027"]
    (match,) = match_rules(contact, rules)
    assert match.rule_id == "AICP-06"
    assert "deliverable email" in match.reason


# -- anti-ICP: operators -----------------------------------------------------------------------

CONTACT: dict[str, Any] = {
    "email": "a@b.org",
    "title": "VP Real Estate",
    "blank": "   ",
    "nothing": None,
    "enrichment": {
        "employee_count": 120,
        "vertical": "Health_System",
        "country": "us",
        "tech_stack": ["Epic", "ServiceNow"],
        "revenue": "1,200",
        "empty_list": [],
    },
}


def _rule(field: str, op: str, value: Any = None, **extra: Any) -> dict[str, Any]:
    rule = {"id": "R-1", "field": field, "op": op, "reason": "because", **extra}
    if value is not None:
        rule["value"] = value
    return rule


@pytest.mark.parametrize(
    ("field", "op", "value", "hit"),
    [
        ("enrichment.vertical", "eq", "health_system", True),  # case-insensitive
        ("enrichment.vertical", "eq", "physician_group", False),
        ("enrichment.vertical", "neq", "physician_group", True),
        ("enrichment.vertical", "neq", "HEALTH_SYSTEM", False),
        ("enrichment.employee_count", "eq", 120.0, True),
        ("enrichment.employee_count", "lt", 121, True),
        ("enrichment.employee_count", "lt", 120, False),
        ("enrichment.employee_count", "lte", 120, True),
        ("enrichment.employee_count", "gt", 119.5, True),
        ("enrichment.employee_count", "gt", 120, False),
        ("enrichment.employee_count", "gte", 120, True),
        ("enrichment.revenue", "gt", 1000, True),  # numeric strings compare as numbers
        ("title", "lt", 5, False),  # not a number: cannot compare, no match
        ("enrichment.country", "in", ["US", "CA"], True),
        ("enrichment.country", "not_in", ["US", "CA"], False),
        ("enrichment.country", "not_in", ["GB"], True),
        ("enrichment.tech_stack", "in", ["epic"], True),  # any element
        ("enrichment.tech_stack", "not_in", ["Cerner", "Meditech"], True),
        ("enrichment.tech_stack", "not_in", ["servicenow"], False),
        ("enrichment.tech_stack", "contains", "EPIC", True),
        ("enrichment.tech_stack", "contains", "Cerner", False),
        ("title", "contains", "real estate", True),
        ("title", "contains", "finance", False),
        ("email", "missing", None, False),
        ("blank", "missing", None, True),
        ("nothing", "missing", None, True),
        ("enrichment.empty_list", "missing", None, True),
        ("enrichment.absent", "missing", None, True),
        ("no.such.path", "missing", None, True),
        ("email.deeper", "missing", None, True),  # through a non-object: absent
    ],
)
def test_operators(field: str, op: str, value: Any, hit: bool) -> None:
    assert bool(match_rules(CONTACT, [_rule(field, op, value)])) is hit


@pytest.mark.parametrize("op", ["eq", "neq", "lt", "gte", "in", "not_in", "contains"])
def test_an_absent_field_matches_only_missing(op: str) -> None:
    value: Any = ["x"] if op in {"in", "not_in"} else (5 if op in {"lt", "gte"} else "x")
    assert match_rules(CONTACT, [_rule("enrichment.ownership", op, value)]) == []
    assert match_rules(CONTACT, [_rule("nothing", op, value)]) == []


def test_rules_are_reported_in_order_and_without_reason_get_one() -> None:
    rules = [
        {"id": "B", "field": "enrichment.country", "op": "eq", "value": "US"},
        _rule("enrichment.employee_count", "lt", 500) | {"id": "A"},
    ]
    matches = match_rules(CONTACT, rules)
    assert [m.rule_id for m in matches] == ["B", "A"]
    assert "enrichment.country" in matches[0].reason


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"field": "email", "op": "missing"}, "has no id"),
        ({"id": " ", "field": "email", "op": "missing"}, "has no id"),
        ({"id": "X-1", "field": "email", "op": "absent"}, "'X-1' has unknown op"),
        ({"id": "X-1", "op": "missing"}, "'X-1' has no valid field"),
        ({"id": "X-1", "field": "a..b", "op": "missing"}, "'X-1' has no valid field"),
        ({"id": "X-1", "field": "email", "op": "eq"}, "'X-1' (op 'eq') has no value"),
        ({"id": "X-1", "field": "email", "op": "eq", "value": None}, "has no value"),
        ({"id": "X-1", "field": "n", "op": "lt", "value": "50"}, "needs a numeric value"),
        ({"id": "X-1", "field": "n", "op": "lt", "value": True}, "needs a numeric value"),
        ({"id": "X-1", "field": "c", "op": "in", "value": "US"}, "needs a list value"),
        ({"id": "X-1", "field": "c", "op": "not_in", "value": []}, "empty list"),
        ({"id": "X-1", "field": "c", "op": "contains", "value": ""}, "empty value"),
    ],
)
def test_malformed_rules_raise_naming_the_rule(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationFailed, match=re.escape(message)):
        match_rules(CONTACT, [rule])


def test_a_malformed_rule_fails_even_after_good_ones_and_for_any_contact() -> None:
    good = _rule("email", "missing")
    bad = {"id": "BAD", "field": "email", "op": "like", "value": "x"}
    for contact in ({}, CONTACT):
        with pytest.raises(ValidationFailed, match="'BAD'"):
            match_rules(contact, [good, bad])


def test_duplicate_ids_and_non_objects_are_malformed() -> None:
    with pytest.raises(ValidationFailed, match="defined twice"):
        validate_rules([_rule("email", "missing"), _rule("title", "missing")])
    with pytest.raises(ValidationFailed, match="#1 is not an object"):
        validate_rules([_rule("email", "missing"), "AICP-01"])  # type: ignore[list-item]
    with pytest.raises(ValidationFailed, match="list of rule objects"):
        validate_rules("AICP-01")  # type: ignore[arg-type]


def test_the_demo_rules_are_well_formed() -> None:
    validate_rules(_json("icp.json")["anti_icp_rules"])


# -- outbound: sentence counting ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "count"),
    [
        ("Hi Dana,\n\nOne. Two? Three!\n\nBest,\nMarcus", 3),
        ("Hi Dana,\n\nOne sentence only.\n\nMarcus, ZoomProp", 1),
        ("Hello Dr. Feld,\n\nDr. Feld asked about rooms. Fine.\n\nThanks,\nMarcus Delgado", 2),
        ("Use e.g. the Epic report and i.e. the Clarity extract. Then stop.", 2),
        ("Occupancy was 18.5% in the U.S. last year and $3.1M was saved. Done.", 2),
        ("First clause; second clause; third clause.", 1),
        ("What now?! Nobody knows... Then it ended.", 3),
        ("Dana,\n\nA line without punctuation\n\nAnother paragraph\n\nCheers", 2),
        ("Hi Dana, quick question about your leases?\n\nMarcus", 1),  # greeting inline
        ("- First bullet\n- Second bullet\n\nThanks!\nMarcus", 2),
        ("It is approx. twelve sites. And Mr. Haines agreed.", 2),
        ("Leases, suites, etc. and parking. Storage etc. Then more.", 3),
        ("Acme Inc. has sites. See No. 5 and sq. ft. totals. The answer is no. Fine.", 4),
        ("Hi Dana,\n\nThe U.S. Census counts 14,200 staff vs. 9,800 last year.\n\n-- \nMarcus", 1),
        ("Hi Corey,\n\n\n", 0),
    ],
)
def test_count_sentences(body: str, count: int) -> None:
    assert count_sentences(body) == count


def test_split_sentences_returns_verbatim_text() -> None:
    text = 'She said "no." Then Dr. Feld left at 5 p.m. today. Done?'
    assert split_sentences(text) == [
        'She said "no."',
        "Then Dr. Feld left at 5 p.m. today.",
        "Done?",
    ]


def _exemplars() -> list[tuple[str, str, str, str]]:
    out = []
    for path in sorted((DEMO / "kc" / "KC-08").glob("*.md")):
        text = path.read_text()
        _, front, body = text.split("---", 2)
        tier = re.search(r"^tier:\s*(T\d)\s*$", front, re.MULTILINE)
        subject_line, _, rest = body.strip().partition("\n")
        assert subject_line.startswith("Subject:") and tier
        out.append((path.name, tier.group(1), subject_line.removeprefix("Subject:").strip(), rest))
    return out


def _demo_competitors() -> list[str]:
    names: list[str] = []
    for path in sorted((DEMO / "kc" / "KC-06").glob("*.md")):
        match = re.search(r"^competitors:\s*(.+)$", path.read_text(), re.MULTILINE)
        if match:
            names += [n.strip() for n in match.group(1).split(",") if n.strip() not in names]
    return names


@pytest.mark.covers("KC-06")
def test_demo_competitor_list() -> None:
    assert sorted(_demo_competitors()) == sorted(COMPETITORS)


@pytest.mark.covers("KC-08")
def test_all_twelve_kc08_exemplars_pass_the_shape_rules() -> None:
    exemplars = _exemplars()
    assert len(exemplars) == 12
    for name, tier, subject, body in exemplars:
        assert check_shape(subject, body, tier=tier, competitors=_demo_competitors()) == [], name
        assert 1 <= count_sentences(body) <= (3 if tier in {"T1", "T2"} else 5), name


def test_exemplar_sentence_counts() -> None:
    counts = {name: count_sentences(body) for name, _, _, body in _exemplars()}
    assert counts["insight-t1-consolidation-westbrook.md"] == 2
    assert counts["pain-t3-consolidation-fairmont.md"] == 4
    assert counts["signal-t3-expansion-whitford.md"] == 4


# -- outbound: the full check ------------------------------------------------------------------

SIGNALS = [
    "The Mercy Ridge board approved three new outpatient pavilions in Delaware, Licking and "
    "Pickaway counties, with the first scheduled to open in mid-2028.",
    "Eleven medical office building leases totaling about 186,000 sq ft expire between April "
    "2028 and January 2029, according to a capital committee filing.",
    "Mercy Ridge named Gregory Haines Chief Operating Officer; he previously led ambulatory "
    "operations at a neighboring health system.",
]
GOOD_BODY = (
    "Hi Dana,\n\nMercy Ridge has eleven medical office leases, about 186,000 sq ft, expiring "
    "between April 2028 and January 2029. Lakeshore Valley Health used 90 days of room-level "
    "data to exit four leases, saving $3.1M a year. Worth 20 minutes before the first notice "
    "window opens?\n\nMarcus"
)


def _message(**changes: str) -> OutboundMessage:
    fields = {
        "subject": "Your 2028 medical office renewals",
        "body": GOOD_BODY,
        "angle_used": "Signal",
        "signal_referenced": SIGNALS[1],
    }
    return OutboundMessage.model_validate(fields | changes)


def _check(
    message: OutboundMessage, tier: str = "T1", signals: list[str] | None = None
) -> list[str]:
    return check_outbound(
        message,
        tier=tier,
        contact_signals=SIGNALS if signals is None else signals,
        competitors=COMPETITORS,
    )


def test_a_good_message_passes() -> None:
    assert _check(_message()) == []
    # a paraphrased reference to the signal is enough
    assert _check(_message(signal_referenced="186,000 sq ft of medical office leases expire")) == []


def test_sentence_limits_depend_on_the_tier() -> None:
    body = GOOD_BODY.replace("Worth 20", "It took 90 days. Worth 20")
    assert _check(_message(body=body), "T1") == ["body has 4 sentences; T1 allows at most 3"]
    assert _check(_message(body=body), "T2") == ["body has 4 sentences; T2 allows at most 3"]
    for tier in ("T3", "T4", "T5"):
        assert _check(_message(body=body), tier) == []
    six = body.replace("It took", "Really. Truly. It took")
    assert _check(_message(body=six), "T5") == ["body has 6 sentences; T5 allows at most 5"]


def test_unknown_tier_is_a_caller_error() -> None:
    with pytest.raises(ValidationFailed, match="T9"):
        _check(_message(), "T9")


def test_subject_word_limit() -> None:
    eight = "one two three four five six seven eight"
    assert _check(_message(subject=eight)) == []
    problems = _check(_message(subject=eight + " nine"))
    assert problems == ["subject has 9 words; the limit is 8"]
    assert _check(_message(subject="A - B - C - D - E - F - G - H")) == []  # dashes are not words


@pytest.mark.parametrize(
    ("where", "text"),
    [
        ("body", "Unlike CareSpace Analytics, we join schedules."),
        ("body", "Unlike carespace analytics we join schedules."),
        ("body", "Unlike CareSpace, we join schedules."),  # the coined word alone
        ("body", "Keep LeaseLogic Health's abstracts."),
        ("body", "Keep your FacilityIQ condition scores."),
        ("subject", "Better than LeaseLogic"),
    ],
)
def test_competitor_names_are_flagged(where: str, text: str) -> None:
    if where == "body":
        message = _message(body=GOOD_BODY.replace("Worth 20", f"{text} Worth 20"))
        problems = _check(message, "T3")
    else:
        problems = _check(_message(subject=text))
    assert len(problems) == 1 and problems[0].startswith(f"{where} names competitor"), problems


def test_competitor_match_is_whole_word() -> None:
    assert competitor_mentions("See FacilityIQX and NotCareSpace results.", COMPETITORS) == []
    assert competitor_mentions("our analytics on health leases", COMPETITORS) == []
    redacted = redact_competitors("We met CareSpace Analytics and CareSpace.", COMPETITORS, "X")
    assert redacted == "We met X and X."


def test_signal_referenced_must_match_exactly_one_signal() -> None:
    problems = _check(_message(signal_referenced="A new CFO started in March."))
    assert problems == ["signal_referenced does not match any of the contact's signals"]
    vague = _check(_message(signal_referenced="Mercy Ridge news"))
    assert vague and "matches 2 of the contact's signals" in vague[0]


def test_the_body_must_reference_the_named_signal() -> None:
    body = "Hi Dana,\n\nHow full are your clinics on Fridays? Worth a chat?\n\nMarcus"
    assert _check(_message(body=body)) == [
        "the body does not reference the signal named in signal_referenced"
    ]


def test_the_body_must_not_reference_a_second_signal() -> None:
    body = GOOD_BODY.replace(
        "Worth 20",
        "With Gregory Haines newly named Chief Operating Officer, timing matters. Worth 20",
    )
    problems = _check(_message(body=body), "T3")
    assert problems == ["the body also references 1 other signal(s); exactly one is allowed"]


def test_a_contact_without_signals_cannot_pass() -> None:
    assert _check(_message(), signals=[]) == [
        "the contact has no signals, so no signal can be referenced"
    ]


def test_problems_accumulate() -> None:
    body = GOOD_BODY.replace("Worth 20", "Unlike FacilityIQ. Really. Worth 20")
    problems = _check(_message(subject="one two three four five six seven eight nine", body=body))
    assert len(problems) == 3
