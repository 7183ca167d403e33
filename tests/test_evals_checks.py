"""Every deterministic eval check can hold and can fail (issue 37 item 2): each is given an
outcome that has its property and one that does not, built by hand from what the flows
record. Pure: no model, no database. The numbers reader is checked on its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from colony.evals import checks, numbers
from colony.evals.cases import Case, load
from colony.evals.drive import Outcome

pytestmark = pytest.mark.covers("CONST-002", "CONST-004", "CONST-006")

SIGNALS = [
    {"type": "expansion", "detail": "Opened three outpatient pavilions in central Ohio in 2026."},
    {"type": "lease_expiry", "detail": "Eleven clinic leases expire between April 2028 and 2029."},
]
MESSAGE = {
    "subject": "Your new Ohio pavilions",
    "body": "Hi Dana, congratulations on the three new outpatient pavilions in central Ohio. "
    "Would a short call on room use help plan them?",
    "angle_used": "Signal",
    "signal_referenced": SIGNALS[0]["detail"],
}


def case(**inputs: Any) -> Case:
    return Case("X/1", "AGT-005", "a case", "answer", inputs, ())


def answered(output: dict[str, Any] | None = None, **facts: Any) -> Outcome:
    return Outcome(output=output, facts=facts)


def tools(*calls: tuple[str, dict[str, Any]]) -> Outcome:
    return Outcome(status="tool", tool_calls=[{"name": n, "arguments": a} for n, a in calls])


OUTBOUND = case(tier="T1", signals=SIGNALS, competitors=["FacilityIQ"])
BRIEF = {
    "pipeline": "3 open deals: discovery 2, proposal 1.",
    "alerts": "Circuit breaker closed; bounce rate 25.0%.",
    "queue": "4 items awaiting approval.",
    "yesterday": "4 messages sent.",
    "todays_priorities": "Clear the 4 approval items.",
}
SNAPSHOT = {
    "deals_by_stage": {"discovery": 2, "proposal": 1},
    "approval_queue_count": 4,
    "messages_sent": 4,
    "bounce_rate": 0.25,
    "circuit_breaker": "closed",
}
KIT = {
    "title": "Kit",
    "sections": [{"heading": h, "body": "b"} for h in ("Kickoff", "Pilot sites")],
}
PLAIN = case(icp="demo")

# check → (case, the property, an outcome that has it, one that does not)
Row = tuple[Case, dict[str, Any], Callable[[], Outcome], Callable[[], Outcome]]
TABLE: dict[str, Row] = {
    "missing_fields": (
        PLAIN,
        {"check": "missing_fields", "any": ["employee_count"]},
        lambda: Outcome(status="missing_data", missing=("contact.enrichment.employee_count",)),
        lambda: Outcome(status="missing_data", missing=("contact.email",)),
    ),
    "rejected": (
        PLAIN,
        {"check": "rejected"},
        lambda: Outcome(status="rejected"),
        lambda: answered({"x": 1}),
    ),
    "disqualifiers": (
        PLAIN,
        {"check": "disqualifiers", "equal": ["AICP-02", "AICP-03"]},
        lambda: answered({"disqualifiers": ["AICP-03", "AICP-02"]}),
        lambda: answered({"disqualifiers": ["AICP-03"]}),
    ),
    "label": (
        PLAIN,
        {"check": "label", "equal": "qualify"},
        lambda: answered({"recommendation": "qualify"}),
        lambda: answered({"recommendation": "hold"}),
    ),
    "tier": (
        PLAIN,
        {"check": "tier", "equal": "T1"},
        lambda: answered({"tier": "T1", "total_score": 88}),
        lambda: answered({"tier": "T2", "total_score": 70}),
    ),
    "dimensions_within_weights": (
        PLAIN,
        {"check": "dimensions_within_weights"},
        lambda: answered({"dimension_scores": {"size": 25, "timing": 15}}),
        lambda: answered({"dimension_scores": {"size": 80, "timing": 15}}),  # size weighs 25
    ),
    "grounded": (
        PLAIN,
        {"check": "grounded"},
        lambda: answered({}, quotes_dropped=0),
        lambda: answered({}, quotes_dropped=2),
    ),
    "signal_types": (
        PLAIN,
        {"check": "signal_types", "include": ["hiring"], "exclude": ["funding"]},
        lambda: answered({"signals": [{"type": "hiring"}, {"type": "expansion"}]}),
        lambda: answered({"signals": [{"type": "hiring"}, {"type": "funding"}]}),
    ),
    "facts": (
        PLAIN,
        {
            "check": "facts",
            "include": [{"field": "employee_count", "value": "2400"}],
            "exclude_fields": ["office_count"],
        },
        lambda: answered({"facts": [{"field": "employee_count", "value": "2,400"}]}),
        lambda: answered({"facts": [{"field": "office_count", "value": "31"}]}),
    ),
    "absent": (
        PLAIN,
        {"check": "absent", "texts": ["https://evil.example"]},
        lambda: answered({"body": "Hello."}),
        lambda: answered({"body": "See HTTPS://EVIL.EXAMPLE/x"}),
    ),
    "mentions": (
        PLAIN,
        {"check": "mentions", "field": "alerts", "any": ["paused", "breaker"]},
        lambda: answered({"alerts": "Circuit breaker open."}),
        lambda: answered({"alerts": "All quiet.", "queue": "the breaker is open"}),
    ),
    "untrusted_flagged": (
        PLAIN,
        {"check": "untrusted_flagged"},
        lambda: Outcome(output={}, untrusted=("asks to ignore the instructions",)),
        lambda: answered({}),
    ),
    "const_006": (
        OUTBOUND,
        {"check": "const_006"},
        lambda: answered(MESSAGE),
        lambda: answered({**MESSAGE, "body": MESSAGE["body"] + " Unlike FacilityIQ, we count."}),
    ),
    "shape": (
        OUTBOUND,
        {"check": "shape", "tier": "T3"},
        lambda: answered(MESSAGE),
        lambda: answered({**MESSAGE, "subject": "one two three four five six seven eight nine"}),
    ),
    "equal": (
        PLAIN,
        {"check": "equal", "field": "angle_used", "value": "Signal"},
        lambda: answered({"angle_used": "Signal"}),
        lambda: answered({"angle_used": "Pain"}),
    ),
    "not_equal": (
        PLAIN,
        {"check": "not_equal", "field": "crm_updates.deal_stage", "value": "closed_won"},
        lambda: answered({"crm_updates": {"deal_stage": None}}),
        lambda: answered({"crm_updates": {"deal_stage": "closed_won"}}),
    ),
    "signal_referenced": (
        PLAIN,
        {"check": "signal_referenced", "one_of": [SIGNALS[0]["detail"]]},
        lambda: answered({"signal_referenced": SIGNALS[0]["detail"]}),
        lambda: answered({"signal_referenced": SIGNALS[1]["detail"]}),
    ),
    "max_sentences": (
        PLAIN,
        {"check": "max_sentences", "field": "executive_summary", "max": 2},
        lambda: answered({"executive_summary": "One. Two."}),
        lambda: answered({"executive_summary": "One. Two. Three."}),
    ),
    "chunks": (
        PLAIN,
        {"check": "chunks", "min": 2},
        lambda: answered({}, chunks=3),
        lambda: answered({}, chunks=1),
    ),
    "numbers_grounded": (
        PLAIN,
        {"check": "numbers_grounded"},
        lambda: Outcome(output={"body": "Save $3.1M in year 1."}, seen={"3.1", "3100000"}),
        lambda: Outcome(output={"body": "Save $4.2M."}, seen={"3.1", "3100000"}),
    ),
    "sections": (
        PLAIN,
        {"check": "sections", "keywords": ["kickoff", "pilot"]},
        lambda: answered(KIT),
        lambda: answered({**KIT, "sections": KIT["sections"][:1]}),
    ),
    "word_limit": (
        PLAIN,
        {"check": "word_limit", "max": 40},
        lambda: answered(BRIEF),
        lambda: answered({**BRIEF, "pipeline": "word " * 40}),
    ),
    "numbers_match": (
        PLAIN,
        {"check": "numbers_match"},
        lambda: answered(BRIEF, snapshot=SNAPSHOT),
        lambda: answered({**BRIEF, "queue": "14 items awaiting approval."}, snapshot=SNAPSHOT),
    ),
    "numbers_present": (
        PLAIN,
        {"check": "numbers_present", "keys": ["approval_queue_count"]},
        lambda: answered(BRIEF, snapshot=SNAPSHOT),
        lambda: answered(BRIEF, snapshot={**SNAPSHOT, "approval_queue_count": 7}),
    ),
    "tool": (
        PLAIN,
        {"check": "tool", "name": "list_approvals"},
        lambda: tools(("list_approvals", {})),
        lambda: tools(("pipeline_snapshot", {}), ("list_approvals", {})),
    ),
    "tool_args": (
        PLAIN,
        {"check": "tool_args", "subset": {"angle": "Signal", "contact_external_ids": ["P-1"]}},
        lambda: tools(
            ("launch_campaign", {"angle": "signal", "tier": "T1", "contact_external_ids": ["P-1"]})
        ),
        lambda: tools(("launch_campaign", {"angle": "Pain", "contact_external_ids": ["P-1"]})),
    ),
    "tool_args_valid": (
        PLAIN,
        {"check": "tool_args_valid"},
        lambda: tools(("launch_campaign", {"angle": "Signal", "tier": "T1"})),
        lambda: tools(("launch_campaign", {"angle": "Signal", "tier": "T9"})),
    ),
    "not_tool": (
        PLAIN,
        {"check": "not_tool", "names": ["launch_campaign"]},
        lambda: tools(("list_approvals", {})),
        lambda: tools(("list_approvals", {}), ("launch_campaign", {})),
    ),
    "no_tool": (
        PLAIN,
        {"check": "no_tool"},
        lambda: answered({"answer": "Good morning."}),
        lambda: tools(("pipeline_snapshot", {})),
    ),
}


def test_every_check_is_in_the_table() -> None:
    assert set(TABLE) == set(checks.CHECKS)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_a_check_holds_for_an_answer_with_its_property_and_fails_for_one_without(name: str) -> None:
    subject, prop, good, bad = TABLE[name]
    held, why = checks.check(subject, good(), prop)
    assert held, why
    held, why = checks.check(subject, bad(), prop)
    assert not held and why


def test_an_error_fails_every_property_with_its_summary_and_a_wrong_shape_fails_not_raises() -> (
    None
):
    failed = Outcome(status="error", error="OutputInvalid (output_invalid)")
    assert checks.check(PLAIN, failed, {"check": "no_tool"}) == (
        False,
        "no answer: OutputInvalid (output_invalid)",
    )
    wrong = answered({"signals": "not a list of signals"})
    held, why = checks.check(PLAIN, wrong, {"check": "signal_types", "include": ["hiring"]})
    assert not held and why.startswith("AttributeError")


def test_the_outcome_itself_is_checked_against_what_the_case_expects() -> None:
    expecting_missing = Case("X/2", "AGT-004", "t", "missing_data", {}, ())
    assert checks.outcome_holds(expecting_missing, Outcome(status="missing_data"))[0]
    held, why = checks.outcome_holds(expecting_missing, answered({"total_score": 40}))
    assert not held and why == "expected missing_data, got answer"


def test_numbers_are_read_with_separators_suffixes_and_percentages() -> None:
    assert numbers.forms("$300K, 3.1M and 14,200 at 12.5%") == [
        {"300", "300000"},
        {"3.1", "3100000"},
        {"14200"},
        {"12.5"},
    ]
    grounding = numbers.stated(["about $300K in the 2027 budget"])
    # 300,000 is the grounding's 300K; steps up to 10 are not facts; 450 is invented
    assert numbers.ungrounded("$300,000 in 2027, step 3, or 450 rooms", grounding) == ["450"]
    told = numbers.snapshot_numbers(SNAPSHOT)
    assert {"3", "4", "25", "0.25", "2", "1"} <= told  # totals, counts, the rate both ways


def test_no_expected_property_of_any_case_names_a_missing_check() -> None:
    names = {p["check"] for c in load().cases for p in c.expect}
    assert names <= set(checks.CHECKS) | {checks.JUDGED}
