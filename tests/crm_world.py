"""Two orgs beside their HubSpot portals, for the write-back and engagement tests: the real
PostgreSQL, the HubSpot stand-in over HTTP (its OAuth and CRM API, read and written through
the official client), each org connected through the real OAuth flow
(``connections.start`` → the stand-in's authorize page → ``outgoing.complete``), its
deal and contact linked as the inbound sync would link them (``store.crm.links.link``), and
the CRM queue's tasks run by posting them to the real crm function.

``org_alpha`` is on portal 101, ``org_beta`` on portal 202; both worlds are seeded alike, so
the same HubSpot ids (deal 9001, contact 1001) exist in both and only the token decides
which portal a write reaches.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from colony.adapters.embedding import OfflineHashEmbedder
from colony.adapters.hubspot_oauth import hubspot_oauth
from colony.contracts.admin import CrmCallback
from colony.flows.crm import connections, outgoing
from colony.knowledge import KnowledgeStore
from colony.local.crm_demo import STAGES  # our stages as HubSpot's default pipeline names them
from colony.local.tokens import ensure_local_keys
from colony.runtime.deps import Deps, set_deps_for_tests
from colony.runtime.org_secrets import secret_store
from colony.store.crm import links, stages
from colony.testing.hubspot_seed import seeded_world
from colony.testing.hubspot_server import HubSpotServer
from colony.testing.hubspot_world import HubSpotWorld
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import org_settings, registered_app
from tests.conftest import PgDB
from tests.test_crm_connect import Clock, hubspot_env

ALPHA, BETA = "org_alpha", "org_beta"
PORTALS = {ALPHA: "101", BETA: "202"}


@dataclass
class CrmWorld:
    db: PgDB
    data_dir: Path
    hubspot: HubSpotServer
    portals: dict[str, HubSpotWorld]
    deps: Deps
    transport: InlineTransport
    crm_function: Any
    monkeypatch: pytest.MonkeyPatch
    done: set[str] = field(default_factory=set)

    def decide(
        self, item: str, action: str, *, org: str = ALPHA, edited: dict[str, Any] | None = None
    ) -> Any:
        """A person of ``org`` decides ``item`` through the real approval function."""
        keys = ensure_local_keys(self.data_dir)
        now = datetime.now(UTC)
        claims = {"sub": "user_1", "org_id": org, "iat": now, "exp": now + timedelta(hours=1)}
        token = jwt.encode(claims, keys.private_path.read_bytes(), algorithm="RS256")
        app = registered_app("approval", self.monkeypatch)
        body: dict[str, Any] = {"item_id": item, "action": action}
        if edited is not None:
            body["edited"] = edited
        return app.post("/", json=body, headers={"Authorization": f"Bearer {token}"})

    def connect(self, org: str, user: str = "user_1") -> dict[str, Any]:
        """The org's admin connects its portal through OAuth, as the admin API does."""
        settings = self.deps.settings
        auth = hubspot_oauth(settings)
        try:
            url = connections.start(self.deps, auth, org, user)["authorize_url"]
            self.hubspot.consent_as(PORTALS[org])
            back = urlsplit(httpx.get(url, follow_redirects=False).headers["location"])
            query = {k: v[0] for k, v in parse_qs(back.query).items()}
            body = CrmCallback.model_validate({"code": query["code"], "state": query["state"]})
            return outgoing.complete(self.deps, secret_store(settings), auth, org, user, body)
        finally:
            auth.close()

    def seed(self, org: str, n: int, *, linked: bool = True) -> tuple[str, str]:
        """Our contact and deal ``n`` (stage discovery, 50,000), linked to HubSpot's contact
        ``1001 + n`` and deal ``9001 + n``; the org's stages mapped. (contact, deal) ids."""
        contact, deal = f"{org}-contact-{n}", f"{org}-deal-{n}"
        conn = self.db.owner_connection()
        cur = conn.cursor()
        cur.execute(
            "INSERT INTO contacts (id, org_id, name, email, company) VALUES (%s, %s, %s, %s, %s)",
            (contact, org, f"Person {n}", f"person{n}@mercy{n}.example", f"Mercy {n}"),
        )
        cur.execute(
            "INSERT INTO deals (id, org_id, contact_id, name, stage, value)"
            " VALUES (%s, %s, %s, %s, 'discovery', 50000)",
            (deal, org, contact, f"Deal {n}"),
        )
        conn.commit()
        conn.close()
        with self.deps.db.transaction(org) as tx:
            mapped = [("default", theirs, ours) for ours, theirs in STAGES.items()]
            stages.put(tx, org, "hubspot", mapped, "u-admin")
            if linked:
                links.link(tx, org, "hubspot", "contact", str(1001 + n), contact)
                links.link(tx, org, "hubspot", "deal", str(9001 + n), deal)
        return contact, deal

    def crm_tasks(self) -> list[Any]:
        return [
            t
            for name, t in self.transport.tasks.items()
            if t.queue == "colony-crm" and name not in self.done
        ]

    def run_tasks(self) -> list[dict[str, Any]]:
        """Every CRM task not yet run, posted to the crm function (and those they
        queue), as Cloud Tasks would; their answers."""
        answers = []
        while pending := [
            (n, t)
            for n, t in self.transport.tasks.items()
            if t.queue == "colony-crm" and n not in self.done
        ]:
            for name, task in pending:
                self.done.add(name)
                answers.append(self.post(task.body))
        return answers

    def post(self, body: bytes) -> dict[str, Any]:
        answer = self.crm_function.post(
            "/", data=body, headers={"Content-Type": "application/json"}
        )
        assert answer.status_code in (200, 404), answer.get_json()
        return {"status_code": answer.status_code, **answer.get_json()}

    def replay(self) -> list[dict[str, Any]]:
        """Every CRM task already run, delivered once more (a Cloud Tasks retry)."""
        return [self.post(t.body) for n, t in self.transport.tasks.items() if n in self.done]

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return self.db.owner_rows(sql)

    def pushes(self, org: str) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT kind, source_id, status, outcome, remote_id, conflict_item_id"
            f" FROM crm_pushes WHERE org_id = '{org}' ORDER BY created_at, id"
        )

    def payload(self, item_id: str) -> dict[str, Any]:
        (row,) = self.rows(f"SELECT payload FROM approval_items WHERE id = '{item_id}'")
        payload = row["payload"]
        return json.loads(payload) if isinstance(payload, str) else dict(payload)


@pytest.fixture
def crm_world(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[CrmWorld]:
    portals = {
        org: seeded_world(n, portal_id=portal, companies=2, contacts=8, deals=8)
        for n, (org, portal) in enumerate(PORTALS.items(), start=1)
    }
    with HubSpotServer(*portals.values()) as hubspot:
        settings = org_settings(
            testdb,
            tmp_path,
            ALPHA,
            BETA,
            **hubspot_env(hubspot),
            COLONY_MAIL_FROM="Colony <outreach@colony.example>",
            COLONY_UNSUBSCRIBE_URL="https://colony.example/unsubscribe",
            COLONY_UNSUBSCRIBE_TOKEN_KEY="u" * 40,
        )
        transport = InlineTransport()
        db = testdb.app()
        # an edit reads the org's competitors from its Knowledge Core (no model is called)
        knowledge = KnowledgeStore(db, OfflineHashEmbedder(dim=testdb.dim))
        deps = local_deps(settings, db, transport, knowledge=knowledge, clock=Clock())
        set_deps_for_tests(deps)
        try:
            crm_function = registered_app("crm", monkeypatch)
            yield CrmWorld(
                testdb, tmp_path, hubspot, portals, deps, transport, crm_function, monkeypatch
            )
        finally:
            set_deps_for_tests(None)
