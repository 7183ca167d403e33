"""What an approval card shows per kind (``colony.flows.approvals.approval_cards``, pure) and the
hub's record of announced approval items (``colony.chat.hub``, no connection needed)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from colony.chat.hub import RECENT_ITEMS, Hub
from colony.error_bodies import public_body
from colony.errors import AlreadyDecided
from colony.flows.approvals.approval_cards import detail
from colony.flows.approvals.approval_kinds import KINDS
from colony.flows.approvals.editable import EDITABLE

SIGNAL = "Opened a second ambulatory campus in Dayton"
DRAFT = {
    "subject": "Dayton campus space",
    "body": f"Hi Dana,\n\n{SIGNAL}. Is space planning on your list?\n\nBest,\nMarcus",
    "angle_used": "Signal",
    "signal_referenced": SIGNAL,
    "tier": "T1",
    "to": "dana@example.org",
    "sequence_step": 1,
}


def row(kind: str, payload: dict[str, object], **joined: object) -> dict[str, object]:
    return {"id": "i1", "kind": kind, "payload": payload, **joined}


def test_a_draft_shows_prospect_signals_and_checks_and_names_what_it_lacks() -> None:
    shown = detail(
        row(
            "outbound_message",
            DRAFT,
            contact_name="Dana Whitfield",
            contact_title="VP",
            contact_company="Mercy Ridge Health",
            contact_signals=[{"detail": SIGNAL}, {"type": "x"}],
        ),
        ["FacilityIQ"],
    )
    assert shown["prospect"] == {
        "name": "Dana Whitfield",
        "title": "VP",
        "company": "Mercy Ridge Health",
    }
    # a contact never enriched: its own list, with no provenance to show
    assert shown["signals"] == [
        {"detail": SIGNAL, "quote": None, "source": None, "confidence": None, "observed_on": None}
    ]
    assert shown["signal_used"] == SIGNAL
    assert (shown["tier"], shown["angle"], shown["editable"]) == (
        "T1",
        "Signal",
        ["body", "subject"],
    )
    assert shown["checks"] == [
        {"rule": "CONST-006 shape, one signal, no competitor", "ok": True, "problems": []}
    ]
    assert shown["missing"] == ["exemplars"]  # a draft queued before they were recorded


def test_a_drafts_signals_are_the_stored_ones_with_their_provenance() -> None:
    stored = {
        "type": "expansion",
        "detail": SIGNAL,
        "quote": "We opened our second ambulatory campus in Dayton this fall.",
        "source": "signals[0]",
        "confidence": 0.9,
        "observed_on": "2026-10-01",
    }
    shown = detail(
        row(
            "outbound_message",
            DRAFT,
            contact_signals=[{"detail": "an older note the contact row holds"}],
            stored_signals=[stored],
        ),
        [],
    )
    assert shown["signals"] == [{k: v for k, v in stored.items() if k != "type"}]
    assert shown["checks"][0]["ok"] is True  # checked against the stored signals


def test_checks_are_run_now_and_report_their_problems() -> None:
    bad = {**DRAFT, "body": DRAFT["body"].replace("Is space", "Unlike FacilityIQ, is space")}
    shown = detail(
        row("outbound_message", bad, contact_signals=[{"detail": SIGNAL}]), ["FacilityIQ"]
    )
    [check] = shown["checks"]
    assert not check["ok"] and "names competitor 'FacilityIQ'" in "; ".join(check["problems"])
    assert "prospect" in shown["missing"]


def test_a_deal_update_is_a_diff_against_the_deal_as_it_stands() -> None:
    payload = {"deal_id": "d1", "changes": {"stage": "negotiation", "value": 90000}}
    shown = detail(
        row(
            "deal_update",
            payload,
            deal_name="Granite Peak",
            deal_stage="demo",
            deal_value=Decimal("75000.00"),
        ),
        [],
    )
    assert shown["deal"] == {"id": "d1", "name": "Granite Peak"}
    assert shown["diff"] == [
        {"field": "stage", "from": "demo", "to": "negotiation"},
        {"field": "value", "from": "75000.00", "to": 90000},
    ]
    gone = detail(row("deal_update", payload), [])
    assert "deal" in gone["missing"] and gone["diff"][0]["from"] is None


def test_kc_candidates_and_kits() -> None:
    kc = detail(
        row("kc_update_candidate", {"domain": "KC-04", "content": "Text", "confidence": 0.8}), []
    )
    assert (kc["domain"], kc["content"], kc["editable"], kc["missing"]) == (
        "KC-04",
        "Text",
        ["content"],
        [],
    )
    kit = detail(row("deployment_kit", {"title": "Kit"}), [])
    assert kit["editable"] == [] and kit["missing"] == []


def test_a_lost_race_names_who_decided_and_when() -> None:
    at = datetime(2026, 12, 2, 7, 12, tzinfo=UTC)
    body = public_body(AlreadyDecided("i1", "rejected", "user_other", at))
    assert body["error"]["code"] == "conflict"
    assert body["error"]["decided"] == {
        "status": "rejected",
        "decided_by": "user_other",
        "decided_at": "2026-12-02T07:12:00+00:00",
    }
    assert "rejected by user_other at 2026-12-02T07:12:00+00:00" in body["error"]["message"]


def test_the_hub_keeps_each_orgs_announced_items_and_says_when_some_were_dropped() -> None:
    hub = Hub(lambda: None)
    hub.announce_item("org_a", "i1")
    hub.announce_item("org_b", "j1")
    hub.announce_item("org_a", "i2")
    hub.announce_item("org_a", "i1")
    assert hub.items_after("org_a", 0) == (["i1", "i2"], 4, True)
    assert hub.items_after("org_a", 3) == (["i1"], 4, True)
    assert hub.items_after("org_b", 0) == (["j1"], 2, True)
    assert hub.wait_items("org_a", 3, 0.01) and not hub.wait_items("org_a", 4, 0.01)
    for n in range(RECENT_ITEMS):
        hub.announce_item("org_a", f"k{n}")
    # the three oldest (numbers 1, 3 and 4) were dropped: a stream at 3 missed one of them
    assert not hub.items_after("org_a", 3)[2]
    ids, latest, complete = hub.items_after("org_a", 4)
    assert complete and latest == hub.approvals_seq("org_a") and len(ids) == RECENT_ITEMS


def test_a_card_offers_to_edit_what_a_decision_lets_a_person_edit() -> None:
    """The cards read what may be edited from ``editable`` and decisions enforce it through
    ``approval_kinds``: one table, every kind a decision knows."""
    assert set(EDITABLE) == set(KINDS)
    for kind, spec in KINDS.items():
        assert spec.editable == EDITABLE[kind]
        shown = detail({"kind": kind, "payload": {}}, [])["editable"]
        assert shown == sorted(spec.editable)
    assert KINDS["outbound_message"].check is not None and not KINDS["missing_data"].approvable
