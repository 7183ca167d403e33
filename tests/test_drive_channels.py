"""Drive channels that live (issue 17 item 5): an org admin watches the recordings folder,
the scheduler renews channels before they expire, an erased org's channels are stopped, and
the recording webhook accepts only notifications of a live channel we created for that org.
A folder is watched only once the org has proven it its own (issue 31), tried from outside
as a second tenant would.

Real parts: embedded PostgreSQL, the GCS emulator, the admin, data-lifecycle and
drive-webhook functions loaded from their real ``main.py`` by functions-framework, and the
local Drive stand-in (``files.watch``, ``channels.stop``, expiry).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest

from colony.adapters.drive import drive_from_settings
from colony.adapters.secrets import FileSecrets
from colony.flows.tenants import erasure
from colony.local.tokens import ensure_local_keys
from colony.runtime.deps import Deps, set_deps_for_tests
from colony.settings import Settings
from colony.store import fetch_all
from colony.store.knowledge import notion_workspaces
from colony.store.recordings import drive_channels as drive_channels_repo
from colony.testing.drive_server import DriveServer, push_headers
from colony.testing.inline import InlineTransport, local_deps
from colony.webhooks import folder_marker, org_from_token, watch_token
from tests.apps import registered_app
from tests.conftest import APP_ROLE, Gcs, PgDB

ALPHA, BETA = "org_alpha", "org_beta"
SECRET = "drive-channel-secret"
HOOK = "https://colony.example/drive-webhook"
FOLDER_A, FOLDER_B = "folderalpha01", "folderbeta01"


def now() -> datetime:
    return datetime.now(UTC)  # the stand-in caps expiry by the real clock


@dataclass
class Env:
    deps: Deps
    drive: DriveServer
    admin: Any
    lifecycle: Any
    webhook: Any
    data_dir: Path
    numbers: Iterator[int]

    def token(self, org: str, role: str | None = "org:admin") -> str:
        keys = ensure_local_keys(self.data_dir)
        at = now()
        claims: dict[str, Any] = {"sub": "u1", "org_id": org, "iat": at}
        claims["exp"] = at + timedelta(hours=1)
        if role:
            claims["org_role"] = role
        return jwt.encode(claims, keys.private_path.read_bytes(), algorithm="RS256")

    def prove(self, org: str, folder: str) -> str:
        """What the org's admin does in Drive: the org's marker file, in the folder."""
        name = folder_marker(SECRET, org, folder)
        self.drive.add_file(folder, f"marker-{org}-{folder}", name, b"", "text/plain")
        return name

    def proven_watch(self, org: str, folder: str) -> str:
        self.prove(org, folder)
        answer = self.watch(org, folder)
        assert answer.status_code == 201, answer.get_json()
        return str(answer.get_json()["channel_id"])

    def audit(self, org: str) -> list[dict[str, Any]]:
        with self.deps.db.transaction(org) as cur:
            return fetch_all(
                cur,
                "SELECT event, actor, channel, action, reason, detail FROM audit_log ORDER BY id",
            )

    def recordings(self, org: str) -> list[dict[str, Any]]:
        with self.deps.db.transaction(org) as cur:
            return fetch_all(cur, "SELECT source_file_id FROM recordings ORDER BY source_file_id")

    def watch(self, org: str, folder: str, token: str | None = None) -> Any:
        bearer = token or self.token(org)
        return self.admin.post(
            f"/orgs/{org}/drive/watch",
            json={"folder_id": folder},
            headers={"Authorization": f"Bearer {bearer}"},
        )

    def notify(self, channel: str, org: str = ALPHA, folder: str = FOLDER_A) -> Any:
        headers = push_headers(
            channel_id=channel,
            token=watch_token(SECRET, org, folder),
            message_number=next(self.numbers),
            folder_id=folder,
        )
        return self.webhook.post("/", headers=headers)

    def at(self, when: datetime) -> None:
        set_deps_for_tests(replace(self.deps, clock=lambda: when))

    def rows(self, org: str) -> list[dict[str, Any]]:
        with self.deps.db.transaction(org) as cur:
            return fetch_all(
                cur, "SELECT id, folder_id, status FROM drive_channels ORDER BY created_at, id"
            )


@pytest.fixture
def env(testdb: PgDB, gcs: Gcs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    db = testdb.app()
    for org in (ALPHA, BETA):
        with db.transaction(org) as cur:
            cur.execute("INSERT INTO organizations (id, name) VALUES (%s, %s)", (org, org))
    with DriveServer() as drive:
        settings = Settings.from_env(
            {
                "COLONY_DB_MODE": "dsn",
                "COLONY_DB_DSN": testdb.dsn(APP_ROLE),
                "COLONY_DATA_DIR": str(tmp_path),
                "COLONY_DRIVE_CHANNEL_TOKEN": SECRET,
                "COLONY_DRIVE_BASE_URL": drive.url,
                "COLONY_FUNCTION_URLS": f'{{"drive-webhook": "{HOOK}"}}',
            }
        )
        deps = local_deps(settings, db, InlineTransport(), blobs=gcs.store, clock=now)  # type: ignore[arg-type]
        set_deps_for_tests(deps)
        apps = [
            registered_app(n, monkeypatch) for n in ("admin", "data-lifecycle", "drive-webhook")
        ]
        yield Env(deps, drive, *apps, tmp_path, iter(range(1, 10_000)))
        set_deps_for_tests(None)


def test_an_admin_watches_the_folder_and_only_live_channels_are_accepted(env: Env) -> None:
    env.prove(ALPHA, FOLDER_A)
    answer = env.watch(ALPHA, FOLDER_A)
    assert answer.status_code == 201, answer.get_json()
    channel = answer.get_json()["channel_id"]
    [live] = env.drive.live_channels()
    assert live.id == channel and live.folder == FOLDER_A and live.address == HOOK
    assert org_from_token(SECRET, live.token, FOLDER_A) == ALPHA  # bound to org and folder
    assert env.rows(ALPHA) == [{"id": channel, "folder_id": FOLDER_A, "status": "active"}]

    ok = env.notify(channel)
    assert ok.status_code == 200 and ok.get_json()["status"] == "accepted"
    # a genuine token, but a channel we never created
    unknown = env.notify("colony-forged")
    assert unknown.status_code == 401 and "no channel" in unknown.get_json()["error"]["message"]
    # past its expiry (our clock two days on), the channel is refused
    env.at(now() + timedelta(days=2))
    expired = env.notify(channel)
    assert expired.status_code == 401 and "expired" in expired.get_json()["error"]["message"]


def test_renewal_replaces_expiring_channels_before_stopping_them(env: Env) -> None:
    old = env.proven_watch(ALPHA, FOLDER_A)
    body = {"task": {"kind": "drive.renew", "org_id": ALPHA}}
    # not yet due (it expires in a day, renewal looks 12 hours ahead): nothing changes
    nothing = env.lifecycle.post("/", json=body)
    assert nothing.status_code == 200 and nothing.get_json()["renewed"] == []
    env.at(now() + timedelta(hours=13))  # now it expires within 12 hours
    renewed = env.lifecycle.post("/", json=body)
    assert renewed.status_code == 200, renewed.get_json()
    [pair] = renewed.get_json()["renewed"]
    assert pair["old"] == old and pair["new"] != old
    assert [c.id for c in env.drive.live_channels()] == [pair["new"]]
    assert env.drive.channels[old].stopped  # stopped at Drive, after its successor existed
    assert [r["status"] for r in env.rows(ALPHA)] == ["stopped", "active"]
    env.at(now())
    stopped = env.notify(old)
    assert stopped.status_code == 401 and "stopped" in stopped.get_json()["error"]["message"]
    assert env.notify(pair["new"]).status_code == 200


def test_other_orgs_cannot_watch_read_or_borrow_channels(env: Env) -> None:
    beta_channel = env.proven_watch(BETA, FOLDER_B)
    assert env.watch(ALPHA, FOLDER_A, env.token(BETA)).status_code == 403
    assert env.watch(ALPHA, FOLDER_A, env.token(ALPHA, role="org:member")).status_code == 403
    assert [c.folder for c in env.drive.live_channels()] == [FOLDER_B]  # nothing created
    peek = env.admin.get(
        f"/orgs/{ALPHA}/drive/channels", headers={"Authorization": f"Bearer {env.token(BETA)}"}
    )
    assert peek.status_code == 403
    mine = env.admin.get(
        f"/orgs/{BETA}/drive/channels", headers={"Authorization": f"Bearer {env.token(BETA)}"}
    )
    assert [c["id"] for c in mine.get_json()["channels"]] == [beta_channel]
    # alpha's valid token for its own folder, naming beta's channel: refused
    assert env.notify(beta_channel, ALPHA, FOLDER_A).status_code == 401
    # beta's channel with beta's token for alpha's folder: the token does not verify
    borrowed = push_headers(
        channel_id=beta_channel,
        token=watch_token(SECRET, BETA, FOLDER_B),
        message_number=1,
        folder_id=FOLDER_A,
    )
    assert env.webhook.post("/", headers=borrowed).status_code == 401
    assert env.watch(ALPHA, "bad folder!").status_code == 422


def test_an_erased_org_has_its_channels_stopped_and_its_notion_tokens_deleted(env: Env) -> None:
    alpha = env.proven_watch(ALPHA, FOLDER_A)
    beta = env.proven_watch(BETA, FOLDER_B)
    secrets = FileSecrets(env.data_dir / "secrets")  # the local SecretStore the function uses
    secrets.put("colony-notion-alpha", "secret_alpha")
    with env.deps.db.transaction(ALPHA) as cur:
        notion_workspaces.connect(cur, ALPHA, "ws-a", "colony-notion-alpha", {"a" * 32: "KC-01"})
    # Clerk's organization.deleted opens this job (flows.tenants.clerk_orgs); the queue delivers it
    job_id = erasure.request_org(env.deps, ALPHA, "clerk")
    done = env.lifecycle.post("/", json={"task": {"kind": "erasure", "job_id": job_id}})
    assert done.status_code == 200, done.get_json()
    assert done.get_json()["phases_done"][0] == "connections"
    assert env.drive.channels[alpha].stopped and not env.drive.channels[beta].stopped
    with pytest.raises(Exception, match="no version"):
        secrets.get("colony-notion-alpha")
    assert env.rows(ALPHA) == []
    assert env.notify(alpha).status_code == 401
    assert [r["id"] for r in env.rows(BETA)] == [beta]


def test_a_folder_is_watched_only_once_the_org_has_proven_it_its_own(env: Env) -> None:
    bearer = {"Authorization": f"Bearer {env.token(ALPHA)}"}
    asked = env.admin.get(f"/orgs/{ALPHA}/drive/folders/{FOLDER_A}", headers=bearer)
    assert asked.status_code == 200, asked.get_json()
    proof = asked.get_json()
    assert proof["status"] == "unproven"
    assert proof["marker_name"] == folder_marker(SECRET, ALPHA, FOLDER_A)
    refused = env.watch(ALPHA, FOLDER_A)
    assert refused.status_code == 403, refused.get_json()
    error = refused.get_json()["error"]
    assert error["code"] == "ownership_unproven" and proof["marker_name"] in error["message"]
    assert env.drive.live_channels() == [] and env.rows(ALPHA) == []
    [entry] = env.audit(ALPHA)
    assert entry["event"] == "refusal" and entry["actor"] == "u1" and entry["channel"] == "admin"
    assert entry["reason"] == "ownership_unproven" and entry["detail"]["folder_id"] == FOLDER_A
    # the admin places the marker in the folder; the watch goes through
    env.prove(ALPHA, FOLDER_A)
    assert env.watch(ALPHA, FOLDER_A).status_code == 201
    again = env.admin.get(f"/orgs/{ALPHA}/drive/folders/{FOLDER_A}", headers=bearer)
    assert again.get_json()["status"] == "proven"
    # another org's admin cannot ask about this org's folders
    peek = env.admin.get(
        f"/orgs/{ALPHA}/drive/folders/{FOLDER_A}",
        headers={"Authorization": f"Bearer {env.token(BETA)}"},
    )
    assert peek.status_code == 403


def test_a_second_org_naming_the_first_orgs_folder_is_refused_and_gets_nothing(
    env: Env,
) -> None:
    """The attack of issue 31: org B's admin watches org A's recordings folder."""
    env.drive.add_file(FOLDER_A, "call-a-1", "Call with Mercy Ridge", b"A's transcript")
    alpha = env.proven_watch(ALPHA, FOLDER_A)  # A's own marker is in the folder
    attack = env.watch(BETA, FOLDER_A)
    assert attack.status_code == 403, attack.get_json()
    assert attack.get_json()["error"]["code"] == "ownership_unproven"
    # even with B's marker in the folder (someone at B can write to it), A proved it first
    env.prove(BETA, FOLDER_A)
    again = env.watch(BETA, FOLDER_A)
    assert again.status_code == 403, again.get_json()
    error = again.get_json()["error"]
    assert error["code"] == "owned_by_another_org" and ALPHA not in error["message"]
    assert [c.id for c in env.drive.live_channels()] == [alpha]  # nothing made for B
    assert env.rows(BETA) == []
    assert [(e["reason"], e["action"]) for e in env.audit(BETA)] == [
        ("ownership_unproven", "drive.watch"),
        ("owned_by_another_org", "drive.watch"),
    ]
    assert env.audit(ALPHA) == []  # A's log says nothing of B's attempts
    # A's notification stores A's transcript in A; B has none of it
    assert env.notify(alpha).status_code == 200
    assert env.recordings(ALPHA) == [{"source_file_id": "call-a-1"}]
    assert env.recordings(BETA) == []
    # B's genuine token for A's folder names no channel of B's: refused, nothing stored
    assert env.notify(alpha, BETA, FOLDER_A).status_code == 401
    assert env.recordings(BETA) == []


def test_a_channel_made_before_folders_were_proven_is_refused_then_stopped(env: Env) -> None:
    """Channels that the unchecked watch created (before migration 0039) on a folder that is
    not the org's: the webhook refuses them at once, and the renewal stops them at Drive."""
    env.drive.add_file(FOLDER_A, "call-a-1", "Call with Mercy Ridge", b"A's transcript")
    env.prove(ALPHA, FOLDER_A)  # A's marker: A's own legacy channel is kept and bound
    legacy: dict[str, str] = {}
    drive = drive_from_settings(env.deps.settings)
    for org in (ALPHA, BETA):  # what the old, unchecked watch did for each
        token = watch_token(SECRET, org, FOLDER_A)
        made = drive.watch_folder(FOLDER_A, f"colony-legacy-{org}", HOOK, token, 0)
        with env.deps.db.transaction(org) as cur:
            expires = now() + timedelta(hours=20)
            drive_channels_repo.add(cur, made.id, org, FOLDER_A, made.resource_id, expires)
        legacy[org] = made.id
    drive.close()
    refused = env.notify(legacy[BETA], BETA, FOLDER_A)
    assert refused.status_code == 403, refused.get_json()
    assert env.recordings(BETA) == []
    body = {"task": {"kind": "drive.renew", "org_id": BETA}}
    renewed = env.lifecycle.post("/", json=body)
    assert renewed.status_code == 200, renewed.get_json()
    assert renewed.get_json()["stopped_unproven"] == [legacy[BETA]]
    assert env.drive.channels[legacy[BETA]].stopped
    assert [r["status"] for r in env.rows(BETA)] == ["stopped"]
    [entry] = env.audit(BETA)
    assert (entry["actor"], entry["channel"], entry["reason"]) == (
        "system",
        "system",
        "ownership_unproven",
    )
    # A's legacy channel: its marker is in the folder, so the renewal binds it and keeps it
    kept = env.lifecycle.post("/", json={"task": {"kind": "drive.renew", "org_id": ALPHA}})
    assert kept.status_code == 200 and kept.get_json()["stopped_unproven"] == []
    assert not env.drive.channels[legacy[ALPHA]].stopped
    assert env.notify(legacy[ALPHA]).status_code == 200
    assert env.recordings(ALPHA) == [{"source_file_id": "call-a-1"}]


def test_an_org_we_do_not_know_yet_is_a_404_not_a_failed_audit(env: Env) -> None:
    """A valid admin token of an org whose Clerk webhook has not reached us: nothing to bind a
    folder to, nor an audit log to record a refusal on."""
    stranger = "org_not_yet_created"
    env.prove(stranger, FOLDER_A)
    answer = env.watch(stranger, FOLDER_A)
    assert answer.status_code == 404, answer.get_json()
    assert env.drive.live_channels() == []
