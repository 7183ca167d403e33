"""The HubSpot stand-in's limits and OAuth, and how the adapters meet them (issue 36): the
official client against ``HubSpotServer`` over HTTP, on the test's ``ManualClock`` (the
adapter's back-off moves that clock; nothing sleeps).

- bursts (110 per rolling 10 s here scaled down), searches (5 a second) and the daily limit
  are enforced per portal, each 429 in HubSpot's shape with ``Retry-After``; the adapter waits
  out what it may and gives up, bounded, on what it may not;
- ``X-HubSpot-RateLimit-*`` on every answer, read back by ``rate_limit()``;
- expired and unknown tokens (401 with HubSpot's category), missing scopes (403);
- the OAuth grants, a revoked refresh token, a wrong app secret;
- batch create and update as HubSpot takes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hubspot.crm.objects import (
    BatchInputSimplePublicObjectBatchInput,
    BatchInputSimplePublicObjectBatchInputForCreate,
    SimplePublicObjectBatchInput,
    SimplePublicObjectBatchInputForCreate,
)

from colony.adapters.hubspot import HubSpotCrm, sdk_client
from colony.adapters.hubspot_oauth import HubSpotOAuth
from colony.errors import ConfigError, CrmAccessRefused, ProviderUnavailable
from colony.ports import SearchQuery
from colony.testing.crm_memory import MemoryLedger
from colony.testing.hubspot_accounts import Limits
from colony.testing.hubspot_seed import UNMAPPED_STAGE, seeded_world
from colony.testing.hubspot_server import HubSpotServer


def serve(limits: Limits | None = None) -> HubSpotServer:
    return HubSpotServer(seeded_world(3, contacts=30, deals=5), limits=limits)


def crm(server: HubSpotServer, scopes: tuple[str, ...] | None = None) -> HubSpotCrm:
    extra: dict[str, Any] = {"scopes": scopes} if scopes else {}
    token = server.accounts.issue(server.world().portal_id, **extra)["access_token"]
    client = sdk_client(server.url, token)
    return HubSpotCrm(client, MemoryLedger(), sleep=server.clock.sleep)


@pytest.fixture
def oauth() -> Iterator[tuple[HubSpotServer, HubSpotOAuth]]:
    with serve() as server:
        auth = HubSpotOAuth(
            "colony-app",
            "colony-app-secret",
            base_url=server.url,
            authorize_url=server.authorize_url,
        )
        yield server, auth
        auth.close()


def test_a_burst_over_the_limit_is_a_429_the_adapter_waits_out() -> None:
    with serve(Limits(burst=5)) as server:
        client = crm(server)
        for _ in range(5):
            client.page("contacts", ["email"], limit=1)
        assert client.rate_limit().interval_remaining == 0
        assert client.rate_limit().interval_max == 5
        assert client.page("contacts", ["email"], limit=1).records  # the sixth: waited for
        assert server.clock.slept == [10.0]
        auth = {"Authorization": f"Bearer {server.accounts.issue('62515')['access_token']}"}
        for _ in range(4):  # the window holds the sixth already: four more fit
            assert httpx.get(f"{server.url}/crm/v3/objects/deals", headers=auth).status_code == 200
        over = httpx.get(f"{server.url}/crm/v3/objects/deals", headers=auth)
        assert over.status_code == 429
        assert over.json()["policyName"] == "TEN_SECONDLY_ROLLING"
        assert over.json()["errorType"] == "RATE_LIMIT" and over.json()["status"] == "error"
        assert over.headers["Retry-After"] == "10"
        assert over.headers["X-HubSpot-RateLimit-Remaining"] == "0"


def test_searches_are_limited_to_five_a_second() -> None:
    with serve() as server:
        client = crm(server)
        for _ in range(6):
            client.search("contacts", SearchQuery(limit=1))
        assert server.clock.slept == [1.0]
        assert [r.route for r in server.requests].count("search") == 7  # one refused, retried


def test_the_daily_limit_is_not_slept_on() -> None:
    with serve(Limits(daily=3)) as server:
        client = crm(server)
        for _ in range(3):
            client.pipelines()
        assert client.rate_limit().daily_remaining == 0
        with pytest.raises(ProviderUnavailable) as refused:
            client.pipelines()
        assert refused.value.retry_after is not None and refused.value.retry_after > 60
        assert refused.value.reason == "RATE_LIMITS" and server.clock.slept == []


def test_a_429_storm_ends_in_a_bounded_refusal() -> None:
    with serve() as server:
        client = crm(server)
        server.rate_limit(times=10, retry_after=2)
        with pytest.raises(ProviderUnavailable):
            client.read("deals", ["9001"], ["dealstage"])
        assert client.calls == 4 and server.clock.slept == [2.0, 2.0, 2.0]
        server.reset()
        server.rate_limit(times=1, retry_after=60)  # longer than the adapter waits: raised
        with pytest.raises(ProviderUnavailable) as later:
            client.pipelines()
        assert later.value.retry_after == 60.0


def test_a_5xx_is_retried() -> None:
    with serve() as server:
        client = crm(server)
        server.fail(503, retry_after_ms=None)
        assert client.read("deals", ["9001"], ["dealname"])[0].id == "9001"
        assert server.clock.slept == [0.5]


def test_expired_unknown_and_underscoped_tokens_are_refused() -> None:
    with serve() as server:
        client = crm(server)
        server.accounts.expire_access_tokens()
        with pytest.raises(CrmAccessRefused) as expired:
            client.pipelines()
        assert expired.value.reason == "EXPIRED_AUTHENTICATION"
        stranger = HubSpotCrm(sdk_client(server.url, "nope"), MemoryLedger())
        with pytest.raises(CrmAccessRefused) as unknown:
            stranger.pipelines()
        assert unknown.value.reason == "INVALID_AUTHENTICATION"
        readonly = crm(server, scopes=("oauth", "crm.objects.deals.read"))
        assert readonly.read("deals", ["9001"], ["dealname"])
        with pytest.raises(CrmAccessRefused) as scoped:
            readonly.page("contacts", ["email"])
        assert scoped.value.reason == "MISSING_SCOPES"


def test_the_oauth_grants_and_a_revoked_refresh_token(
    oauth: tuple[HubSpotServer, HubSpotOAuth],
) -> None:
    server, auth = oauth
    server.consent_as("62515", "ada@portal.example")
    url = auth.authorize_url("the-state", "https://colony.example/cb")
    back = httpx.get(url)
    assert back.status_code == 302
    code = httpx.URL(back.headers["location"]).params["code"]
    assert httpx.URL(back.headers["location"]).params["state"] == "the-state"
    with pytest.raises(ConfigError, match="BAD_REDIRECT_URI"):  # ours to configure
        auth.exchange_code(code, "https://elsewhere.example/cb")
    with pytest.raises(CrmAccessRefused) as spent:
        auth.exchange_code(code, "https://colony.example/cb")  # a code works once
    assert spent.value.reason == "BAD_AUTH_CODE"
    server.consent_as("62515", "ada@portal.example")
    code = httpx.URL(httpx.get(url).headers["location"]).params["code"]
    tokens = auth.exchange_code(code, "https://colony.example/cb")
    assert tokens.expires_in == 1800
    account = auth.account(tokens.access_token)
    assert (account.account_id, account.user) == ("62515", "ada@portal.example")
    assert "crm.objects.deals.write" in account.scopes
    renewed = auth.refresh(tokens.refresh_token)
    assert renewed.access_token != tokens.access_token
    assert renewed.refresh_token == tokens.refresh_token  # HubSpot keeps the refresh token
    auth.revoke(tokens.refresh_token)
    auth.revoke(tokens.refresh_token)  # already revoked: nothing to do
    with pytest.raises(CrmAccessRefused) as revoked:
        auth.refresh(tokens.refresh_token)
    assert revoked.value.reason == "BAD_REFRESH_TOKEN"
    with pytest.raises(CrmAccessRefused):
        auth.account(renewed.access_token)  # its access tokens went with it


def test_a_wrong_app_secret_is_our_configuration(
    oauth: tuple[HubSpotServer, HubSpotOAuth],
) -> None:
    server, _ = oauth
    wrong = HubSpotOAuth("colony-app", "not-the-secret", base_url=server.url)
    with pytest.raises(ConfigError, match="BAD_CLIENT_SECRET"):
        wrong.refresh("anything")
    wrong.close()


def test_batch_create_and_update_as_hubspot_takes_them() -> None:
    with serve() as server:
        token = server.accounts.issue(server.world().portal_id)["access_token"]
        batch = sdk_client(server.url, token).crm.objects.batch_api
        made = batch.create(
            "contacts",
            BatchInputSimplePublicObjectBatchInputForCreate(
                inputs=[
                    SimplePublicObjectBatchInputForCreate(properties={"email": f"n{n}@x.example"})
                    for n in range(3)
                ]
            ),
        )
        ids = sorted(r.id for r in made.results)
        assert len(ids) == 3 and server.world().count("contacts") == 33
        updated = batch.update(
            "contacts",
            BatchInputSimplePublicObjectBatchInput(
                inputs=[
                    SimplePublicObjectBatchInput(id=i, properties={"jobtitle": "CFO"}) for i in ids
                ]
            ),
        )
        assert {r.properties["jobtitle"] for r in updated.results} == {"CFO"}
        too_many = httpx.post(
            f"{server.url}/crm/v3/objects/contacts/batch/read",
            headers={"Authorization": f"Bearer {token}"},
            json={"inputs": [{"id": str(n)} for n in range(101)]},
        )
        assert too_many.status_code == 400
        assert too_many.json()["category"] == "VALIDATION_ERROR"


def test_a_seeded_world_is_the_same_every_time_and_plants_its_awkward_cases() -> None:
    first, second = (seeded_world(11, companies=6, contacts=62, deals=34) for _ in range(2))
    for kind in ("companies", "contacts", "deals"):
        assert [first.render(o) for o in first.live(kind)] == [
            second.render(o) for o in second.live(kind)
        ]
    assert [o.id for o in first.live("contacts") if not o.properties["email"]] == ["1031", "1062"]
    partner = [o.id for o in first.live("deals") if o.properties["dealstage"] == UNMAPPED_STAGE]
    assert partner == ["9017", "9034"]
    assert first.pipeline_stage(UNMAPPED_STAGE) is not None
    other = seeded_world(12, companies=6, contacts=62, deals=34)
    assert [o.properties for o in other.live("contacts")] != [
        o.properties for o in first.live("contacts")
    ]


def test_one_records_associations_page_as_v4_answers_them() -> None:
    with serve() as server:
        token = server.accounts.issue(server.world().portal_id)["access_token"]
        links = sdk_client(server.url, token).crm.associations.v4.basic_api
        answer = links.get_page("companies", "5001", "contacts")
        people = {str(r.to_object_id) for r in answer.results}
        assert people == set(server.world().linked("companies", "5001", "contacts"))
        primary = {t.type_id for r in answer.results for t in r.association_types}
        assert primary == {280, 2}  # unlabeled, and "Primary" for the first contact
