"""Tiering is policy (issue 19 item 2): the model proposes a score, the org's bands decide.

Pure tests of ``colony.policy.tiering``, then one flow test against the real embedded
PostgreSQL: the same contact, the same proposed score, and the tier and outcome follow the
bands the org's admin set through its ICP settings (``flows.tenants.org_admin.replace_icp``, what
``PUT /orgs/{org}/icp`` and the CLI call).
"""

from __future__ import annotations

import pytest

from colony.contracts.admin import IcpReplace
from colony.flows.campaigns import campaign
from colony.flows.tenants import org_admin as org_admin_flow
from colony.local.demo import read_json
from colony.policy.tiering import DEFAULT_BANDS, decide_tier
from colony.store import fetch_one
from colony.testing.inline import run_until_idle
from tests.conftest import PgDB
from tests.test_campaign_flow import ORG, make_deps

pytestmark = pytest.mark.covers("AGT-004", "ENT-010")

DEMO_BANDS = read_json("icp.json")["tiers"]


@pytest.mark.parametrize(
    ("score", "tier", "outcome"),
    [
        (100, "T1", "qualify"),
        (80, "T1", "qualify"),
        (79, "T2", "qualify"),
        (65, "T2", "qualify"),
        (64, "T3", "hold"),
        (35, "T4", "hold"),
        (34, "T5", "disqualify"),
        (0, "T5", "disqualify"),
    ],
)
def test_demo_bands_decide_tier_and_outcome(score: int, tier: str, outcome: str) -> None:
    decided = decide_tier(score, DEMO_BANDS)
    assert (decided.tier, decided.recommendation) == (tier, outcome)
    assert decided.rule.startswith(f"band {tier} ")


def test_a_bands_own_outcome_overrides_the_default_rule() -> None:
    bands = [
        {"tier": "T1", "min_score": 90},
        {"tier": "T3", "min_score": 50, "outcome": "qualify"},
        {"tier": "T5", "min_score": 0, "outcome": "hold"},
    ]
    assert decide_tier(60, bands).as_dict() == {
        "tier": "T3",
        "recommendation": "qualify",
        "rule": "band T3 (min 50), the org's outcome",
    }
    assert decide_tier(10, bands).recommendation == "hold"  # the lowest band, told to hold


def test_disqualifiers_win_and_no_bands_means_the_defaults() -> None:
    assert decide_tier(0, DEMO_BANDS, ["AICP-01"]).as_dict() == {
        "tier": "T5",
        "recommendation": "disqualify",
        "rule": "anti-ICP AICP-01",
    }
    assert decide_tier(70, []) == decide_tier(70, DEFAULT_BANDS)
    assert decide_tier(70, [{"tier": 3}]).tier == "T2"  # unusable bands: the defaults


def _qualify(deps, contact_id: str) -> dict:
    campaign_id = campaign.create_campaign(
        deps, ORG, name="tiers", angle="Signal", tier="T1", contact_ids=[contact_id]
    )
    campaign.launch(deps, ORG, campaign_id)
    stats = run_until_idle(deps, deps.transport)
    assert not stats.dead_letters and not stats.rejected
    with deps.db.transaction(ORG) as cur:
        row = fetch_one(
            cur,
            "SELECT icp_score, icp_tier, icp_recommendation FROM contacts WHERE id = %s",
            (contact_id,),
        )
    assert row is not None
    return row


def test_an_org_changing_its_bands_changes_the_tier_for_the_same_score(testdb: PgDB) -> None:
    deps = make_deps(testdb)
    with deps.db.transaction(ORG) as cur:
        found = fetch_one(cur, "SELECT id FROM contacts WHERE external_id = 'P-018'")
    assert found is not None
    # P-018 scores 73 (KC-02's worked example): T2 under the demo bands, so it qualifies.
    before = _qualify(deps, found["id"])
    assert before == {"icp_score": 73, "icp_tier": "T2", "icp_recommendation": "qualify"}

    icp = read_json("icp.json")
    stricter = [
        {"tier": "T1", "min_score": 90},
        {"tier": "T2", "min_score": 85},
        {"tier": "T3", "min_score": 70, "outcome": "hold"},
        {"tier": "T5", "min_score": 0},
    ]
    body = {k: icp[k] for k in ("description", "rubric", "anti_icp_rules")} | {"tiers": stricter}
    org_admin_flow.replace_icp(deps, ORG, IcpReplace.model_validate(body))

    after = _qualify(deps, found["id"])
    assert after == {"icp_score": 73, "icp_tier": "T3", "icp_recommendation": "hold"}
