"""An org's people from Clerk (issue 35 item 1), against the real PostgreSQL: the Clerk stand-in
makes each change and the ``organizationMembership.*`` event Clerk sends for it, signed as
Svix signs it; the real clerk-webhook ``main.py`` (functions-framework) applies it. A person
joins, changes role and leaves; a leaver's prospects, deals and waiting items go to the org's
named backup (or its admin), audited, nothing left with them; Clerk's order wins over
delivery order; replays change nothing; and the admin resync reads Clerk's Backend API over
HTTP (the stand-in) for an org whose people came before the webhook."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from colony.adapters.clerk_backend import clerk_backend_from_settings
from colony.errors import NotFound
from colony.flows.tenants import clerk_members
from colony.runtime.deps import set_deps_for_tests
from colony.store.approvals import approvals
from colony.testing.clerk_memberships import signed
from colony.testing.clerk_server import ClerkFrontendServer
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import org_settings, registered_app, session_token
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("fn:clerk-webhook")

SECRET = "whsec_" + base64.b64encode(b"clerk-members-signing-key-32byt!").decode()
ORG, OTHER = "org_2teamAlpha", "org_2teamBeta"


@dataclass
class Hook:
    db: PgDB
    clerk: ClerkFrontendServer
    api: Any
    deps: Any

    def deliver(self, event: dict[str, Any], msg_id: str | None = None) -> Any:
        body, headers = signed(event, SECRET, msg_id)
        answer = self.api.post("/", data=body, headers=headers)
        assert answer.status_code == 200, answer.get_json()
        return answer.get_json()

    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        conn = self.db.owner_connection()
        try:
            cur = conn.cursor()
            cur.execute(sql, params)
            names = [c[0] for c in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        finally:
            conn.close()

    def people(self, org: str = ORG) -> dict[str, tuple[str, str]]:
        rows = self.rows("SELECT user_id, role, status FROM org_members WHERE org_id = %s", org)
        return {r["user_id"]: (r["role"], r["status"]) for r in rows}


@pytest.fixture
def hook(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[Hook]:
    with ClerkFrontendServer() as clerk:
        settings = org_settings(
            testdb,
            tmp_path,
            COLONY_CLERK_WEBHOOK_SECRET=SECRET,
            COLONY_CLERK_SECRET_KEY=clerk.secret_key,
            COLONY_CLERK_API_URL=clerk.url,
        )
        # Clerk's times are real (the stand-in's clock), so ours is too: a resync happens now
        deps = local_deps(
            settings, testdb.app(), InlineTransport(), clock=lambda: datetime.now(UTC)
        )
        set_deps_for_tests(deps)
        try:
            api = registered_app("clerk-webhook", monkeypatch)
            yield Hook(testdb, clerk, api, deps)
        finally:
            set_deps_for_tests(None)


def _seed_owned(hook: Hook, owner: str) -> dict[str, str]:
    """A prospect and a deal owned by ``owner``, and an item about each waiting for them."""
    with hook.deps.db.transaction(ORG) as cur:
        cur.execute(
            "INSERT INTO contacts (org_id, name, company, owner_id) VALUES (%s, 'Dana', 'Acme',"
            " %s) RETURNING id",
            (ORG, owner),
        )
        contact = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO deals (org_id, name, stage, contact_id, owner_id)"
            " VALUES (%s, 'Acme renewal', 'proposal', %s, %s) RETURNING id",
            (ORG, contact, owner),
        )
        deal = cur.fetchone()[0]
        message = approvals.add(
            cur, ORG, "outbound_message", "AGT-005", {"contact_id": contact, "subject": "Hi"}
        )
        update = approvals.add(
            cur, ORG, "deal_update", "AGT-009", {"deal_id": deal, "changes": {"stage": "won"}}
        )
    return {"contact": contact, "deal": deal, "message": message, "update": update}


def test_people_join_change_role_and_leave_with_their_work_handed_to_the_backup(
    hook: Hook,
) -> None:
    clerk = hook.clerk.orgs
    assert hook.deliver(clerk.org(ORG, "Team Alpha"))["status"] == "applied"
    ana = hook.deliver(
        clerk.join(
            ORG,
            "user_ana",
            "org:admin",
            email="ana@alpha.example",
            first_name="Ana",
            last_name="Lind",
        )
    )
    assert ana == {
        "status": "applied",
        "event": "organizationMembership.created",
        "org_id": ORG,
        "user_id": "user_ana",
    }
    hook.deliver(clerk.join(ORG, "user_ben", email="ben@alpha.example"))
    hook.deliver(clerk.join(ORG, "user_cy", email="cy@alpha.example"))
    hook.deliver(clerk.change_role(ORG, "user_cy", "org:admin"))
    assert hook.people() == {
        "user_ana": ("org:admin", "active"),
        "user_ben": ("org:member", "active"),
        "user_cy": ("org:admin", "active"),
    }
    (ana_row,) = hook.rows("SELECT email, name FROM org_members WHERE user_id = 'user_ana'")
    assert ana_row == {"email": "ana@alpha.example", "name": "Ana Lind"}
    # the named backup is Cy (not the longest-standing admin, Ana)
    with hook.deps.db.transaction(ORG) as cur:
        cur.execute("INSERT INTO org_team (org_id, backup_user_id) VALUES (%s, 'user_cy')", (ORG,))
    owned = _seed_owned(hook, "user_ben")
    with hook.deps.db.transaction(ORG) as cur:
        routed = {r["id"]: r["assignee"] for r in approvals.pending(cur)}
    assert routed == {owned["message"]: "user_ben", owned["update"]: "user_ben"}

    left = hook.deliver(clerk.leave(ORG, "user_ben"))
    assert left["status"] == "applied" and left["handed_over"] == {
        "from": "user_ben",
        "to": "user_cy",
        "contacts": 1,
        "deals": 1,
        "items": 2,
    }
    assert hook.people()["user_ben"] == ("org:member", "left")
    assert hook.rows("SELECT count(*) AS n FROM contacts WHERE owner_id = 'user_ben'") == [{"n": 0}]
    assert hook.rows("SELECT owner_id FROM deals") == [{"owner_id": "user_cy"}]
    assert {r["assignee"] for r in hook.rows("SELECT assignee FROM approval_items")} == {"user_cy"}
    (entry,) = hook.rows(
        "SELECT event, actor, channel, action, detail FROM audit_log WHERE event = 'assignment'"
    )
    assert entry["action"] == "hand_over" and entry["channel"] == "system"
    assert entry["actor"].startswith("clerk:msg_")
    assert entry["detail"] == {
        "from": "user_ben",
        "to": "user_cy",
        "contacts": 1,
        "deals": 1,
        "items": 2,
    }


def test_a_leaver_without_a_backup_hands_to_an_admin_never_to_themselves(hook: Hook) -> None:
    clerk = hook.clerk.orgs
    hook.deliver(clerk.org(ORG, "Team Alpha"))
    hook.deliver(clerk.join(ORG, "user_ana", "org:admin"))
    hook.deliver(clerk.join(ORG, "user_ben"))
    _seed_owned(hook, "user_ana")
    # the only admin leaves: a member takes it, so nothing is left with someone gone
    assert hook.deliver(clerk.leave(ORG, "user_ana"))["handed_over"]["to"] == "user_ben"
    owned = _seed_owned(hook, "user_ben")
    assert hook.deliver(clerk.leave(ORG, "user_ben"))["handed_over"]["to"] is None
    # nobody is left: the team's, unassigned, still on the queue; never someone who left
    assert hook.rows("SELECT DISTINCT owner_id FROM contacts") == [{"owner_id": None}]
    items = hook.rows(
        "SELECT id, assignee, status FROM approval_items WHERE id = %s", owned["message"]
    )
    assert items == [{"id": owned["message"], "assignee": None, "status": "pending"}]


def test_clerks_order_wins_over_delivery_order_and_replays_change_nothing(hook: Hook) -> None:
    clerk = hook.clerk.orgs
    clerk.org(ORG, "Team Alpha")
    joined = clerk.join(ORG, "user_ana", "org:member")
    promoted = clerk.change_role(ORG, "user_ana", "org:admin")
    gone = clerk.leave(ORG, "user_ana")
    # Svix delivers the membership first (the org comes with it), then out of order
    assert hook.deliver(promoted, "msg_promoted")["status"] == "applied"
    assert hook.rows("SELECT name FROM organizations") == [{"name": "Team Alpha"}]
    assert hook.deliver(joined, "msg_joined")["status"] == "stale"
    assert hook.people() == {"user_ana": ("org:admin", "active")}
    assert hook.deliver(gone, "msg_gone")["status"] == "applied"
    assert hook.deliver(promoted, "msg_promoted")["status"] == "duplicate"
    assert hook.deliver(joined, "msg_joined_again")["status"] == "stale"
    assert hook.people() == {"user_ana": ("org:admin", "left")}
    # a deletion delivered before its creation keeps the person out
    late = clerk.join(ORG, "user_ben")
    early = clerk.leave(ORG, "user_ben")
    hook.deliver(early)
    hook.deliver(late)
    assert hook.people()["user_ben"] == ("org:member", "left")


def test_a_malformed_membership_is_refused_and_recorded(hook: Hook) -> None:
    event = hook.clerk.orgs.org(ORG, "Team Alpha")
    hook.deliver(event)
    bad = {
        "type": "organizationMembership.created",
        "object": "event",
        "data": {
            "organization": {"id": ORG},
            "public_user_data": {},
            "role": "org:member",
            "updated_at": 1,
        },
    }
    body, headers = signed(bad, SECRET, "msg_bad")
    answer = hook.api.post("/", data=body, headers=headers)
    assert answer.status_code == 400
    assert "public_user_data.user_id" in answer.get_json()["error"]["message"]
    assert hook.rows("SELECT 1 FROM org_members") == []
    (rejection,) = hook.rows("SELECT event_id, reason FROM rejected_deliveries")
    assert rejection["event_id"] == "msg_bad"


def test_a_time_zone_comes_from_clerks_org_metadata_and_a_bad_one_is_recorded(
    hook: Hook,
) -> None:
    clerk = hook.clerk.orgs
    answer = hook.deliver(clerk.org(ORG, "Team Alpha", time_zone="America/New_York"))
    assert answer["time_zone"] == "America/New_York"
    assert hook.rows("SELECT time_zone FROM org_team") == [{"time_zone": "America/New_York"}]
    renamed = hook.deliver(clerk.org(ORG, "Team Alpha Inc", time_zone="Mars/Olympus_Mons"))
    assert renamed["status"] == "applied" and "time_zone" not in renamed
    assert hook.rows("SELECT name FROM organizations") == [{"name": "Team Alpha Inc"}]
    assert hook.rows("SELECT time_zone FROM org_team") == [{"time_zone": "America/New_York"}]
    (rejection,) = hook.rows("SELECT claimed_org_id, reason FROM rejected_deliveries")
    assert rejection["claimed_org_id"] == ORG and "Mars/Olympus_Mons" in rejection["reason"]


def test_resync_reads_clerks_backend_api_and_hands_over_who_clerk_no_longer_lists(
    hook: Hook,
) -> None:
    """People who joined before the webhook existed: Clerk lists them (three pages' worth
    would be the same code; here 120 people, two pages of 100)."""
    clerk = hook.clerk.orgs
    hook.deliver(clerk.org(ORG, "Team Alpha"))
    hook.deliver(clerk.join(ORG, "user_gone", "org:member"))
    _seed_owned(hook, "user_gone")
    clerk.memberships.clear()  # removed in Clerk while the webhook was not set up
    clerk.join(ORG, "user_admin", "org:admin")
    for i in range(119):
        clerk.join(ORG, f"user_{i:03d}")
    d = hook.deps
    directory = clerk_backend_from_settings(d.settings)
    try:
        result = clerk_members.resync(d, directory, ORG, "user_admin")
    finally:
        directory.close()
    assert result == {"org_id": ORG, "listed": 120, "joined_or_changed": 120, "left": 1}
    people = hook.people()
    assert len([p for p in people.values() if p[1] == "active"]) == 120
    assert people["user_gone"] == ("org:member", "left")
    assert hook.rows("SELECT DISTINCT owner_id FROM contacts") == [{"owner_id": "user_admin"}]
    pages = [r for r in hook.clerk.requests if r.path.endswith("/memberships")]
    assert [r.query["offset"] for r in pages] == [["0"], ["100"]]
    # another org's id is Clerk's 404 here: nothing is read, nothing changes
    with pytest.raises(NotFound):
        list(clerk_backend_from_settings(d.settings).memberships(OTHER))
    assert json.dumps(result)  # plain JSON, as the admin route answers it


def test_an_admin_resyncs_through_the_admin_api_and_another_org_cannot(
    hook: Hook, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clerk = hook.clerk.orgs
    hook.deliver(clerk.org(ORG, "Team Alpha"))
    clerk.join(ORG, "user_admin", "org:admin")
    clerk.join(ORG, "user_new")
    admin = registered_app("admin", monkeypatch)
    data_dir = hook.deps.settings.data_dir

    def sync(org_of_token: str) -> Any:
        token = session_token(data_dir, org_of_token, "user_admin")
        return admin.post(f"/orgs/{ORG}/members/sync", headers={"Authorization": f"Bearer {token}"})

    stranger = sync(OTHER)
    assert stranger.status_code == 403 and hook.people() == {}
    answer = sync(ORG)
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["listed"] == 2
    assert set(hook.people()) == {"user_admin", "user_new"}


def test_clerk_delivers_over_http_to_the_running_function(testdb: PgDB, tmp_path: Path) -> None:
    """The real server (a functions-framework process): the stand-in's signed deliveries
    over HTTP make the org and its people; a forged one is a 401 that changes nothing."""
    from colony.local.functions import FunctionServers
    from colony.testing.clerk_memberships import ClerkOrgs, deliver
    from tests.conftest import APP_ROLE

    env = {
        "COLONY_DB_MODE": "dsn",
        "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
        "COLONY_EMBEDDING_DIM": str(testdb.dim),
        "COLONY_DATA_DIR": str(tmp_path),
        "COLONY_CLERK_WEBHOOK_SECRET": SECRET,
    }
    clerk = ClerkOrgs()
    with FunctionServers(env, ["clerk-webhook"], log_dir=tmp_path / "logs") as servers:
        url = servers.urls["clerk-webhook"]
        created = deliver(url, clerk.org(ORG, "Team Alpha", time_zone="Europe/Berlin"), SECRET)
        assert created.status_code == 200, created.text
        joined = deliver(url, clerk.join(ORG, "user_ana", "org:admin"), SECRET)
        assert joined.status_code == 200 and joined.json()["status"] == "applied"
        forged = deliver(url, clerk.join(ORG, "user_mallory", "org:admin"), "whsec_" + "A" * 44)
        assert forged.status_code == 401 and forged.json()["error"]["code"]
    people = testdb.owner_rows("SELECT user_id, role, status FROM org_members")
    assert people == [{"user_id": "user_ana", "role": "org:admin", "status": "active"}]
    assert testdb.owner_rows("SELECT time_zone FROM org_team") == [{"time_zone": "Europe/Berlin"}]
