"""What ``make eval-local`` measures of each call, and the figures per agent it reports.

``Metered`` wraps the ``ChatModel`` the runner calls, so every request is seen, the ones of a
call that ends in an error included (a repair, a truncated answer asked again, a timeout):
its wall time, its tokens as the server counted them, and how it finished. A case is one
``call_agent`` (``CaseResult``); ``figures`` sums the cases of an agent.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from colony.ports import ChatModel, ModelRequest, ModelResponse, TextSink

# How a case ended: a valid contract at once or after its one repair, or the error it raised.
OUTCOMES = (
    "valid",
    "repaired",
    "invalid",
    "truncated",
    "refused",
    "missing_data",
    "timeout",
    "provider_error",
)


@dataclass(frozen=True)
class Sent:
    """One request to the server: how long it took, what it cost, how it ended."""

    seconds: float
    tokens_in: int = 0
    tokens_out: int = 0
    finish: str = "error"  # stop | length | refused | error (no answer: a timeout, a 5xx)


class Metered:
    """A ``ChatModel`` that keeps a ``Sent`` of every request it passes on (``take``)."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self._sent: list[Sent] = []

    def request(self, request: ModelRequest) -> ModelResponse:
        started = time.monotonic()
        try:
            response = self.inner.request(request)
        except Exception:
            self._sent.append(Sent(time.monotonic() - started))
            raise
        usage = response.usage
        self._sent.append(
            Sent(time.monotonic() - started, usage.tokens_in, usage.tokens_out, response.finish)
        )
        return response

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        raise NotImplementedError("eval-local's agents are answered whole, never streamed")

    def take(self) -> list[Sent]:
        """The requests since the last ``take``."""
        sent, self._sent = self._sent, []
        return sent


@dataclass(frozen=True)
class CaseResult:
    agent: str
    contact: str
    outcome: str  # one of OUTCOMES
    seconds: float  # the whole call_agent: every request, the repair included
    sent: tuple[Sent, ...]
    detail: str = ""  # the error's summary, or what a valid answer was judged to be
    notes: dict[str, Any] = field(default_factory=dict)  # per agent: quotes kept, tier, …

    @property
    def repairs(self) -> int:
        """Requests that followed a whole answer: the runner asks again only to repair one."""
        return sum(1 for before in self.sent[:-1] if before.finish == "stop")

    @property
    def truncations(self) -> int:
        return sum(1 for s in self.sent if s.finish == "length")

    @property
    def refusals(self) -> int:
        return sum(1 for s in self.sent if s.finish == "refused")


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 for no values)."""
    if not values:
        return 0.0
    ranked = sorted(values)
    return ranked[max(0, math.ceil(q / 100 * len(ranked)) - 1)]


def figures(cases: Sequence[CaseResult], window: float | None = None) -> dict[str, Any]:
    """One agent's figures: outcomes, the valid-contract rate, repairs, truncations,
    refusals, latency per call (p50/p95), tokens as the server counted them, and how many
    calls ended within ``window`` (its function's model window: a run without the window
    still says which answers a deployed function would have had in time)."""
    sent = [s for c in cases for s in c.sent]
    answered = [s for s in sent if s.finish != "error"]
    valid = sum(c.outcome in ("valid", "repaired") for c in cases)
    seconds_out = sum(s.seconds for s in answered)
    tokens_out = sum(s.tokens_out for s in sent)
    return {
        "cases": len(cases),
        "outcomes": {o: n for o in OUTCOMES if (n := sum(c.outcome == o for c in cases))},
        "valid_rate": round(valid / len(cases), 3) if cases else 0.0,
        "requests": len(sent),
        "repairs": sum(c.repairs for c in cases),
        "truncations": sum(c.truncations for c in cases),
        "refusals": sum(c.refusals for c in cases),
        "latency_s": {
            "p50": round(percentile([c.seconds for c in cases], 50), 1),
            "p95": round(percentile([c.seconds for c in cases], 95), 1),
        },
        "within_window": sum(c.seconds <= window for c in cases) if window else None,
        "tokens": {
            "in": sum(s.tokens_in for s in sent),
            "out": tokens_out,
            "out_per_s": round(tokens_out / seconds_out, 1) if seconds_out else 0.0,
        },
    }


def table(per_agent: dict[str, dict[str, Any]]) -> str:
    """The figures as the Markdown table docs/quality.md keeps."""
    rows = [
        "| agent | cases | valid contract | repairs | truncated / refused | timeouts | other"
        " failures | latency p50 / p95 (s) | within the window | tokens in / out |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for agent, f in per_agent.items():
        outcomes = f["outcomes"]
        valid = outcomes.get("valid", 0) + outcomes.get("repaired", 0)
        other = sum(n for o, n in outcomes.items() if o not in ("valid", "repaired", "timeout"))
        rows.append(
            f"| {agent} | {f['cases']} | {valid} ({f['valid_rate']:.0%}) | {f['repairs']}"
            f" | {f['truncations']} / {f['refusals']} | {outcomes.get('timeout', 0)}"
            f" | {other} | {f['latency_s']['p50']} / {f['latency_s']['p95']}"
            f" | {'-' if f['within_window'] is None else f['within_window']}"
            f" | {f['tokens']['in']} / {f['tokens']['out']} |"
        )
    return "\n".join(rows)
