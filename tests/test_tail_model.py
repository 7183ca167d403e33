"""``colony.testing.tail_model``, the benchmarks' model: its latency has a tail, and its 429s
catch code that does not wait as told. The real ``OpenAIChatModel`` and ``StructuredRunner``
talk to it over real HTTP on 127.0.0.1; its clock is a fake one the runner's sleep advances,
so nothing really waits."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from colony.adapters.openai_chat import OpenAIChatModel
from colony.context import untrusted
from colony.contracts import OUTPUT_CONTRACTS, MissingData
from colony.errors import ProviderUnavailable
from colony.llm.runner import StructuredRunner
from colony.ports import Message, ModelRequest
from colony.testing.tail_model import LatencyModel, TailModelServer, content_key

BOUNDARY = "00c0ffee00c0ffee"

pytestmark = pytest.mark.usefixtures("no_ambient_config")


class FakeTime:
    """One clock for the server and the runner; sleeping moves it on at once."""

    def __init__(self) -> None:
        self.now, self._lock = 1000.0, threading.Lock()

    def clock(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def ask(contact: str, boundary: str = BOUNDARY) -> ModelRequest:
    """A request the offline model answers (``missing_data`` for ``contact``)."""
    task = {"missing_fields": ["contact.email"], "reason": f"{contact} has no email address."}
    return ModelRequest(
        model="gpt-4o",
        messages=(
            Message("system", f"You report what is missing.\n{untrusted.policy(boundary)}"),
            Message(
                "user",
                f"{contact} has no email address. What is missing?\n"
                + untrusted.block(boundary, json.dumps(task), source="task"),
            ),
        ),
        output_name="missing_data",
        output_schema=OUTPUT_CONTRACTS["missing_data"].model_json_schema(),
    )


def test_latencies_are_seeded_by_the_request_and_have_a_tail() -> None:
    model = LatencyModel(median_s=1.0, sigma=0.6, seed=37)
    draws = sorted(model.sample(f"request-{i}") for i in range(4000))
    again = sorted(LatencyModel(1.0, 0.6, 37).sample(f"request-{i}") for i in range(4000))
    assert draws == again  # the same requests wait the same, run after run
    p50, p95, p99 = (draws[int(q * len(draws))] for q in (0.5, 0.95, 0.99))
    assert 0.9 < p50 < 1.1 and 2.3 < p95 < 3.1 and p99 > 3.4  # a tail, not a constant
    assert model.sample("request-1", 0) != model.sample("request-1", 1)  # asked again: redrawn
    assert LatencyModel(1.0, 0.6, 38).sample("request-1") != model.sample("request-1")
    assert (model.describe()["p95_s"], LatencyModel(0.0).sample("request-1")) == (2.683, 0.0)


def test_a_request_is_known_by_what_it_asks_not_by_its_random_boundary() -> None:
    """Each call draws its own data boundary; the same chunk asked in two runs must draw the
    same latency, or a benchmark compares two runs' luck."""
    same = content_key(ask("P-001").messages)
    assert content_key(ask("P-001", boundary="5eed5eed5eed5eed").messages) == same
    assert content_key(ask("P-002").messages) != same


@contextmanager
def one_a_second(time: FakeTime) -> Iterator[tuple[TailModelServer, OpenAIChatModel]]:
    """The stand-in admitting one request a second, answering at once, and the real
    adapter talking to it."""
    with TailModelServer(
        LatencyModel(median_s=0.0), per_second=1, clock=time.clock, sleep=time.sleep
    ) as server:
        chat = OpenAIChatModel("sk-test", base_url=server.openai_base_url)
        try:
            yield server, chat
        finally:
            chat.close()


def test_a_runner_that_waits_as_told_is_answered_after_one_429() -> None:
    time = FakeTime()
    with one_a_second(time) as (server, chat):
        runner = StructuredRunner(chat, sleep=time.sleep)
        first = runner.run(ask("P-001"), MissingData)
        second = runner.run(ask("P-002"), MissingData)  # the same second: over the limit
        stats = server.take_stats()
    assert first.attempts == 1 and second.attempts == 2
    assert second.output is not None and second.output.missing_fields == ["contact.email"]
    assert time.now == 1001.0  # it waited exactly the Retry-After: until the slot freed
    assert (stats["answered"], stats["rate_limited_429"], stats["early_retries"]) == (2, 1, 0)


def test_a_runner_that_does_not_wait_is_caught_retrying_early() -> None:
    with one_a_second(FakeTime()) as (server, chat):
        StructuredRunner(chat).run(ask("P-001"), MissingData)
        impatient = StructuredRunner(chat, max_attempts=4, sleep=lambda _: None)
        with pytest.raises(ProviderUnavailable):
            impatient.run(ask("P-002"), MissingData)
        stats = server.take_stats()
    assert (stats["answered"], stats["rate_limited_429"], stats["early_retries"]) == (1, 4, 3)


def test_latency_is_drawn_per_request_and_reported() -> None:
    time = FakeTime()
    latency = LatencyModel(median_s=1.0, sigma=0.6, seed=5)
    with TailModelServer(latency, clock=time.clock, sleep=time.sleep) as server:
        chat = OpenAIChatModel("sk-test", base_url=server.openai_base_url)
        for contact in ("P-001", "P-002", "P-003"):
            chat.request(ask(contact))
        chat.close()
        stats = server.take_stats()
    assert stats["answered"] == 3 and stats["rate_limited_429"] == 0
    assert stats["latency_sum_s"] == pytest.approx(time.now - 1000.0, abs=1e-3)
    assert len({name for name, _ in stats["calls"]}) == 1 and stats["latency_max_s"] > 0
    assert server.take_stats()["answered"] == 0  # taken: the next run starts afresh
