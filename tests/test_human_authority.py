"""Only people decide, and every decision is on the record (issue 14, items 1 and 3).

Real PostgreSQL throughout; the approval and chat functions run as real functions-framework
servers over HTTP. The audit log's grants are checked from outside the repository layer, on
a raw connection as the application role."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pg8000.dbapi
import pytest

from colony.errors import Forbidden, ValidationFailed
from colony.flows.approvals import approval, approval_queue
from colony.flows.approvals.approval_kinds import HELD_TOOLS, edit
from colony.flows.chat import create_session, tools
from colony.flows.pipeline import deals
from colony.local.functions import FunctionServers
from colony.local.tokens import mint_local_token
from colony.runtime.auth import sign_approval_token
from colony.runtime.deps import Deps
from colony.store import chat_events, connect_factory, fetch_all, fetch_one
from tests.conftest import APP_ROLE, PgDB
from tests.test_content_onboarding import deal_id, make_deps

ORG = "org_zoomprop_demo"
KEY = "k" * 48
PERSON = approval.Actor("user_founder", "ui")


def add_item(deps: Deps, kind: str, payload: dict[str, Any]) -> str:
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "INSERT INTO approval_items (org_id, kind, source_agent, payload)"
            " VALUES (%s, %s, 'AGT-006', %s::jsonb) RETURNING id",
            (ORG, kind, json.dumps(payload)),
        )
    return str(row["id"])


def status(deps: Deps, item_id: str) -> str:
    with deps.db.transaction(ORG) as cur:
        return fetch_one(cur, "SELECT status FROM approval_items WHERE id = %s", (item_id,))[
            "status"
        ]


def trail(deps: Deps, item_id: str | None = None) -> list[dict[str, Any]]:
    return list(reversed(approval_queue.audit_trail(deps, ORG, item_id=item_id, limit=200)))


LAUNCH = {
    "session_id": "sess-x",
    "turn_id": "turn-x",
    "call_id": "call-x",
    "tool": "launch_campaign",
    "arguments": {"angle": "Signal", "tier": "T1", "contact_external_ids": ["P-001"]},
    "message": "launch it",
    "requested_by": "user_founder",
}


# ─── the record ──────────────────────────────────────────────────────────────────────────


def test_a_decision_records_actor_channel_reason_diff_and_its_effect(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    deal = deal_id(deps, "D-005")
    item = deals.propose_deal_update(deps, ORG, deal, {"next_action": "Send the proposal"})
    result = approval.decide(
        deps,
        ORG,
        item,
        "edit",
        actor=PERSON,
        edited={"changes": {"next_action": "Call the CFO first"}},
        reason="the CFO signs",
    )
    assert result == {"id": item, "status": "applied", "changed": True}
    decision, effect = trail(deps, item)
    assert decision["event"] == "decision" and decision["action"] == "edit"
    assert (decision["actor"], decision["channel"]) == ("user_founder", "ui")
    assert decision["reason"] == "the CFO signs" and decision["item_kind"] == "deal_update"
    assert decision["detail"]["diff"] == {
        "changes": {
            "from": {"next_action": "Send the proposal"},
            "to": {"next_action": "Call the CFO first"},
        }
    }
    assert datetime.fromisoformat(decision["at"]) <= datetime.now(UTC)
    assert (effect["event"], effect["action"], effect["actor"]) == (
        "effect",
        "deal_changed",
        "user_founder",
    )
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "SELECT next_action, decided_by FROM deals d JOIN approval_items a"
            " ON a.subject_id = d.id WHERE a.id = %s",
            (item,),
        )
    assert row == {"next_action": "Call the CFO first", "decided_by": "user_founder"}
    # the same decision again changes nothing and adds nothing to the record
    again = approval.decide(deps, ORG, item, "approve", actor=PERSON)
    assert again == {"id": item, "status": "applied", "changed": False}
    assert [e["event"] for e in trail(deps, item)] == ["decision", "effect"]


def test_an_edit_changes_only_what_its_kind_declares_editable(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    held = add_item(deps, "tool_action", LAUNCH)
    kc = add_item(
        deps, "kc_update_candidate", {"domain": "KC-09", "content": "x" * 30, "confidence": 0.9}
    )
    refused = [
        (held, {"tool": "list_approvals"}, "tool of a tool_action cannot be edited"),
        (held, {"session_id": "another"}, "session_id of a tool_action cannot be edited"),
        (
            held,
            {"arguments": {**LAUNCH["arguments"], "contact_external_ids": ["P-009"]}},
            "contact_external_ids of launch_campaign cannot be edited",
        ),
        (held, {"arguments": {**LAUNCH["arguments"], "tier": "T9"}}, "invalid arguments"),
        (kc, {"domain": "KC-01"}, "domain of a kc_update_candidate cannot be edited"),
        (kc, {"content": ""}, "the edited item is invalid"),
    ]
    for item, fields, message in refused:
        with pytest.raises(ValidationFailed, match=message):
            approval.decide(deps, ORG, item, "edit", actor=PERSON, edited=fields)
    assert status(deps, held) == status(deps, kc) == "pending"
    refusals = trail(deps)
    assert [r["event"] for r in refusals] == ["refusal"] * len(refused)
    assert {r["detail"]["code"] for r in refusals} == {
        "validation_failed",
        "invalid_tool_arguments",
    }
    # what may change does, with its diff; a deployment kit cannot be edited at all
    after, diff = edit("tool_action", LAUNCH, {"arguments": {**LAUNCH["arguments"], "tier": "T2"}})
    assert after["tool"] == "launch_campaign" and after["arguments"]["tier"] == "T2"
    assert diff["arguments"]["to"]["tier"] == "T2"
    with pytest.raises(ValidationFailed, match="cannot be edited; reject it"):
        edit("deployment_kit", {"title": "Kit"}, {"title": "Mine"})


def test_a_held_tool_is_edited_against_the_arguments_it_runs_with() -> None:
    """The approvals keep the held tools' edit rules (``HELD_TOOLS``) so they import nothing
    from the chat: each held tool is a chat tool, gated, and validated by the same model."""
    assert tools.TOOLS["launch_campaign"].gated
    assert not tools.TOOLS["pipeline_snapshot"].gated
    for name, held in HELD_TOOLS.items():
        assert tools.TOOLS[name].gated and tools.TOOLS[name].args is held.args
        assert set(held.editable) <= set(held.args.model_fields), name


def test_applying_a_decision_cannot_decide_another_item(
    testdb: PgDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A continuation (a resumed chat turn, say) runs inside the applier: here an applier
    that tries to approve a second item stands in for a model told to do so."""
    deps = make_deps(testdb)
    first = deals.propose_deal_update(deps, ORG, deal_id(deps, "D-005"), {"next_action": "A"})
    second = deals.propose_deal_update(deps, ORG, deal_id(deps, "D-004"), {"next_action": "B"})

    def hostile(deps_: Any, cur: Any, org_id: str, item_id: str, payload: Any) -> None:
        approval.decide(deps_, org_id, second, "approve", actor=PERSON)

    deps = dataclasses.replace(deps, applier_table=lambda kind: hostile)
    with pytest.raises(Forbidden, match="cannot decide another item"):
        approval.decide(deps, ORG, first, "approve", actor=PERSON)
    assert status(deps, first) == status(deps, second) == "pending"
    assert [e["event"] for e in trail(deps, first)] == ["refusal"]
    assert trail(deps, second) == []


def test_the_audit_log_is_append_only_for_the_application_role(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    item = deals.propose_deal_update(deps, ORG, deal_id(deps, "D-005"), {"next_action": "A"})
    approval.decide(deps, ORG, item, "approve", actor=PERSON)
    conn = connect_factory(testdb.settings, "app")()  # a raw connection as the application role
    try:
        cur = conn.cursor()
        cur.execute("SELECT set_config('app.org_id', %s, false)", (ORG,))
        cur.execute("SELECT count(*) FROM audit_log")
        assert cur.fetchone()[0] == 2
        for statement in (
            "UPDATE audit_log SET actor = 'someone else'",
            "DELETE FROM audit_log",
            "TRUNCATE audit_log",
            # the owner's erasure functions refuse unless an erasure job is open for the org,
            # and the job that would open that door cannot be deleted afterwards
            f"SELECT colony_erase_audit('{ORG}')",
            f"SELECT colony_redact_audit('{ORG}', ARRAY['user_founder'], 'x')",
            "DELETE FROM erasure_jobs",
        ):
            with pytest.raises(pg8000.dbapi.DatabaseError) as denied:
                cur.execute(statement)
            assert denied.value.args[0]["C"] == "42501", statement  # insufficient_privilege
            conn.rollback()
            cur.execute("SELECT set_config('app.org_id', %s, false)", (ORG,))
        # another org's scope sees none of it, and cannot write into this org's log
        cur.execute("SELECT set_config('app.org_id', 'org_other', false)")
        cur.execute("SELECT count(*) FROM audit_log")
        assert cur.fetchone()[0] == 0
        with pytest.raises(pg8000.dbapi.DatabaseError):
            cur.execute(
                "INSERT INTO audit_log (org_id, event, actor, channel, action)"
                " VALUES (%s, 'decision', 'x', 'ui', 'approve')",
                (ORG,),
            )
        conn.rollback()
    finally:
        conn.close()
    assert [e["actor"] for e in trail(deps, item)] == ["user_founder", "user_founder"]


# ─── links and chat proposals, over HTTP ─────────────────────────────────────────────────


def test_links_and_chat_proposals_need_the_person(testdb: PgDB, tmp_path: Path) -> None:
    deps = make_deps(testdb)
    items = [
        deals.propose_deal_update(deps, ORG, deal_id(deps, d), {"next_action": f"step {d}"})
        for d in ("D-001", "D-002", "D-003", "D-004")
    ]
    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_TRANSPORT": "local",
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_APPROVAL_TOKEN_KEY": KEY,
    }
    now = datetime.now(UTC)

    def link(item: str, *, to: str = "user_founder", org: str = ORG, ttl: int = 3600) -> str:
        expires = now + timedelta(seconds=ttl)
        return sign_approval_token(KEY, org, item, "approve", expires, recipient=to)

    def bearer(user: str, org: str = ORG) -> dict[str, str]:
        return {"Authorization": f"Bearer {mint_local_token(tmp_path, org, user)}"}

    founder, colleague = bearer("user_founder"), bearer("user_colleague")
    names = ["approval", "chat"]
    with FunctionServers(env, names, log_dir=tmp_path) as servers, httpx.Client(timeout=60) as http:
        url = servers.urls["approval"]

        def post(body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
            return http.post(url, json=body, headers=headers or {})

        good = link(items[0])
        refused = {
            "no sign-in": (post({"token": good}), 401),
            "another person": (post({"token": good}, colleague), 403),
            "another org's session": (post({"token": good}, bearer("user_founder", "org_b")), 403),
            "expired": (post({"token": link(items[0], ttl=-1)}, founder), 401),
            "forged": (post({"token": good[:-3] + "abc"}, founder), 401),
            "for another item": (post({"token": good, "item_id": items[1]}, founder), 401),
        }
        for case, (reply, code) in refused.items():
            assert reply.status_code == code, (case, reply.text)
            assert reply.json()["error"]["code"] in ("unauthorized", "forbidden"), case
        assert status(deps, items[0]) == "pending"

        used = post({"token": good, "reason": "looks right"}, founder)
        assert used.status_code == 200 and used.json()["status"] == "applied", used.text
        reused = post({"token": good}, founder)
        assert reused.status_code == 409 and "already used" in reused.json()["error"]["message"]

        # the chat proposes; only the person's confirmation on the card decides
        session = create_session(deps, ORG, "user_founder")
        ctx = tools.ToolContext(deps, ORG, "user_founder", session, "call-p1")
        args = tools.parse_args(
            "propose_decision", {"item_id": items[1], "action": "approve", "reason": "fits"}
        )[1]
        outcome = tools.run(tools.TOOLS["propose_decision"], ctx, args)
        assert outcome["ok"] and outcome["result"]["decided"] is False
        with deps.db.transaction(ORG) as cur:
            data = {"call_id": "call-p1", "name": "propose_decision", **outcome}
            chat_events.append(cur, ORG, session, "turn-p", [("tool_result", data)])
        assert status(deps, items[1]) == "pending"
        approvals_url = f"{servers.urls['chat']}/approvals"
        proposal = {"session_id": session, "call_id": "call-p1"}
        wrong = http.post(
            approvals_url,
            json={"item_id": items[1], "action": "reject", "proposal": proposal},
            headers=founder,
        )
        assert wrong.status_code == 400 and status(deps, items[1]) == "pending"
        confirmed = http.post(
            approvals_url,
            json={"item_id": items[1], "action": "approve", "proposal": proposal},
            headers=founder,
        )
        assert confirmed.status_code == 200 and confirmed.json()["status"] == "applied"
        on_card = http.post(
            approvals_url, json={"item_id": items[2], "action": "reject"}, headers=colleague
        )
        assert on_card.status_code == 200 and on_card.json()["status"] == "rejected"

        audit = http.get(f"{servers.urls['chat']}/audit", headers=founder)
        assert audit.status_code == 200
        other = http.get(f"{servers.urls['chat']}/audit", headers=bearer("u", "org_b"))
        assert other.json() == {"entries": []}
        assert http.get(f"{servers.urls['chat']}/audit?limit=0", headers=founder).status_code == 400

    entries = list(reversed(audit.json()["entries"]))
    decisions = [
        (e["approval_item_id"], e["actor"], e["channel"], e["action"])
        for e in entries
        if e["event"] == "decision"
    ]
    assert decisions == [
        (items[0], "user_founder", "link", "approve"),
        (items[1], "user_founder", "chat-confirmed", "approve"),
        (items[2], "user_colleague", "ui", "reject"),
    ]
    refusals = [(e["actor"], e["detail"]["code"]) for e in entries if e["event"] == "refusal"]
    assert ("user_colleague", "forbidden") in refusals  # the link sent to someone else
    assert ("user_founder", "conflict") in refusals  # the link used twice
    assert status(deps, items[3]) == "pending"  # nothing decided what no person decided
    with deps.db.transaction(ORG) as cur:
        effects = fetch_all(cur, "SELECT action FROM audit_log WHERE event = 'effect'")
    assert sorted(e["action"] for e in effects) == ["deal_changed", "deal_changed"]
