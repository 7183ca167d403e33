"""A model for benchmarks that does not flatter: the offline model's answers over OpenAI's
wire, behind a seeded latency with a tail and a request-rate limit answered with 429s.

A benchmark whose model answers every call in the same time, never refusing one, measures
its scheduler's best case: N workers finish N equal calls in one latency, so "parallel vs
serial" comes out at 1/N by construction (issue 37 item 5). A real provider answers in a
right-skewed time (a few calls take several times the median, and the slowest one bounds a
parallel fan-out) and refuses requests past its rate limit with 429 and ``Retry-After``.

``TailModelServer`` is a ``WireServer`` answering ``POST /v1/chat/completions``, so the code
under test reaches it through its real ``OpenAIChatModel`` (``COLONY_LLM_PROVIDER=openai``,
``COLONY_OPENAI_BASE_URL``, any ``OPENAI_API_KEY``): the adapter's reading of the 429 and
the runner's waiting are measured too.

- The answer is ``OfflineChatModel``'s for the same messages and output contract (answers
  are whole: a streamed request is refused, as no benchmark using this one streams).
- Its latency is drawn from ``LatencyModel``: lognormal with the given median and shape
  ``sigma`` (0.6: the 95th percentile ~2.7x the median, the 99th ~4x), seeded by what the
  request asks (its messages, less the random data boundary) and how many times it was asked
  since ``take_stats``, so the same request waits the same whatever the order calls arrive
  in, and in each run a benchmark compares.
- With ``per_second`` set, a request arriving when that many were admitted in the last second
  is answered 429 with ``retry-after-ms`` and ``Retry-After`` saying when a slot frees. One
  that comes back before it was told is counted in ``early_retries`` (and refused again if
  still over the limit): code that honours ``Retry-After`` leaves it at 0.

``take_stats`` reports what was answered since it was last called: the latencies drawn
(p50, p95, max, sum), the 429s sent and the early retries.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from colony.adapters.offline import OfflineChatModel
from colony.contracts import OUTPUT_CONTRACTS
from colony.ports import Message, ModelRequest
from colony.testing.wire import Reply, Route, WireServer, error_reply, openai_chat_reply


@dataclass(frozen=True, slots=True)
class LatencyModel:
    """Seconds a model takes to answer: lognormal, ``median_s`` and ``sigma``, seeded."""

    median_s: float = 1.0
    sigma: float = 0.6
    seed: int = 37

    def sample(self, key: str, n: int = 0) -> float:
        """The latency of the ``n``-th asking of the request ``key`` (0 with a 0 median)."""
        if self.median_s <= 0:
            return 0.0
        rng = random.Random(f"{self.seed}:{key}:{n}")  # a str seed: the same in any run
        return rng.lognormvariate(math.log(self.median_s), self.sigma)

    def describe(self) -> dict[str, Any]:
        """The distribution, as a benchmark reports it (its percentiles computed, not drawn)."""

        def at(z: float) -> float:
            return round(self.median_s * math.exp(z * self.sigma), 3)

        return {
            "distribution": "lognormal",
            "median_s": self.median_s,
            "sigma": self.sigma,
            "seed": self.seed,
            "p95_s": at(1.645),
            "p99_s": at(2.326),
        }


_BOUNDARY = re.compile(r"<<DATA ([0-9a-f]{16})\b")


def content_key(messages: tuple[Message, ...]) -> str:
    """What a request asks, without the data boundary each call draws at random
    (``colony.context.untrusted``): the same chunk asked in two runs is the same key."""
    text = json.dumps([[m.role, m.content] for m in messages])
    for boundary in set(_BOUNDARY.findall(text)):
        text = text.replace(boundary, "")
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Answered:
    output_name: str
    prompt_tokens: int
    latency_s: float


class TailModelServer(WireServer):
    """See the module docstring. ``count`` (settable) measures a prompt's tokens for
    ``answered`` (default: the offline model's estimate); ``clock`` and ``sleep`` are its time
    (tests pass a fake pair so nothing really waits)."""

    def __init__(
        self,
        latency: LatencyModel,
        *,
        per_second: int | None = None,
        count: Callable[[str], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        route = Route.of("openai.chat", "POST", r"/v1/chat/completions", self._respond)
        super().__init__(routes=[route])
        if per_second is not None and per_second < 1:
            raise ValueError("per_second must be at least 1 (or None: no limit)")
        self.latency, self.per_second = latency, per_second
        self.count, self._clock, self._sleep = count, clock, sleep
        self._model = OfflineChatModel()
        self._state = threading.Lock()
        self._admitted: deque[float] = deque()  # when each request of the last second came
        self._told: dict[str, float] = {}  # request body → the time it was told to wait until
        self._asked: Counter[str] = Counter()
        self.answered: list[Answered] = []
        self.rate_limited = 0
        self.early_retries = 0

    def _respond(self, request: Any) -> Reply:
        body = request.body or {}
        if body.get("stream"):
            return error_reply(400, "this stand-in answers whole; streaming is not served")
        messages = tuple(Message(m["role"], m.get("content") or "") for m in body["messages"])
        output_name = body["response_format"]["json_schema"]["name"]
        refusal = self._admit(hashlib.sha256(request.raw_body).hexdigest())
        if refusal is not None:
            return refusal
        key = content_key(messages)
        with self._state:
            n = self._asked[key]
            self._asked[key] += 1
        delay = self.latency.sample(key, n)
        answer = self._model.request(
            ModelRequest(
                model=str(body.get("model", "")),
                messages=messages,
                output_name=output_name,
                output_schema=OUTPUT_CONTRACTS[output_name].model_json_schema(),
            )
        )
        self._sleep(delay)  # the model's time to answer, not synchronisation
        text = "\n".join(m.content for m in messages)
        tokens = self.count(text) if self.count else answer.usage.tokens_in
        with self._state:
            self.answered.append(Answered(output_name, tokens, delay))
        return openai_chat_reply(
            answer.text,
            model=answer.model,
            prompt_tokens=answer.usage.tokens_in,
            completion_tokens=answer.usage.tokens_out,
        )

    def _admit(self, key: str) -> Reply | None:
        """None when the request may be answered now, else the 429 saying when to retry."""
        with self._state:
            now = self._clock()
            if now < self._told.get(key, -math.inf):
                self.early_retries += 1
            while self._admitted and now - self._admitted[0] >= 1.0:
                self._admitted.popleft()
            if self.per_second is None or len(self._admitted) < self.per_second:
                self._admitted.append(now)
                self._told.pop(key, None)
                return None
            wait_ms = max(1, math.ceil((self._admitted[0] + 1.0 - now) * 1000))
            self._told[key] = now + wait_ms / 1000
            self.rate_limited += 1
        headers = {"retry-after-ms": str(wait_ms), "Retry-After": str(math.ceil(wait_ms / 1000))}
        return error_reply(429, "rate limit reached (benchmark stand-in)", headers=headers)

    def take_stats(self) -> dict[str, Any]:
        """What was answered and refused since the last call (then forgotten)."""
        with self._state:
            answered, self.answered = self.answered, []
            limited, early = self.rate_limited, self.early_retries
            self.rate_limited = self.early_retries = 0
            self._asked.clear()  # a request asked again in the next run draws as the first time
        waits = sorted(a.latency_s for a in answered)

        def pick(q: float) -> float:
            return round(waits[min(len(waits) - 1, int(q * len(waits)))], 3) if waits else 0.0

        return {
            "answered": len(answered),
            "latency_p50_s": pick(0.5),
            "latency_p95_s": pick(0.95),
            "latency_max_s": round(waits[-1], 3) if waits else 0.0,
            "latency_sum_s": round(sum(waits), 3),
            "rate_limited_429": limited,
            "early_retries": early,
            "calls": [(a.output_name, a.prompt_tokens) for a in answered],
        }
