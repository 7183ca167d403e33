"""Score → tier, and what a tier means for the contact's chain (AGT-004; a model proposes,
policy decides).

AGT-004 proposes a 0-100 score and its reasons; the tier and whether the contact goes on to
a draft are decided here, from the org's own bands: the ``tiers`` of its active ICP
definition (ENT-010), which its admins replace through ``PUT /orgs/{org}/icp`` or
``colony org icp set``. Each band is ``{tier, min_score, outcome?}``:

- the tier is the band with the highest ``min_score`` the score meets (the lowest band when
  none is met, so a malformed definition still lands somewhere visible);
- the outcome is the band's own ``outcome`` when the org gave one; otherwise the default
  rule: T1 and T2 ``qualify``, the lowest band ``disqualify``, any other ``hold``;
- any anti-ICP disqualifier (CONST-002) is ``disqualify`` at score 0, whatever the bands;
- an org with no bands on record gets ``DEFAULT_BANDS``.

Pure: no I/O, no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Outcome = Literal["qualify", "hold", "disqualify"]
OUTCOMES: tuple[str, ...] = ("qualify", "hold", "disqualify")
QUALIFYING_TIERS = ("T1", "T2")  # the default rule, for a band without its own outcome

# The demo org's bands (local/demo/icp.json): what an org without any gets.
DEFAULT_BANDS: tuple[Mapping[str, Any], ...] = (
    {"tier": "T1", "min_score": 80},
    {"tier": "T2", "min_score": 65},
    {"tier": "T3", "min_score": 50},
    {"tier": "T4", "min_score": 35},
    {"tier": "T5", "min_score": 0},
)


@dataclass(frozen=True)
class TierDecision:
    """What policy made of a proposed score: the tier, the outcome and the rule that set it."""

    tier: str
    recommendation: Outcome
    rule: str  # e.g. "band T2 (min 65), default rule" or "anti-ICP AICP-01"

    def as_dict(self) -> dict[str, str]:
        return {"tier": self.tier, "recommendation": self.recommendation, "rule": self.rule}


def _bands(declared: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    usable = [
        b
        for b in declared or ()
        if isinstance(b, Mapping)
        and isinstance(b.get("tier"), str)
        and isinstance(b.get("min_score"), int | float)
    ]
    return sorted(usable or DEFAULT_BANDS, key=lambda b: -float(b["min_score"]))


def decide_tier(
    score: int,
    bands: Sequence[Mapping[str, Any]] | None,
    disqualifiers: Sequence[str] = (),
) -> TierDecision:
    """The tier and outcome for ``score`` under the org's ``bands``."""
    ordered = _bands(bands)
    lowest = ordered[-1]
    if disqualifiers:
        return TierDecision(
            str(lowest["tier"]), "disqualify", f"anti-ICP {', '.join(disqualifiers)}"
        )
    band = next((b for b in ordered if score >= float(b["min_score"])), lowest)
    name = str(band["tier"])
    where = f"band {name} (min {band['min_score']:g})"
    own = band.get("outcome")
    if own in OUTCOMES:
        return TierDecision(name, own, f"{where}, the org's outcome")
    if name in QUALIFYING_TIERS:
        outcome: Outcome = "qualify"
    elif band is lowest:
        outcome = "disqualify"
    else:
        outcome = "hold"
    return TierDecision(name, outcome, f"{where}, default rule")
