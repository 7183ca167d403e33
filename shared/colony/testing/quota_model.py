"""A model provider that enforces its account's limits: requests and tokens per minute over
a sliding 60-second window, answered 429 with ``Retry-After`` past them, and a log of every
request it was sent (issue 38's fairness benchmark, ``bench/fairness.py``).

``QuotaModelServer`` is a ``WireServer`` on OpenAI's wire, so callers reach it through the
production ``OpenAIChatModel`` (the official SDK). It sees what OpenAI sees and nothing else:
the API key (the benchmark gives each org its own, so the log can be summed per org), the
model, the messages and the output schema. Answers are JSON sampled from the schema (the
wire stand-in's default); usage is the offline model's estimate (``ceil(chars / 4)``) of the
prompt and of the answer.

A request is admitted when, with it, the requests and the tokens (prompt and answer) admitted
in the last ``window`` seconds stay within the limits; otherwise it is answered 429 with
``retry-after-ms`` and ``Retry-After`` saying when enough of the window will have passed,
and logged as refused. Time is ``clock`` (seconds): a benchmark's simulated clock, the one
its limiter reads too, so both agree on what a minute is.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from colony.adapters.offline import estimate_tokens
from colony.testing.wire import Reply, Route, WireServer, error_reply, openai_chat_reply
from colony.testing.wire.openai import openai_chat_completions
from colony.testing.wire.replies import RecordedRequest


class SimClock:
    """Seconds, moved by whoever drives the simulation (a benchmark's event loop, a test):
    the limiter and this stand-in read the same one, so they agree on what a minute is."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True, slots=True)
class Logged:
    """One request as the provider saw it: when, whose key, which model, its usage, status."""

    at: float
    key: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    status: int


class QuotaModelServer(WireServer):
    """See the module docstring."""

    def __init__(
        self,
        *,
        per_minute: int,
        tokens_per_minute: int,
        clock: Callable[[], float],
        window: float = 60.0,
    ) -> None:
        route = Route.of("openai.chat.completions", "POST", r"/v1/chat/completions", self._answer)
        super().__init__(routes=[route])
        self.per_minute, self.tokens_per_minute = per_minute, tokens_per_minute
        self.window = window
        self._clock = clock
        self._state = threading.Lock()
        self._admitted: deque[tuple[float, int]] = deque()  # (when, tokens) in the window
        self._tokens = 0  # the sum of the window's tokens
        self.log: list[Logged] = []

    def _answer(self, request: RecordedRequest) -> Reply:
        reply = openai_chat_completions(request)
        if reply.status != 200 or not isinstance(reply.body, dict):
            return reply
        body = request.body
        content = reply.body["choices"][0]["message"]["content"] or ""
        prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in body["messages"])
        completion = estimate_tokens(content)
        key = (request.header("authorization") or "").removeprefix("Bearer ")
        model = str(body["model"])
        wait = self._admit(prompt + completion)
        with self._state:
            status = 200 if wait is None else 429
            self.log.append(Logged(self._clock(), key, model, prompt, completion, status))
        if wait is not None:
            ms = max(1, math.ceil(wait * 1000))
            headers = {"retry-after-ms": str(ms), "Retry-After": str(math.ceil(ms / 1000))}
            return error_reply(429, "rate limit reached (quota stand-in)", headers=headers)
        return openai_chat_reply(
            content, model=model, prompt_tokens=prompt, completion_tokens=completion
        )

    def _admit(self, tokens: int) -> float | None:
        """None when a request of ``tokens`` fits the window now, else the seconds until it
        would (the time the oldest admissions it needs gone leave the window)."""
        with self._state:
            now = self._clock()
            while self._admitted and self._admitted[0][0] <= now - self.window:
                self._tokens -= self._admitted.popleft()[1]
            if (
                len(self._admitted) + 1 <= self.per_minute
                and self._tokens + tokens <= self.tokens_per_minute
            ):
                self._admitted.append((now, tokens))
                self._tokens += tokens
                return None
            over_requests = len(self._admitted) + 1 - self.per_minute
            over_tokens = self._tokens + tokens - self.tokens_per_minute
            freed, gone, until = 0, 0, now
            for at, used in self._admitted:
                if gone >= over_requests and freed >= over_tokens:
                    break
                gone, freed, until = gone + 1, freed + used, at
            return max(until + self.window - now, 0.001)

    def summary(self) -> dict[str, Any]:
        """Requests answered and refused (429), in all and per key."""
        with self._state:
            log = list(self.log)
        per_key: dict[str, dict[str, int]] = {}
        for entry in log:
            row = per_key.setdefault(entry.key, {"answered": 0, "refused_429": 0})
            row["answered" if entry.status == 200 else "refused_429"] += 1
        answered = sum(r["answered"] for r in per_key.values())
        return {
            "answered": answered,
            "refused_429": len(log) - answered,
            "per_key": per_key,
        }
