"""The notification routes of the real chat function, from outside (functions-framework's
app over ``functions/chat/main.py``): a person's own settings as their bearer token, and
Slack's Approve / Reject clicks, signed by the Slack stand-in as Slack signs them, decided
through the same person-authorised path as /overview, as a mapped person, and refused (and
recorded) for an unmapped user, a bad or stale signature, and a user of another org's Slack
workspace who maps themselves to the same Slack id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from colony.flows.notifications import settings as notify
from colony.local.tokens import mint_local_token
from colony.runtime.deps import set_deps_for_tests
from colony.testing.slack_server import SIGNING_SECRET, SlackServer
from colony.testing.smtp_server import SmtpServer
from tests.apps import registered_app
from tests.conftest import PgDB
from tests.notify_world import ORG, OTHER, World, make_world


class Outside:
    def __init__(self, world: World, client: Any, data_dir: Path, pg: PgDB) -> None:
        self.world, self.client, self.data_dir, self.pg = world, client, data_dir, pg

    def call(self, method: str, path: str, org: str, user: str, body: Any = None) -> Any:
        token = mint_local_token(self.data_dir, org, user)
        return self.client.open(
            path, method=method, json=body, headers={"Authorization": f"Bearer {token}"}
        )

    def click(self, team: str, slack_user: str, action: str, value: str, **kw: Any) -> Any:
        kw.setdefault("at", self.world.clock().timestamp())  # Slack's clock is ours
        body, headers = self.world.slack_server.interaction(
            team_id=team, user_id=slack_user, action_id=action, value=value, **kw
        )
        return self.client.post("/slack/interactions", data=body, headers=dict(headers))

    def item(self, item_id: str) -> dict[str, Any]:
        return self.world.rows(
            "SELECT status, decided_by FROM approval_items WHERE id = %s", (item_id,)
        )[0]

    def audit(self) -> list[dict[str, Any]]:
        return self.world.rows(
            "SELECT event, actor, channel, action, reason FROM audit_log ORDER BY id"
        )


@pytest.fixture
def outside(
    testdb: PgDB,
    tmp_path: Path,
    smtp: SmtpServer,
    monkeypatch: pytest.MonkeyPatch,
    no_ambient_config: None,
) -> Iterator[Outside]:
    env = {"COLONY_DATA_DIR": str(tmp_path), "COLONY_SLACK_SIGNING_SECRET": SIGNING_SECRET}
    with SlackServer() as slack:
        world = make_world(testdb.app(), tmp_path, smtp, slack, **env)
        set_deps_for_tests(world.deps)
        try:
            yield Outside(world, registered_app("chat", monkeypatch), tmp_path, testdb)
        finally:
            set_deps_for_tests(None)


def test_a_person_sets_their_own_notifications(outside: Outside) -> None:
    put = outside.call(
        "PUT", "/notifications", ORG, "user_bob", {"channels": {"positive_reply": "slack"}}
    )
    assert put.status_code == 200, put.get_json()
    assert put.get_json()["channels"]["positive_reply"] == "slack"
    got = outside.call("GET", "/notifications", ORG, "user_bob").get_json()
    assert got["chosen"] == {"positive_reply": "slack"}
    alice = outside.call("GET", "/notifications", ORG, "user_alice").get_json()
    assert alice["chosen"] == {}  # bob changed only his own
    for bad in (
        {"channels": {"positive_reply": "pager"}},
        {"channels": {"gossip": "email"}},
        {"channels": {}},
        {"channels": {"brief": "email"}, "user_id": "user_alice"},  # no body names a person
    ):
        answer = outside.call("PUT", "/notifications", ORG, "user_bob", bad)
        assert answer.status_code == 400, bad
        assert answer.get_json()["error"]["code"] == "validation_failed"
    slack = outside.call(
        "PUT", "/notifications/slack", ORG, "user_bob", {"slack_user_id": "not-an-id"}
    )
    assert slack.status_code == 400
    # someone of another org sees and changes only their own org's person
    theirs = outside.call("GET", "/notifications", OTHER, "user_mallory").get_json()
    assert theirs["chosen"] == {} and theirs["email"] == "mallory@beta.example"
    stranger = outside.call("GET", "/notifications", OTHER, "user_bob")
    assert stranger.status_code == 403  # bob is not a member of org_beta


def test_a_mapped_person_decides_with_a_slack_button(outside: Outside) -> None:
    world = outside.world
    world.connect_slack()
    answer = outside.call(
        "PUT", "/notifications/slack", ORG, "user_alice", {"slack_user_id": "U0ALICE"}
    )
    assert answer.status_code == 200 and answer.get_json()["slack_user_id"] == "U0ALICE"
    item = world.item("Lease costs", world.contact())
    clicked = outside.click("T0ALPHA", "U0ALICE", "reject", f"{ORG}:{item}")
    assert clicked.status_code == 200, clicked.get_json()
    assert clicked.get_json()["by"] == "user_alice"
    assert outside.item(item) == {"status": "rejected", "decided_by": "user_alice"}
    (decision,) = outside.audit()
    assert (decision["event"], decision["actor"], decision["channel"]) == (
        "decision",
        "user_alice",
        "slack",
    )
    again = outside.click("T0ALPHA", "U0ALICE", "approve", f"{ORG}:{item}")
    assert again.status_code == 409  # decided already: the same conflict as on /overview
    second = world.item("Second thought", world.contact("Erin Vale"))
    approved = outside.click("T0ALPHA", "U0ALICE", "approve", f"{ORG}:{second}")
    assert approved.status_code == 200, approved.get_json()
    assert outside.item(second) == {"status": "applied", "decided_by": "user_alice"}
    effects = [(a["event"], a["actor"], a["channel"], a["action"]) for a in outside.audit()]
    assert effects[-2:] == [
        ("decision", "user_alice", "slack", "approve"),
        ("effect", "user_alice", "slack", "message_queued"),  # the applier ran, as on /overview
    ]


def test_an_unmapped_user_or_a_bad_signature_decides_nothing(outside: Outside) -> None:
    world = outside.world
    world.connect_slack()
    item = world.item("Lease costs", world.contact())
    unmapped = outside.click("T0ALPHA", "U0NOBODY", "approve", f"{ORG}:{item}")
    assert unmapped.status_code == 403
    assert "not mapped" in unmapped.get_json()["error"]["message"]
    (refusal,) = outside.audit()
    assert (refusal["event"], refusal["actor"], refusal["channel"]) == (
        "refusal",
        "slack:T0ALPHA:U0NOBODY",
        "slack",
    )
    world.slack_user("user_alice", "U0ALICE")
    forged = outside.click("T0ALPHA", "U0ALICE", "approve", f"{ORG}:{item}", secret="x" * 40)
    stale = outside.click(
        "T0ALPHA", "U0ALICE", "approve", f"{ORG}:{item}", at=world.clock().timestamp() - 301
    )
    assert forged.status_code == stale.status_code == 401
    unsigned = outside.client.post(
        "/slack/interactions",
        data=b"payload=%7B%7D",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert unsigned.status_code == 401
    assert outside.item(item)["status"] == "pending"
    conn = outside.pg.owner_connection()
    try:
        cur = conn.cursor()
        cur.execute(
            "SELECT reason FROM rejected_deliveries WHERE function = 'slack-interactions'"
            " ORDER BY id"
        )
        reasons = [row[0] for row in cur.fetchall()]
    finally:
        conn.close()
    assert reasons == [
        "unauthorized: the Slack request's signature does not verify",
        "unauthorized: the Slack request is older than five minutes (or from the future)",
        "unauthorized: a Slack request needs X-Slack-Request-Timestamp and -Signature",
    ]


def test_a_user_of_another_orgs_workspace_is_refused(outside: Outside) -> None:
    world = outside.world
    world.connect_slack()
    world.slack_user("user_alice", "U0ALICE")
    world.connect_slack(org_id=OTHER, team="T0BETA")
    # mallory, in org_beta, claims the same Slack member id in her own org
    world.slack_user("user_mallory", "U0ALICE", org_id=OTHER)
    item = world.item("Lease costs", world.contact())
    answer = outside.click("T0BETA", "U0ALICE", "approve", f"{ORG}:{item}")
    assert answer.status_code == 403
    assert "workspace is not the organisation's" in answer.get_json()["error"]["message"]
    assert outside.item(item)["status"] == "pending"
    (refusal,) = outside.audit()
    assert refusal["actor"] == "slack:T0BETA:U0ALICE" and refusal["event"] == "refusal"


def test_an_org_connects_only_a_slack_workspace_it_holds_and_no_other_orgs(
    outside: Outside,
) -> None:
    """The Slack workspace is the org-named external thing: org_beta's admin, naming alpha's
    workspace with a token of beta's own, or with a token of alpha's workspace once alpha
    connected it, is refused and recorded; nothing of alpha's changes."""
    from colony.contracts.notifications import SlackConnect
    from colony.errors import OwnedElsewhere, OwnershipUnproven

    world = outside.world
    world.connect_slack()  # alpha holds T0ALPHA
    secrets = world.deps.secrets
    betas = world.slack_server.bot_token("T0BETA")
    with pytest.raises(OwnershipUnproven):
        body = SlackConnect(team_id="T0ALPHA", bot_token=betas)
        notify.connect_slack(world.deps, secrets, world.slack, OTHER, body, "user_mallory")
    alphas_too = world.slack_server.bot_token("T0ALPHA")  # mallory is in alpha's Slack too
    with pytest.raises(OwnedElsewhere):
        body = SlackConnect(team_id="T0ALPHA", bot_token=alphas_too)
        notify.connect_slack(world.deps, secrets, world.slack, OTHER, body, "user_mallory")
    refusals = world.rows(
        "SELECT action, reason FROM audit_log WHERE event = 'refusal' ORDER BY id", org_id=OTHER
    )
    assert [r["action"] for r in refusals] == ["slack.connect", "slack.connect"]
    assert "another organisation" in refusals[1]["reason"]
    assert world.rows("SELECT slack_team_id FROM notify_settings", org_id=OTHER) == []
    alpha = notify.preferences(world.deps, ORG, "user_alice")["slack"]
    assert alpha == {"connected": True, "team_id": "T0ALPHA", "paused": False, "reason": None}


def test_a_person_who_left_decides_nothing_from_slack(outside: Outside) -> None:
    world = outside.world
    world.connect_slack()
    world.slack_user("user_bob", "U0BOB")
    item = world.item("Lease costs", world.contact())
    world.sql("UPDATE org_members SET status = 'left', left_at = now() WHERE user_id = 'user_bob'")
    answer = outside.click("T0ALPHA", "U0BOB", "approve", f"{ORG}:{item}")
    assert answer.status_code == 403
    assert "no longer a member" in answer.get_json()["error"]["message"]
    assert outside.item(item)["status"] == "pending"
    (refusal,) = outside.audit()
    assert refusal["event"] == "refusal" and refusal["actor"] == "slack:T0ALPHA:U0BOB"
