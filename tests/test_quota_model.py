"""The quota stand-in (``colony.testing.quota_model``) holds its limits over a sliding minute
as a provider does, answers 429 with ``Retry-After`` past them, and logs every request with the
key it came with: what the fairness benchmark counts and prices.

Real parts: the production ``OpenAIChatModel`` (the official SDK) over HTTP to it.
"""

from __future__ import annotations

import pytest

from colony.adapters.openai_chat import OpenAIChatModel
from colony.errors import ProviderRateLimited
from colony.ports import Message, ModelRequest
from colony.testing.quota_model import QuotaModelServer, SimClock

REQUEST = ModelRequest(
    model="gpt-4o-mini",
    messages=(Message("user", "x" * 400),),  # 100 tokens by the stand-in's estimate
    output_name="missing_data",
    output_schema={"type": "object", "properties": {"kind": {"type": "string"}}},
)


def test_requests_and_tokens_are_held_to_a_sliding_minute() -> None:
    clock = SimClock(100.0)
    with QuotaModelServer(per_minute=2, tokens_per_minute=1_000, clock=clock) as server:
        org_a = OpenAIChatModel(api_key="sk-org_a", base_url=server.openai_base_url)
        org_b = OpenAIChatModel(api_key="sk-org_b", base_url=server.openai_base_url)
        answered = org_a.request(REQUEST)
        assert answered.usage.tokens_in == 100
        clock.now += 30.0
        org_b.request(REQUEST)
        clock.now += 10.0
        with pytest.raises(ProviderRateLimited) as refused:  # a third within the minute
            org_a.request(REQUEST)
        assert refused.value.retry_after == pytest.approx(20.0, abs=0.01)  # the first's turn
        clock.now += 20.0
        org_a.request(REQUEST)  # the first has left the window
        summary = server.summary()
    assert summary["answered"] == 3 and summary["refused_429"] == 1
    assert summary["per_key"] == {
        "sk-org_a": {"answered": 2, "refused_429": 1},
        "sk-org_b": {"answered": 1, "refused_429": 0},
    }
    assert [e.at for e in server.log] == [100.0, 130.0, 140.0, 160.0]


def test_a_minute_of_tokens_is_a_limit_too() -> None:
    clock = SimClock()
    with QuotaModelServer(per_minute=100, tokens_per_minute=250, clock=clock) as server:
        model = OpenAIChatModel(api_key="sk-org_a", base_url=server.openai_base_url)
        model.request(REQUEST)
        model.request(REQUEST)
        with pytest.raises(ProviderRateLimited):  # a third 100-token prompt passes 250
            model.request(REQUEST)
    assert [e.status for e in server.log] == [200, 200, 429]
