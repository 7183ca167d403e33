"""The admin function's ICP, sequence library and settings endpoints, loaded from its real
``main.py`` by the functions-framework, against the real PostgreSQL: an org admin reads and
replaces each; a body with an unknown field or a rule that cannot work is a 422 naming it;
and another org's admin, a member, or no token is refused, recorded, changing nothing."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest

from colony.local.demo import read_json
from colony.local.tokens import ensure_local_keys
from colony.runtime.deps import set_deps_for_tests
from colony.settings import Settings
from colony.testing.inline import InlineTransport, local_deps
from tests.apps import org_settings, registered_app
from tests.conftest import PgDB

pytestmark = pytest.mark.covers("fn:admin")

ALPHA, BETA = "org_alpha", "org_beta"
DEMO_ICP = read_json("icp.json")
ICP = {k: DEMO_ICP[k] for k in ("description", "rubric", "anti_icp_rules", "tiers")}
SEQUENCES = {
    "sequences": [
        {
            "name": "Signal-led, top tier",
            "angle": "Signal",
            "tier": "T1",
            "steps": [
                {"channel": "email", "delay_days": 0, "guidance": "Open on the signal."},
                {"channel": "linkedin", "delay_days": 3, "guidance": "Connect, no pitch."},
                {"channel": "call", "delay_days": 4, "guidance": "Ten-minute call ask."},
            ],
        },
        {
            "name": "Pain, mid tier",
            "angle": "Pain",
            "tier": "T3",
            "steps": [{"channel": "email", "delay_days": 0, "guidance": "Name the pain."}],
        },
    ]
}
SETTINGS = {
    "competitors": ["CareSpace", "Facilio"],
    "sending": {"daily_cap": 150, "per_domain_hourly": 3, "sequence_approval": "once"},
    "research": {"enabled": False},  # issue 33: this org's prospects are not researched
    # issue 38: $250 a month, an alert at 75%, no new campaign work once it is spent
    "budget": {"monthly_usd": 250.0, "alert_share": 0.75, "hard_cap": True},
}


@dataclass
class Api:
    db: PgDB
    data_dir: Path
    client: Any

    def token(self, org: str, role: str | None = "org:admin") -> str:
        keys = ensure_local_keys(self.data_dir)
        now = datetime.now(UTC)
        claims: dict[str, Any] = {"sub": "user_1", "org_id": org, "iat": now}
        claims["exp"] = now + timedelta(hours=1)
        if role is not None:
            claims["org_role"] = role
        return jwt.encode(claims, keys.private_path.read_bytes(), algorithm="RS256")

    def call(self, method: str, path: str, token: str | None, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.client.open(path, method=method, json=body, headers=headers)

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return self.db.owner_rows(sql)

    def state(self) -> tuple[Any, ...]:
        return (
            self.rows(
                "SELECT org_id, version, description, active FROM icp_definitions ORDER BY 1, 2"
            ),
            self.rows(
                "SELECT org_id, name, angle, tier, step, channel FROM sequences ORDER BY 1, 3, 4, 5"
            ),
            self.rows("SELECT org_id, competitors, daily_send_cap FROM org_settings ORDER BY 1"),
        )

    def rejections(self) -> int:
        return len(self.rows("SELECT 1 FROM rejected_deliveries WHERE function = 'admin'"))


@pytest.fixture
def api(
    testdb: PgDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_ambient_config: None
) -> Iterator[Api]:
    settings = org_settings(testdb, tmp_path, ALPHA, BETA)
    set_deps_for_tests(local_deps(settings, testdb.app(), InlineTransport()))
    yield Api(testdb, tmp_path, registered_app("admin", monkeypatch))
    set_deps_for_tests(None)


@pytest.mark.covers("ENT-010")
def test_an_admin_replaces_the_icp_as_a_new_version(api: Api) -> None:
    token = api.token(ALPHA)
    empty = api.call("GET", f"/orgs/{ALPHA}/icp", token)
    assert empty.status_code == 200 and empty.get_json() == {"version": None, "icp": None}
    first = api.call("PUT", f"/orgs/{ALPHA}/icp", token, ICP)
    assert first.status_code == 200, first.get_json()
    assert first.get_json()["version"] == 1
    changed = {**ICP, "description": "A narrower ICP."}
    second = api.call("PUT", f"/orgs/{ALPHA}/icp", token, changed)
    assert second.get_json()["version"] == 2
    read = api.call("GET", f"/orgs/{ALPHA}/icp", token).get_json()
    assert read["version"] == 2 and read["icp"]["description"] == "A narrower ICP."
    assert read["icp"]["anti_icp_rules"] == ICP["anti_icp_rules"]
    versions = api.rows("SELECT version, active FROM icp_definitions ORDER BY version")
    assert versions == [{"version": 1, "active": False}, {"version": 2, "active": True}]
    assert api.call("GET", f"/orgs/{BETA}/icp", api.token(BETA)).get_json()["icp"] is None
    audited = api.rows("SELECT org_id, actor, channel, action, detail FROM audit_log ORDER BY id")
    rules = len(ICP["anti_icp_rules"])
    assert audited == [  # each replace, as its admin's, in the transaction that made it
        {
            "org_id": ALPHA,
            "actor": "user_1",
            "channel": "admin",
            "action": "icp.replace",
            "detail": {"version": version, "anti_icp_rules": rules},
        }
        for version in (1, 2)
    ]


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    body = copy.deepcopy(ICP)
    target: Any = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return body


@pytest.mark.parametrize(
    ("case", "body", "named"),
    [
        ("an unknown top-level field", {**ICP, "colour": "blue"}, "colour"),
        (
            "an unknown rule field",
            _with(("anti_icp_rules", 0, "severity"), "high"),
            "anti_icp_rules.0.severity",
        ),
        ("an unknown operator", _with(("anti_icp_rules", 0, "op"), "roughly"), "roughly"),
        ("a numeric op with a list", _with(("anti_icp_rules", 0, "value"), [1]), "AICP-01"),
        ("an 'in' with a number", _with(("anti_icp_rules", 1, "value"), 3), "AICP-02"),
        ("weights not out of 100", _with(("rubric", "size", "weight"), 90), "rubric"),
        ("an unreachable tier", _with(("tiers", 1, "min_score"), 95), "T2"),
        ("no tier from 0", _with(("tiers", 4, "min_score"), 5), "T5"),
        ("a tier that does not exist", _with(("tiers", 0, "tier"), "T9"), "tiers.0.tier"),
        ("no description", _with(("description",), ""), "description"),
    ],
)
def test_an_impossible_icp_is_a_422_that_says_which(
    api: Api, case: str, body: dict[str, Any], named: str
) -> None:
    before = api.state()
    answer = api.call("PUT", f"/orgs/{ALPHA}/icp", api.token(ALPHA), body)
    assert answer.status_code == 422, (case, answer.get_json())
    assert answer.get_json()["error"]["code"] == "unprocessable"
    assert named in answer.get_json()["error"]["message"], (case, answer.get_json())
    assert api.state() == before


@pytest.mark.covers("ENT-004")
def test_an_admin_replaces_the_sequence_library(api: Api) -> None:
    token = api.token(ALPHA)
    put = api.call("PUT", f"/orgs/{ALPHA}/sequences", token, SEQUENCES)
    assert put.status_code == 200, put.get_json()
    assert put.get_json()["steps"] == 4
    assert api.call("GET", f"/orgs/{ALPHA}/sequences", token).get_json() == {
        "sequences": [SEQUENCES["sequences"][1], SEQUENCES["sequences"][0]]  # by angle, tier
    }
    # a replace removes what it does not list
    only = {"sequences": SEQUENCES["sequences"][1:]}
    assert api.call("PUT", f"/orgs/{ALPHA}/sequences", token, only).status_code == 200
    assert api.rows("SELECT angle, step FROM sequences") == [{"angle": "Pain", "step": 1}]


@pytest.mark.parametrize(
    ("case", "mutate", "named"),
    [
        ("an unknown channel", lambda s: s[0]["steps"][0].update(channel="fax"), "channel"),
        ("a negative delay", lambda s: s[0]["steps"][1].update(delay_days=-1), "delay_days"),
        ("no channel", lambda s: s[0]["steps"][1].pop("channel"), "channel"),
        ("a delay as text", lambda s: s[0]["steps"][1].update(delay_days="3d"), "delay_days"),
        # a step's guidance must fit AGT-005's task budget (contracts.admin.GUIDANCE_CHARS)
        ("an overlong guidance", lambda s: s[0]["steps"][2].update(guidance="g" * 301), "guidance"),
        ("an unknown step field", lambda s: s[0]["steps"][0].update(tone="warm"), "tone"),
        ("no steps", lambda s: s[0].update(steps=[]), "steps"),
        ("an unknown angle", lambda s: s[0].update(angle="Flattery"), "angle"),
        ("two for one angle x tier", lambda s: s[1].update(angle="Signal", tier="T1"), "Signal"),
        ("a name used twice", lambda s: s[1].update(name=s[0]["name"]), "twice"),
    ],
)
def test_an_impossible_sequence_library_is_a_422(
    api: Api, case: str, mutate: Any, named: str
) -> None:
    body = copy.deepcopy(SEQUENCES)
    mutate(body["sequences"])
    before = api.state()
    answer = api.call("PUT", f"/orgs/{ALPHA}/sequences", api.token(ALPHA), body)
    assert answer.status_code == 422, (case, answer.get_json())
    assert named in answer.get_json()["error"]["message"], (case, answer.get_json())
    assert api.state() == before


def test_an_admin_sets_competitors_and_sending_limits(api: Api) -> None:
    token = api.token(ALPHA)
    defaults = api.call("GET", f"/orgs/{ALPHA}/settings", token).get_json()
    assert defaults == {
        "competitors": [],
        "sending": {"daily_cap": 200, "per_domain_hourly": 5, "sequence_approval": "each_step"},
        "research": {"enabled": True},
        "budget": {"monthly_usd": None, "alert_share": 0.8, "hard_cap": True},
    }
    put = api.call("PUT", f"/orgs/{ALPHA}/settings", token, SETTINGS)
    assert put.status_code == 200 and put.get_json() == SETTINGS
    assert api.call("GET", f"/orgs/{ALPHA}/settings", token).get_json() == SETTINGS
    assert api.call("GET", f"/orgs/{BETA}/settings", api.token(BETA)).get_json() == defaults
    too_fast = {**SETTINGS, "sending": {"daily_cap": 10, "per_domain_hourly": 11}}
    refused = api.call("PUT", f"/orgs/{ALPHA}/settings", token, too_fast)
    assert (
        refused.status_code == 422 and "per_domain_hourly" in refused.get_json()["error"]["message"]
    )
    twice = {**SETTINGS, "competitors": ["CareSpace", "carespace"]}
    assert api.call("PUT", f"/orgs/{ALPHA}/settings", token, twice).status_code == 422
    unknown = {**SETTINGS, "sending": {**SETTINGS["sending"], "sequence_approval": "never"}}
    refused = api.call("PUT", f"/orgs/{ALPHA}/settings", token, unknown)
    assert refused.status_code == 422
    assert "sequence_approval" in refused.get_json()["error"]["message"]
    extra = {**SETTINGS, "retention": {}}
    assert api.call("PUT", f"/orgs/{ALPHA}/settings", token, extra).status_code == 422
    for budget, field in (
        ({"monthly_usd": 0}, "budget.monthly_usd"),
        ({"monthly_usd": 100, "alert_share": 1.5}, "budget.alert_share"),
        ({"monthly_usd": 100, "currency": "EUR"}, "budget.currency"),
    ):
        refused = api.call("PUT", f"/orgs/{ALPHA}/settings", token, {**SETTINGS, "budget": budget})
        assert refused.status_code == 422 and field in refused.get_json()["error"]["message"]
    assert api.call("GET", f"/orgs/{ALPHA}/settings", token).get_json() == SETTINGS
    # a replace without a budget has none: the whole settings object is replaced
    without = {k: v for k, v in SETTINGS.items() if k != "budget"}
    put = api.call("PUT", f"/orgs/{ALPHA}/settings", token, without)
    assert put.get_json()["budget"] == defaults["budget"]


BODIES = {"icp": ICP, "sequences": SEQUENCES, "settings": SETTINGS}


@pytest.mark.parametrize("what", ["icp", "sequences", "settings"])
@pytest.mark.parametrize("method", ["GET", "PUT"])
@pytest.mark.parametrize(
    ("case", "caller", "status"),
    [
        ("another org's admin", (BETA, "org:admin"), 403),
        ("a member, not an admin", (ALPHA, "org:member"), 403),
        ("no role claim", (ALPHA, None), 403),
        ("no token", None, 401),
        ("a garbage token", "not-a-jwt", 401),
    ],
)
def test_cross_org_and_non_admin_callers_are_refused(
    api: Api, what: str, method: str, case: str, caller: Any, status: int
) -> None:
    # alpha has data of each kind, so a leak or a write would show
    admin = api.token(ALPHA)
    for kind, body in BODIES.items():
        assert api.call("PUT", f"/orgs/{ALPHA}/{kind}", admin, body).status_code == 200
    before, recorded = api.state(), api.rejections()
    token = api.token(*caller) if isinstance(caller, tuple) else caller
    body = BODIES[what] if method == "PUT" else None
    answer = api.call(method, f"/orgs/{ALPHA}/{what}", token, body)
    assert answer.status_code == status, (case, answer.get_json())
    assert set(answer.get_json()) == {"error"}
    assert api.rejections() == recorded + 1
    assert api.state() == before


def test_an_unknown_org_is_a_404(api: Api) -> None:
    answer = api.call("GET", "/orgs/org_nobody/settings", api.token("org_nobody"))
    assert answer.status_code == 404
    assert api.call("DELETE", f"/orgs/{ALPHA}/icp", api.token(ALPHA)).status_code == 405


@pytest.mark.covers("CONST-006", "KC-06")
def test_const_006_keeps_out_the_orgs_own_competitors_too(api: Api) -> None:
    """The message generator and the content agent ask ``flows.tenants.org_admin.competitors``: the
    org's settings, then KC-06's tagged names; the fallback only when neither has any."""
    from colony.adapters.embedding import OfflineHashEmbedder
    from colony.flows.tenants.org_admin import competitors
    from colony.knowledge import ChunkIn, KnowledgeStore

    db = api.db.app()
    knowledge = KnowledgeStore(db, OfflineHashEmbedder(dim=api.db.dim))
    deps = local_deps(Settings.from_env({}), db, InlineTransport(), knowledge=knowledge)
    fallback = ("Default Rival",)
    assert competitors(deps, ALPHA, fallback) == ["Default Rival"]
    chunk = ChunkIn("KC-06", "Landscape.", title="KC-06", tags={"competitors": "FacilityIQ"})
    knowledge.sync_source(ALPHA, "seed", "KC-06/landscape", [chunk])
    assert competitors(deps, ALPHA, fallback) == ["FacilityIQ"]
    put = api.call("PUT", f"/orgs/{ALPHA}/settings", api.token(ALPHA), SETTINGS)
    assert put.status_code == 200
    assert competitors(deps, ALPHA, fallback) == ["CareSpace", "Facilio", "FacilityIQ"]
    assert competitors(deps, BETA, fallback) == ["Default Rival"]  # alpha's list stays alpha's
