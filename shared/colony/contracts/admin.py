"""What the admin API (and the CLI) accept: an org's ICP definition, its sequence library
(ENT-004) and its settings. Each model refuses an unknown field; the validators refuse a
definition that cannot work (a tier no score reaches, rubric weights that do not add up to
the 100-point score, two sequences for one angle x tier), naming what is wrong. Anti-ICP
rule semantics (operators and their values) are checked by ``colony.policy.anti_icp``."""

from __future__ import annotations

from email.utils import parseaddr
from itertools import pairwise
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, StringConstraints, model_validator

from colony.contracts.common import TIERS, OutboundAngle, SequenceChannel, SequenceTier, Strict

Channel = SequenceChannel
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)]
# A step's guidance is an instruction in AGT-005's task section (300 tokens, SPEC §5), which it
# shares with the template and the org's competitor list: this many characters of it fit that
# budget beside three competitor names, even counted with an estimate's 10% margin
# (tests/test_sequence_steps.py).
GUIDANCE_CHARS = 300
Guidance = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=GUIDANCE_CHARS)
]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
SCORE_POINTS = 100  # a contact's ICP score is out of 100 (contacts.icp_score)


class AntiIcpRule(Strict):
    id: Name
    field: Name
    op: str
    value: Any = None
    reason: Text


class TierBand(Strict):
    """A score band (``colony.policy.tiering``): scores from ``min_score`` up fall in ``tier``;
    ``outcome`` overrides the default rule (T1/T2 qualify, the lowest band disqualifies, the
    rest hold)."""

    tier: SequenceTier
    min_score: int = Field(ge=0, le=SCORE_POINTS)
    outcome: Literal["qualify", "hold", "disqualify"] | None = None


class RubricDimension(Strict):
    """One scored dimension: its weight and how to score it (free-form, for AGT-004)."""

    model_config = Strict.model_config | {"extra": "allow"}
    weight: int = Field(ge=0, le=SCORE_POINTS)
    criteria: Text


class IcpReplace(Strict):
    """The whole ICP definition (ENT-010): a replace writes it as the org's new version."""

    description: Text
    rubric: dict[Name, RubricDimension] = Field(min_length=1, max_length=20)
    anti_icp_rules: list[AntiIcpRule] = Field(default_factory=list, max_length=200)
    tiers: list[TierBand] = Field(min_length=1, max_length=len(TIERS))

    @model_validator(mode="after")
    def _possible(self) -> IcpReplace:
        total = sum(d.weight for d in self.rubric.values())
        if total != SCORE_POINTS:
            raise ValueError(f"rubric: the weights add up to {total}, not {SCORE_POINTS}")
        names = [t.tier for t in self.tiers]
        if len(set(names)) != len(names):
            raise ValueError("tiers: a tier is listed twice")
        ordered = sorted(self.tiers, key=lambda t: TIERS.index(t.tier))
        for higher, lower in pairwise(ordered):
            if lower.min_score >= higher.min_score:
                raise ValueError(
                    f"tiers: {lower.tier} needs a lower min_score than {higher.tier}"
                    f" ({lower.min_score} >= {higher.min_score}), or no score reaches it"
                )
        if ordered[-1].min_score != 0:
            raise ValueError(f"tiers: the last tier ({ordered[-1].tier}) must start at 0")
        return self


class SequenceStepIn(Strict):
    """One step as its org writes it: how it reaches the contact (an email we send; a
    LinkedIn message or a call, which are tasks for a person), how many days after the step
    before it (the first: after the campaign reaches the contact), and what to say."""

    channel: Channel
    delay_days: int = Field(ge=0, le=365)
    guidance: Guidance


class SequenceIn(Strict):
    name: Name
    angle: OutboundAngle
    tier: SequenceTier
    steps: list[SequenceStepIn] = Field(min_length=1, max_length=20)


class SequenceLibrary(Strict):
    """The whole sequence library: a replace removes every sequence not listed."""

    sequences: list[SequenceIn] = Field(max_length=len(TIERS) * 5)

    @model_validator(mode="after")
    def _unique(self) -> SequenceLibrary:
        seen: set[tuple[str, str]] = set()
        names: set[str] = set()
        for index, s in enumerate(self.sequences):
            if (s.angle, s.tier) in seen:
                raise ValueError(f"sequences.{index}: a second sequence for {s.angle} x {s.tier}")
            if s.name.lower() in names:
                raise ValueError(f"sequences.{index}: the name {s.name!r} is used twice")
            seen.add((s.angle, s.tier))
            names.add(s.name.lower())
        return self


class SendingLimits(Strict):
    daily_cap: int = Field(ge=0, le=100_000)  # messages per day, the whole org
    per_domain_hourly: int = Field(ge=0, le=100_000)  # per recipient domain, per hour
    # Who approves a sequence's later steps: a person, each one ("each_step"), or the person
    # who approved step 1, for the whole sequence ("once"; a flagged draft still waits).
    sequence_approval: Literal["each_step", "once"] = "each_step"
    # Who the org's mail is from ("Ada Lovelace <ada@acme.com>"), on one of its sending
    # domains (issue 39 item 3); None: the deployment's COLONY_MAIL_FROM.
    mail_from: str | None = Field(default=None, min_length=3, max_length=320)

    @model_validator(mode="after")
    def _possible(self) -> SendingLimits:
        if self.per_domain_hourly > self.daily_cap:
            raise ValueError("sending.per_domain_hourly: cannot exceed daily_cap")
        if self.mail_from is not None:
            address = parseaddr(self.mail_from)[1]
            local, _, domain = address.rpartition("@")
            if not local or "." not in domain or any(c in self.mail_from for c in "\r\n"):
                raise ValueError("sending.mail_from: not an address (Name <name@example.com>)")
        return self


class ResearchSettings(Strict):
    # Research prospects' companies on the open web before AGT-003 (issue 33); an org whose
    # prospects arrive researched, or that will not have their sites read, turns it off.
    enabled: bool = True


class SendingDomainAdd(Strict):
    """A domain an org's mail is to be sent from (issue 39 item 3); whether it is a domain
    name, and what its DNS says, is the flow's to judge (``flows.outbound.sending_domains``)."""

    domain: str = Field(min_length=1, max_length=300)


class BudgetSettings(Strict):
    """What the org may spend on model calls in a calendar month (UTC), in USD (issue 38):
    none (``monthly_usd`` null), or an alert once the month's spend reaches ``alert_share``
    of it and, with ``hard_cap``, no new campaign work once it reaches the whole
    (``colony.flows.tenants.budget``; docs/costs.md)."""

    monthly_usd: float | None = Field(default=None, gt=0, le=10_000_000)
    alert_share: float = Field(default=0.8, gt=0, le=1)
    hard_cap: bool = True


class OrgSettingsReplace(Strict):
    competitors: list[Name] = Field(max_length=200)  # CONST-006: never named in outbound
    sending: SendingLimits
    research: ResearchSettings = Field(default_factory=ResearchSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)

    @model_validator(mode="after")
    def _unique(self) -> OrgSettingsReplace:
        lowered = [c.lower() for c in self.competitors]
        if len(set(lowered)) != len(lowered):
            raise ValueError("competitors: a name is listed twice")
        return self


NotionId = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, pattern=r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$"
    ),
]
NotionKc = Literal["KC-01", "KC-02", "KC-03", "KC-04", "KC-05", "KC-06", "KC-07"]


class NotionConnect(Strict):
    """Connect a Notion workspace: its id (as Notion's events name it), the integration's
    access token for it (stored in Secret Manager, never echoed or logged), and which of its
    databases (or single pages) feed which Knowledge Core domain (KC-01..07). The token
    proves the rest: it must be that workspace's and read every mapped id
    (``flows.knowledge.notion_workspaces``)."""

    workspace_id: Annotated[
        str, StringConstraints(strip_whitespace=True, pattern=r"^[A-Za-z0-9_-]{1,100}$")
    ]
    token: SecretStr = Field(min_length=1, max_length=500)
    domains: dict[NotionId, NotionKc] = Field(min_length=1, max_length=50)


class DriveWatch(Strict):
    """Watch the org's recordings (Meet Notes) folder: Drive notifies the recording webhook."""

    folder_id: Annotated[
        str, StringConstraints(strip_whitespace=True, pattern=r"^[A-Za-z0-9_-]{1,200}$")
    ]


class CrmCallback(Strict):
    """What HubSpot's redirect handed the person's browser, posted back by our page with
    the person's own session: the authorization ``code`` and the ``state`` our connect began
    (both credentials of a kind: never echoed or logged)."""

    code: SecretStr = Field(min_length=1, max_length=512)
    state: SecretStr = Field(min_length=1, max_length=200)


CrmId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")]
DealStage = Literal["discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost"]


class CrmStageEntry(Strict):
    """One CRM pipeline stage and the deal stage of ours it means (None: remove the mapping;
    deals synced in that stage afterwards wait, flagged, for a new one)."""

    pipeline_id: CrmId
    stage_id: CrmId
    stage: DealStage | None


class CrmStageMapping(Strict):
    """An admin's edit of the org's stage mapping (``PUT /orgs/{org}/crm/hubspot/stages``)."""

    stages: list[CrmStageEntry] = Field(min_length=1, max_length=500)
