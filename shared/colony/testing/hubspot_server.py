"""A local stand-in for HubSpot's CRM API, speaking its v3/v4 wire format over real HTTP, so
the official ``hubspot-api-client`` runs against it unchanged (its ``host`` set to ``url``).

Routes (each portal's data a ``HubSpotWorld``; who may call and how often,
``HubSpotAccounts``):

- OAuth: ``GET /oauth/authorize`` (the consent page: the signed-in person, ``consent_as``,
  allows the app and is redirected with ``code`` and ``state``), ``POST /oauth/v1/token``
  (``authorization_code`` and ``refresh_token`` grants, form-encoded; access tokens expire),
  ``GET /oauth/v1/access-tokens/{token}``, ``DELETE /oauth/v1/refresh-tokens/{token}``;
- objects (contacts, companies, deals, emails, notes, calls): ``GET /crm/v3/objects/{type}``
  (``limit`` ≤ 100, ``after``, ``properties``, ``propertiesWithHistory``), ``GET``,
  ``PATCH`` and ``DELETE`` (archive) ``/crm/v3/objects/{type}/{id}``,
  ``POST /crm/v3/objects/{type}`` (with ``associations``),
  ``POST .../batch/read|create|update`` (≤ 100 inputs; missing ids: 207 with ``errors``),
  ``POST .../search`` (``colony.testing.hubspot_search``);
- ``GET /crm/v4/objects/{type}/{id}/associations/{to}``,
  ``POST /crm/v4/associations/{from}/{to}/batch/read``; ``GET /crm/v3/pipelines/deals``.

Every CRM answer carries ``X-HubSpot-RateLimit-*``; a request over a limit is 429 with
HubSpot's body and ``Retry-After``; a missing, unknown or expired token is 401 with HubSpot's
``category``; a scope the grant lacks is 403 ``MISSING_SCOPES``. ``script``/``fail`` (from
``WireServer``) still queue scripted answers ahead of all that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

from colony.testing.hubspot_accounts import (
    SCOPES,
    Grant,
    HubSpotAccounts,
    ManualClock,
    api_error,
)
from colony.testing.hubspot_search import SearchRefused, search
from colony.testing.hubspot_world import ASSOCIATION_TYPES, OBJECT_TYPES, HubSpotWorld, Obj
from colony.testing.wire import ProviderServer, RecordedRequest, Reply, Route

__all__ = ["HubSpotServer", "ManualClock"]

TYPE = rf"(?P<type>{'|'.join(OBJECT_TYPES)})"
ONE = rf"/crm/v3/objects/{TYPE}/(?P<id>\d+)"
SCOPED = {"contacts": "contacts", "companies": "companies", "deals": "deals"}
MAX_PAGE, MAX_BATCH = 100, 100
Handler = Callable[[RecordedRequest, HubSpotWorld], Reply]


def _error(status: int, message: str, category: str, **extra: Any) -> Reply:
    return Reply(status, api_error(message, category, **extra))


def _names(request: RecordedRequest, key: str) -> list[str]:
    """A query list as HubSpot reads it: repeated (``a&a``) or comma-separated."""
    return [n for v in request.query.get(key, []) for n in v.split(",") if n]


class HubSpotServer(ProviderServer):
    """HubSpot on 127.0.0.1: ``worlds`` by portal id; one app's accounts and limits."""

    unauthorised = ("INVALID_AUTHENTICATION", "Authentication credentials not found.")
    rate_limited = ("RATE_LIMIT", "You have reached your ten_secondly_rolling limit.")

    def __init__(
        self, *worlds: HubSpotWorld, clock: ManualClock | None = None, **accounts: Any
    ) -> None:
        self.worlds = {w.portal_id: w for w in worlds or (HubSpotWorld(),)}
        self.clock = clock or ManualClock()
        self.accounts = HubSpotAccounts(self.clock, **accounts)
        crm: list[tuple[str, str, str, Handler, bool]] = [
            ("objects.list", "GET", rf"/crm/v3/objects/{TYPE}", self._list, False),
            ("objects.get", "GET", rf"/crm/v3/objects/{TYPE}/(?P<id>\d+)", self._get, False),
            ("objects.update", "PATCH", rf"/crm/v3/objects/{TYPE}/(?P<id>\d+)", self._update, True),
            ("objects.archive", "DELETE", rf"{ONE}", self._archive, True),
            ("objects.create", "POST", rf"/crm/v3/objects/{TYPE}", self._create, True),
            ("batch.read", "POST", rf"/crm/v3/objects/{TYPE}/batch/read", self._batch_read, False),
            ("batch.create", "POST", rf"/crm/v3/objects/{TYPE}/batch/create", self._bcreate, True),
            ("batch.update", "POST", rf"/crm/v3/objects/{TYPE}/batch/update", self._bupdate, True),
            ("search", "POST", rf"/crm/v3/objects/{TYPE}/search", self._search, False),
            (
                "associations.list",
                "GET",
                rf"/crm/v4/objects/{TYPE}/(?P<id>\d+)/associations/(?P<to>[a-z]+)",
                self._links,
                False,
            ),
            (
                "associations.batch",
                "POST",
                rf"/crm/v4/associations/{TYPE}/(?P<to>[a-z]+)/batch/read",
                self._batch_links,
                False,
            ),
            ("pipelines", "GET", r"/crm/v3/pipelines/(?P<type>deals)", self._pipelines, False),
        ]
        routes = [
            Route.of("oauth.authorize", "GET", r"/oauth/authorize", self._authorize),
            Route.of("oauth.token", "POST", r"/oauth/v1/token", self._token),
            Route.of(
                "oauth.access", "GET", r"/oauth/v1/access-tokens/(?P<token>[^/]+)", self._access
            ),
            Route.of(
                "oauth.revoke", "DELETE", r"/oauth/v1/refresh-tokens/(?P<token>[^/]+)", self._revoke
            ),
            *(Route.of(n, m, p, self._crm(h, write)) for n, m, p, h, write in crm),
        ]
        super().__init__(routes=routes)

    def provider_error(self, status: int, code: str, message: str) -> Reply:
        return _error(status, message, code)

    def world(self, portal_id: str | None = None) -> HubSpotWorld:
        return self.worlds[portal_id] if portal_id else next(iter(self.worlds.values()))

    def consent_as(self, portal_id: str, user: str = "owner@portal.example") -> None:
        """The person signed in at HubSpot's authorize page, who allows the app there."""
        self.accounts.consenting = Grant(portal_id, (), user)

    @property
    def authorize_url(self) -> str:
        return f"{self.url}/oauth/authorize"

    # -- OAuth ---------------------------------------------------------------------------------

    def _authorize(self, request: RecordedRequest) -> Reply:
        query = {k: v[0] for k, v in request.query.items()}
        scopes = tuple((query.get("scope") or "").split())
        if query.get("client_id") != self.accounts.client_id:
            return Reply(400, b"Unknown client_id", {"Content-Type": "text/plain"})
        if not scopes or not set(scopes) <= set(SCOPES):
            return Reply(400, b"The scopes asked for do not match the app's", {})
        redirect = query.get("redirect_uri") or ""
        code = self.accounts.consent(redirect, scopes)
        location = f"{redirect}?{urlencode({'code': code, 'state': query.get('state', '')})}"
        return Reply(302, b"", {"Location": location})

    def _token(self, request: RecordedRequest) -> Reply:
        form = dict(parse_qsl(request.raw_body.decode("utf-8", "replace")))
        status, body = self.accounts.token(form)
        return Reply(status, body)

    def _access(self, request: RecordedRequest) -> Reply:
        info = self.accounts.access_info(request.params["token"])
        if info is None:
            return _error(404, "access token not found or expired", "OBJECT_NOT_FOUND")
        return Reply(200, info)

    def _revoke(self, request: RecordedRequest) -> Reply:
        self.accounts.revoke(request.params["token"])
        return Reply(204, b"")

    # -- the CRM's gate: token, scope, limits ---------------------------------------------------

    def _crm(self, handler: Handler, write: bool) -> Callable[[RecordedRequest], Reply]:
        def respond(request: RecordedRequest) -> Reply:
            token = (request.header("authorization") or "").removeprefix("Bearer ")
            grant, refused = self.accounts.caller(token)
            if grant is None:
                return Reply(401, refused)
            kind = SCOPED.get(request.params["type"], "contacts")
            scope = f"crm.objects.{kind}.{'write' if write else 'read'}"
            if scope not in grant.scopes:
                return _error(
                    403,
                    "This app hasn't been granted all required scopes to make this call.",
                    "MISSING_SCOPES",
                    errors=[{"message": "One or more of the following scopes are required."}],
                    context={"requiredGranularScopes": [scope]},
                )
            over = self.accounts.take(grant.portal_id, search=request.route == "search")
            headers = self.accounts.headers(grant.portal_id)
            if over is not None:
                policy, wait = over
                body = api_error(
                    f"You have reached your {policy.lower()} limit.",
                    "RATE_LIMITS",
                    policyName=policy,
                    errorType="RATE_LIMIT",
                )
                return Reply(429, body, {**headers, "Retry-After": str(max(1, round(wait)))})
            reply = handler(request, self.worlds[grant.portal_id])
            return Reply(reply.status, reply.body, {**headers, **reply.headers})

        return respond

    # -- objects ---------------------------------------------------------------------------------

    def _list(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        limit = int((request.query.get("limit") or ["10"])[0])
        if not 1 <= limit <= MAX_PAGE:
            return _error(400, f"limit must be between 1 and {MAX_PAGE}", "VALIDATION_ERROR")
        after = (request.query.get("after") or [""])[0] or None
        if after is not None and not after.isdigit():
            return _error(400, "after is not a valid paging cursor", "VALIDATION_ERROR")
        objects, nxt = world.page(request.params["type"], after, limit)
        body: dict[str, Any] = {"results": [self._render(request, world, o) for o in objects]}
        if nxt is not None:
            body["paging"] = {"next": {"after": nxt, "link": f"?after={nxt}"}}
        return Reply(200, body)

    def _get(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        obj = world.get(request.params["type"], request.params["id"])
        if obj is None:
            return _error(404, "resource not found", "OBJECT_NOT_FOUND")
        return Reply(200, self._render(request, world, obj))

    def _archive(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        if world.get(request.params["type"], request.params["id"]) is not None:
            world.archive(request.params["type"], request.params["id"])
        return Reply(204, b"")  # HubSpot answers 204 for an id already gone too

    def _render(self, request: RecordedRequest, world: HubSpotWorld, obj: Obj) -> dict[str, Any]:
        return world.render(
            obj, _names(request, "properties"), _names(request, "propertiesWithHistory")
        )

    def _update(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        kind, object_id = request.params["type"], request.params["id"]
        properties = (request.body or {}).get("properties") or {}
        if world.get(kind, object_id) is None:
            return _error(404, "resource not found", "OBJECT_NOT_FOUND")
        invalid = world.refusal(kind, properties)
        if invalid:
            return _error(400, invalid, "VALIDATION_ERROR")
        obj = world.update(kind, object_id, properties, source="INTEGRATION")
        return Reply(200, world.render(obj, properties))

    def _create(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        made = self._make(world, request.params["type"], request.body or {})
        return made if isinstance(made, Reply) else Reply(201, world.render(made))

    def _make(self, world: HubSpotWorld, kind: str, item: Mapping[str, Any]) -> Obj | Reply:
        properties = item.get("properties") or {}
        invalid = world.refusal(kind, properties)
        links: list[tuple[str, str]] = []
        for association in item.get("associations") or []:
            to_id = str((association.get("to") or {}).get("id"))
            type_ids = {int(t.get("associationTypeId")) for t in association.get("types") or []}
            to_type = next(
                (
                    b
                    for (a, b), ids in ASSOCIATION_TYPES.items()
                    if a == kind and type_ids & set(ids)
                ),
                None,
            )
            if to_type is None or world.get(to_type, to_id) is None:
                invalid = f"association to {to_id} with types {sorted(type_ids)} is not valid"
            else:
                links.append((to_type, to_id))
        if invalid:
            return _error(400, invalid, "VALIDATION_ERROR")
        return world.create(kind, properties, source="INTEGRATION", links=links)

    def _inputs(self, request: RecordedRequest) -> list[Mapping[str, Any]] | Reply:
        inputs = list((request.body or {}).get("inputs") or [])
        if not inputs or len(inputs) > MAX_BATCH:
            return _error(400, f"a batch takes 1 to {MAX_BATCH} inputs", "VALIDATION_ERROR")
        return inputs

    def _batch_read(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        inputs = self._inputs(request)
        if isinstance(inputs, Reply):
            return inputs
        body = request.body or {}
        kind = request.params["type"]
        found, missing = [], []
        for item in inputs:
            obj = world.get(kind, str(item.get("id")))
            if obj is None:
                missing.append(str(item.get("id")))
            else:
                found.append(
                    world.render(
                        obj, body.get("properties") or [], body.get("propertiesWithHistory") or []
                    )
                )
        return _batch(world, found, missing, kind)

    def _bcreate(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        inputs = self._inputs(request)
        if isinstance(inputs, Reply):
            return inputs
        made = [self._make(world, request.params["type"], item) for item in inputs]
        refused = next((m for m in made if isinstance(m, Reply)), None)
        if refused is not None:
            return refused
        reply = _batch(world, [world.render(m) for m in made if isinstance(m, Obj)], [], "")
        return Reply(201, reply.body)

    def _bupdate(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        inputs = self._inputs(request)
        if isinstance(inputs, Reply):
            return inputs
        kind = request.params["type"]
        done, missing = [], []
        for item in inputs:
            object_id, properties = str(item.get("id")), item.get("properties") or {}
            if world.get(kind, object_id) is None:
                missing.append(object_id)
                continue
            invalid = world.refusal(kind, properties)
            if invalid:
                return _error(400, invalid, "VALIDATION_ERROR")
            obj = world.update(kind, object_id, properties, source="INTEGRATION")
            done.append(world.render(obj, properties))
        return _batch(world, done, missing, kind)

    def _search(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        body = request.body or {}
        try:
            objects, total, after = search(world, request.params["type"], body)
        except SearchRefused as refused:
            return _error(400, str(refused), "VALIDATION_ERROR")
        properties = body.get("properties") or []
        answer: dict[str, Any] = {
            "total": total,
            "results": [world.render(o, properties) for o in objects],
        }
        if after is not None:
            answer["paging"] = {"next": {"after": after}}
        return Reply(200, answer)

    # -- associations and pipelines -------------------------------------------------------------

    def _links(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        kind, to = request.params["type"], request.params["to"]
        if world.get(kind, request.params["id"]) is None or to not in OBJECT_TYPES:
            return _error(404, "resource not found", "OBJECT_NOT_FOUND")
        linked = world.linked(kind, request.params["id"], to)
        return Reply(200, {"results": [_to(i, k) for i, k in sorted(linked.items())]})

    def _batch_links(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        inputs = self._inputs(request)
        if isinstance(inputs, Reply):
            return inputs
        kind, to = request.params["type"], request.params["to"]
        results, missing = [], []
        for item in inputs:
            object_id = str(item.get("id"))
            linked = world.linked(kind, object_id, to) if world.get(kind, object_id) else {}
            if not linked:
                missing.append(object_id)
                continue
            results.append(
                {"from": {"id": object_id}, "to": [_to(i, k) for i, k in sorted(linked.items())]}
            )
        return _batch(world, results, missing, kind, what="associations")

    def _pipelines(self, request: RecordedRequest, world: HubSpotWorld) -> Reply:
        return Reply(200, {"results": world.pipelines})


def _to(to_id: str, type_ids: set[int]) -> dict[str, Any]:
    return {
        "toObjectId": int(to_id),
        "associationTypes": [
            {"category": "HUBSPOT_DEFINED", "typeId": t, "label": None} for t in sorted(type_ids)
        ],
    }


def _batch(
    world: HubSpotWorld,
    results: list[dict[str, Any]],
    missing: list[str],
    kind: str,
    *,
    what: str = "objects",
) -> Reply:
    body: dict[str, Any] = {
        "status": "COMPLETE",
        "results": results,
        "startedAt": world.now,
        "completedAt": world.now,
    }
    if not missing:
        return Reply(200, body)
    body["numErrors"] = 1
    body["errors"] = [
        {
            "status": "error",
            "category": "OBJECT_NOT_FOUND",
            "message": f"Could not get some {kind} {what}, they may be deleted or not exist.",
            "context": {"ids": missing},
        }
    ]
    return Reply(207, body)
