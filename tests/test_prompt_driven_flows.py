"""Flows against the prompt-driven offline model: a field the prompt loses changes the outcome.

The offline model reads only the rendered messages (``colony.adapters.offline.prompt``), so
a flow whose assembly request stops carrying a field the answer needs must fail its test.
Each test here removes one field from what the qualification flow puts in its prompt (the
contact's signals, the ICP rubric) and asserts on the flow's outcome, stored in the real
database: the contact's score and where its chain ended.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from colony.errors import ValidationFailed
from colony.flows.approvals import approval, approval_queue
from colony.flows.campaigns import campaign
from colony.flows.campaigns import message_generator as message_flow
from colony.flows.campaigns import qualification as qualification_flow
from colony.runtime.deps import Deps
from colony.store import fetch_one
from colony.testing.inline import run_until_idle
from tests.conftest import PgDB
from tests.test_campaign_flow import ORG, make_deps

# (the request's entities, its keyword options such as ``signals``) → changed in place
Change = Callable[[dict[str, Any], dict[str, Any]], None]


def _drop_contact_signals(entities: dict[str, Any], options: dict[str, Any]) -> None:
    options["signals"] = ()  # the assembler's signals section (the contact entity has none)
    assert "signals" not in entities["contact"]


def _drop_rubric(entities: dict[str, Any], options: dict[str, Any]) -> None:
    del entities["icp_rubric"]


def _qualify_one(
    deps: Deps,
    monkeypatch: pytest.MonkeyPatch,
    external_id: str,
    change: Change | None,
    flow: ModuleType = qualification_flow,
) -> dict[str, Any]:
    """Run a one-contact campaign with ``change`` applied to ``flow``'s prompt entities."""
    original = flow.assembly_request

    def altered(*args: Any, **kwargs: Any) -> Any:
        entities, options = dict(args[5]), dict(kwargs)
        if change is not None:
            change(entities, options)
        return original(*args[:5], entities, *args[6:], **options)

    monkeypatch.setattr(flow, "assembly_request", altered)
    with deps.db.transaction(ORG) as cur:
        contact = fetch_one(cur, "SELECT id FROM contacts WHERE external_id = %s", (external_id,))
    assert contact is not None
    campaign_id = campaign.create_campaign(
        deps, ORG, name="one", angle="Signal", tier="T1", contact_ids=[contact["id"]]
    )
    run_id = campaign.launch(deps, ORG, campaign_id)
    stats = run_until_idle(deps, deps.transport)
    assert not stats.dead_letters
    with deps.db.transaction(ORG) as cur:
        scored = fetch_one(
            cur,
            "SELECT icp_score, icp_recommendation FROM contacts WHERE id = %s",
            (contact["id"],),
        )
        done = fetch_one(
            cur,
            "SELECT output->>'outcome' AS outcome FROM run_steps"
            " WHERE run_id = %s AND output ? 'outcome'",
            (run_id,),
        )
    assert scored is not None and done is not None
    return {**scored, "outcome": done["outcome"], "rejected": [r for _, r in stats.rejected]}


def test_qualification_scores_what_its_prompt_carries(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    # P-018 (Seawick Surgery Centers), KC-02's worked example: 18 + 25 + 5 + 10 + 15 = 73, T2.
    deps = make_deps(testdb)
    whole = _qualify_one(deps, monkeypatch, "P-018", None)
    assert whole["icp_score"] == 73 and whole["icp_recommendation"] == "qualify"
    assert whole["outcome"] == "message_queued" and whole["rejected"] == []


def test_a_contact_entity_without_its_signals_changes_the_qualification(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same contact with its signals removed from the prompt: no signal
    # points (10) and no timing credit (15): 48 is T4, which holds, so the chain ends there.
    deps = make_deps(testdb)
    lost = _qualify_one(deps, monkeypatch, "P-018", _drop_contact_signals)
    assert lost == {
        "icp_score": 48,
        "icp_recommendation": "hold",
        "outcome": "not_qualified",
        "rejected": [],
    }


def test_a_prompt_without_the_icp_rubric_fails_the_contact_rather_than_guessing(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    deps = make_deps(testdb)
    lost = _qualify_one(deps, monkeypatch, "P-018", _drop_rubric)
    assert lost["icp_score"] is None and lost["icp_recommendation"] is None
    # A caller error: the contact's chain ends and its delivery is recorded as rejected.
    assert lost["outcome"] == "failed:validation_failed"
    assert lost["rejected"] == ["validation_failed"]


def test_an_outbound_prompt_without_the_contacts_signals_is_refused_not_drafted(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    # AGT-005 must reference one of the contact's signals (CONST-006). The flow checks the
    # stored contact has some before it calls the model; if its prompt lost them, the model
    # cannot draft one: it answers missing_data naming them (CONST-004), and the contact's
    # chain ends without a draft, its outcome saying what was missing.
    # (With its signals, test_qualification_scores_what_its_prompt_carries ends message_queued.)
    deps = make_deps(testdb)
    lost = _qualify_one(deps, monkeypatch, "P-018", _drop_contact_signals, message_flow)
    assert lost["icp_recommendation"] == "qualify"  # qualification saw the signals
    assert lost["outcome"] == "missing_data:contact.signals"
    assert lost["rejected"] == []  # the model's honest answer, not a caller's error

    # A person sees it: a pending missing_data item whose card names the contact and the
    # fields, which can be dismissed but never approved (there is nothing to send).
    queue = approval_queue.pending_cards(deps, ORG, kind="missing_data", detail=True)
    (card,) = queue["items"]
    assert card["kind"] == "missing_data" and card["source_agent"] == "AGT-005"
    detail = card["detail"]
    assert detail["missing_data"] == ["contact.signals"]
    assert detail["prospect"]["name"] == "Priscilla Vance"
    assert card["summary"] == detail["title"]
    assert (
        detail["title"] == "Message Generator (AGT-005) lacks contact.signals for Priscilla Vance"
    )
    assert card["campaign"]["name"] == "one" and detail["editable"] == []
    person = approval.Actor("user_founder", "ui")
    for action in ("approve", "edit"):
        edited = {"title": "send anyway"} if action == "edit" else None
        with pytest.raises(ValidationFailed, match="can only be dismissed"):
            approval.decide(deps, ORG, card["id"], action, actor=person, edited=edited)
    dismissed = approval.decide(deps, ORG, card["id"], "reject", actor=person)
    assert dismissed["status"] == "rejected"
    with deps.db.transaction(ORG) as cur:
        assert fetch_one(cur, "SELECT count(*) AS n FROM outbox")["n"] == 0
