"""Routing and escalation (issue 35 item 2), on the real PostgreSQL: an item goes to its
owner's queue as it is added (a message about a prospect to the prospect's owner, a deal
update to the deal's owner, KC candidates to the admins, a chat's tool action to whoever
asked); each person's own waiting items are counted (``routing.waiting_for``); the chat
function's queue (its real ``main.py``) says whose each card is and filters "mine"; anyone
with the role can still decide, and the audit says whose it was; a reassigned prospect's
items follow it; items left undecided past the org's window escalate to its backup through
the schedule's fan-out and the data-lifecycle task, once, audited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from colony.flows.approvals import escalation
from colony.flows.tenants import owners
from colony.runtime.deps import set_deps_for_tests
from colony.store.approvals import approvals, routing
from colony.store.tenants import members
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import org_settings, registered_app, session_token
from tests.conftest import PgDB

ALPHA, BETA = "org_alpha", "org_beta"


@dataclass
class World:
    db: PgDB
    deps: Any
    data_dir: Path
    monkeypatch: pytest.MonkeyPatch
    ids: dict[str, str]

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return self.db.owner_rows(sql)

    def owner_sql(self, sql: str) -> None:
        conn = self.db.owner_connection()
        conn.cursor().execute(sql)
        conn.commit()
        conn.close()


@pytest.fixture
def world(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[World]:
    settings = org_settings(testdb, tmp_path, ALPHA, BETA)
    deps = local_deps(settings, testdb.app(), InlineTransport())
    ids: dict[str, str] = {}
    with deps.db.transaction(ALPHA) as cur:
        members.join(cur, ALPHA, "user_ana", "org:admin", "ana@alpha.example", "Ana")
        members.join(cur, ALPHA, "user_ben", "org:member", "ben@alpha.example", "Ben")
        members.join(cur, ALPHA, "user_cy", "org:member", "cy@alpha.example", "Cy")
        cur.execute(
            "INSERT INTO contacts (org_id, id, name, company, owner_id) VALUES"
            " (%s, 'c_ben', 'Dana', 'Acme', 'user_ben'), (%s, 'c_none', 'Eve', 'Beta', NULL)",
            (ALPHA, ALPHA),
        )
        cur.execute(
            "INSERT INTO deals (org_id, id, name, stage, contact_id, owner_id)"
            " VALUES (%s, 'd_cy', 'Acme renewal', 'proposal', 'c_ben', 'user_cy')",
            (ALPHA,),
        )
        add = approvals.add
        ids["message"] = add(
            cur, ALPHA, "outbound_message", "AGT-005", {"contact_id": "c_ben", "subject": "Hi"}
        )
        ids["unowned"] = add(
            cur, ALPHA, "outbound_message", "AGT-005", {"contact_id": "c_none", "subject": "Yo"}
        )
        ids["update"] = add(
            cur, ALPHA, "deal_update", "AGT-009", {"deal_id": "d_cy", "changes": {"stage": "won"}}
        )
        ids["kc"] = add(cur, ALPHA, "kc_update_candidate", "AGT-006", {"title": "New objection"})
        ids["tool"] = add(
            cur, ALPHA, "tool_action", "AGT-001", {"tool": "x", "requested_by": "user_cy"}
        )
    with deps.db.transaction(BETA) as cur:
        members.join(cur, BETA, "user_zed", "org:admin", "zed@beta.example", "Zed")
        ids["beta"] = approvals.add(cur, BETA, "kc_update_candidate", "AGT-006", {"title": "B"})
    set_deps_for_tests(deps)
    yield World(testdb, deps, tmp_path, monkeypatch, ids)
    set_deps_for_tests(None)


def test_items_are_routed_as_they_are_added_and_each_persons_queue_is_counted(
    world: World,
) -> None:
    queue = {
        r["id"]: (r["assignee"], r["assignee_role"])
        for r in world.rows(
            "SELECT id, assignee, assignee_role FROM approval_items WHERE org_id = 'org_alpha'"
        )
    }
    ids = world.ids
    assert queue == {
        ids["message"]: ("user_ben", None),  # the prospect's owner
        ids["unowned"]: (None, None),  # no owner: the team's
        ids["update"]: ("user_cy", None),  # the deal's owner, not its prospect's
        ids["kc"]: (None, "admin"),
        ids["tool"]: ("user_cy", None),  # whoever asked
    }
    with world.deps.db.transaction(ALPHA) as cur:
        counts = {u: routing.waiting_for(cur, u) for u in ("user_ana", "user_ben", "user_cy")}
        assert routing.waiting_for(cur, "user_zed") == 0  # another org's person: nothing here
    assert counts == {"user_ana": 1, "user_ben": 1, "user_cy": 2}  # Ana: the admins' KC item
    with world.deps.db.transaction(BETA) as cur:
        assert routing.waiting_for(cur, "user_zed") == 1
        assert routing.waiting_for(cur, "user_ana") == 0
    # a person who left is routed nothing: their prospect's new item is the team's
    with world.deps.db.transaction(ALPHA) as cur:
        members.leave(cur, "user_ben")
        late = approvals.add(cur, ALPHA, "follow_up", "AGT-007", {"contact_id": "c_ben"})
    assert world.rows(f"SELECT assignee FROM approval_items WHERE id = '{late}'") == [
        {"assignee": None}
    ]


def test_the_chat_queue_says_whose_each_card_is_and_filters_mine(world: World) -> None:
    chat = registered_app("chat", world.monkeypatch)

    def get(user: str, org: str = ALPHA, query: str = "") -> Any:
        token = session_token(world.data_dir, org, user, "org:member")
        answer = chat.get("/approvals" + query, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.get_json()
        return answer.get_json()

    everyone = get("user_ben")
    assert everyone["pending_total"] == 5 and everyone["pending_mine"] == 1
    cards = {c["id"]: c["queue"] for c in everyone["items"]}
    assert cards[world.ids["message"]] == {
        "assignee": "user_ben",
        "assignee_name": "Ben",
        "role": None,
        "escalated_from": None,
        "mine": True,
    }
    assert cards[world.ids["kc"]]["role"] == "admin" and not cards[world.ids["kc"]]["mine"]
    mine = get("user_ben", query="?mine=1")
    assert [c["id"] for c in mine["items"]] == [world.ids["message"]]
    admins = get("user_ana", query="?mine=1")  # an admin's own: the admins' items
    assert [c["id"] for c in admins["items"]] == [world.ids["kc"]]
    # another org's person sees their own org's queue only
    beta = get("user_zed", BETA, "?mine=1")
    assert [c["id"] for c in beta["items"]] == [world.ids["beta"]]
    bad = chat.get(
        "/approvals?mine=yes",
        headers={"Authorization": f"Bearer {session_token(world.data_dir, ALPHA, 'user_ben')}"},
    )
    assert bad.status_code == 400 and "mine" in bad.get_json()["error"]["message"]
    # anyone with the role may still take Ben's item; the audit says whose it was
    token = session_token(world.data_dir, ALPHA, "user_cy", "org:member")
    decided = chat.post(
        "/approvals",
        json={"item_id": world.ids["message"], "action": "reject", "reason": "not now"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert decided.status_code == 200, decided.get_json()
    (entry,) = world.rows("SELECT actor, detail FROM audit_log WHERE event = 'decision'")
    assert entry == {
        "actor": "user_cy",
        "detail": {"queue": {"assignee": "user_ben", "role": None}},
    }


def test_the_chats_list_approvals_tool_filters_the_askers_own(world: World) -> None:
    """AGT-001's ``list_approvals`` with ``mine``: the asker's own items, each card saying
    whose it is."""
    from colony.contracts.chat import ListApprovalsArgs
    from colony.flows.chat import tools

    ctx = tools.ToolContext(world.deps, ALPHA, "user_cy", "session-1", "call-1")
    listed = tools.run(tools.TOOLS["list_approvals"], ctx, ListApprovalsArgs(mine=True))
    assert listed["ok"], listed
    result = listed["result"]
    assert result["pending_total"] == 5 and result["pending_mine"] == 2
    assert sorted(c["id"] for c in result["items"]) == sorted(
        [world.ids["update"], world.ids["tool"]]
    )
    assert all(c["queue"]["mine"] and c["queue"]["assignee"] == "user_cy" for c in result["items"])
    everyone = tools.run(tools.TOOLS["list_approvals"], ctx, ListApprovalsArgs())
    assert len(everyone["result"]["items"]) == 5


def test_a_reassigned_prospects_items_follow_it(world: World) -> None:
    moved = owners.reassign(world.deps, ALPHA, "contact", "c_ben", "user_ana", "user_ana")
    assert moved["items"] == 1
    assert world.rows(
        f"SELECT assignee FROM approval_items WHERE id = '{world.ids['message']}'"
    ) == [{"assignee": "user_ana"}]
    # the deal keeps its own owner, and so its update
    assert world.rows(
        f"SELECT assignee FROM approval_items WHERE id = '{world.ids['update']}'"
    ) == [{"assignee": "user_cy"}]


def test_undecided_items_escalate_to_the_backup_once_through_the_schedule(world: World) -> None:
    from colony.contracts.lifecycle import ScheduleRun
    from colony.flows.tenants import schedules

    world.owner_sql(
        "INSERT INTO org_team (org_id, backup_user_id, escalate_after_hours)"
        " VALUES ('org_alpha', 'user_ana', 4)"
    )
    ids = world.ids
    # Ben's message and the unowned one have waited 5 hours; the rest only 1
    world.owner_sql(
        "UPDATE approval_items SET routed_at = now() - interval '5 hours'"
        f" WHERE id IN ('{ids['message']}', '{ids['unowned']}', '{ids['beta']}')"
    )
    world.owner_sql(
        "UPDATE approval_items SET routed_at = now() - interval '1 hour'"
        f" WHERE id NOT IN ('{ids['message']}', '{ids['unowned']}', '{ids['beta']}')"
    )
    fanned = schedules.run(
        world.deps, ScheduleRun(name="approval-escalation"), scheduled="2026-11-30T09:15:00Z"
    )
    assert fanned["enqueued"] == 1  # Beta names no backup: not served
    (task,) = world.deps.transport.tasks.values()
    assert json.loads(task.body) == {"task": {"kind": "approvals.escalate", "org_id": ALPHA}}
    lifecycle = registered_app("data-lifecycle", world.monkeypatch)
    answer = lifecycle.post("/", data=task.body, content_type="application/json")
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json() == {
        "status": "escalated",
        "to": "user_ana",
        "items": sorted([ids["message"], ids["unowned"]]),
    }
    rows = {
        r["id"]: r
        for r in world.rows(
            "SELECT id, assignee, escalated_from FROM approval_items WHERE escalated_at IS NOT NULL"
        )
    }
    assert {k: (v["assignee"], v["escalated_from"]) for k, v in rows.items()} == {
        ids["message"]: ("user_ana", "user_ben"),
        ids["unowned"]: ("user_ana", None),
    }
    audited = world.rows(
        "SELECT approval_item_id, actor, action, detail FROM audit_log"
        " WHERE action = 'escalate' ORDER BY approval_item_id"
    )
    assert [(a["approval_item_id"], a["detail"]["from"]) for a in audited] == sorted(
        [(ids["message"], "user_ben"), (ids["unowned"], None)]
    )
    # once: a second run moves nothing, and the org is no longer in the audience
    assert escalation.escalate(world.deps, ALPHA)["items"] == []
    world.deps.transport.tasks.clear()
    again = schedules.run(
        world.deps, ScheduleRun(name="approval-escalation"), scheduled="2026-11-30T09:30:00Z"
    )
    assert again["enqueued"] == 0
    # a backup who left escalates nothing, and says so
    with world.deps.db.transaction(ALPHA) as cur:
        members.leave(cur, "user_ana")
    assert escalation.escalate(world.deps, ALPHA)["status"] == "skipped"
