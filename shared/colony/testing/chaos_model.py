"""A model stand-in that fails like a provider under load: 429s, 500s and calls that never
answer, on a fixed seed, with a log of every request (issue 38 item 3, the chaos soak).

``ChaosModelServer`` is ``TailModelServer`` (the offline model's answers over OpenAI's chat
completions wire, reached through the real ``OpenAIChatModel``) with a fault drawn for each
request: with probability ``rate`` it is answered by one of

- ``429``: rate limited, with ``Retry-After`` (whole seconds) and ``retry-after-ms``;
- ``500``: a server error;
- ``timeout``: held ``hang_s`` seconds, then the connection is closed with no answer at all
  (what a client sees when its provider's proxy gives up on a call: the SDK's connection
  error, retried by ``StructuredRunner`` like a timeout);

and otherwise answered (a streamed request, a chat turn's, by the wire stand-in's streamed
answer: the offline model answers whole). The draw is seeded by ``seed`` and the
request's arrival number, so a run with the same seed injects the same sequence of faults.

``log`` holds one ``Logged`` per request: what it asked (``content_key``: its messages less
the random data boundary), the output contract, the outcome, and when. A soak compares it
with the database: every answered call a committed step recorded (``llm_calls``), every
fault retried, no prompt answered twice unless a fault or a killed caller explains it.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Literal

from colony.ports import Message
from colony.testing.tail_model import LatencyModel, TailModelServer, content_key
from colony.testing.wire import NO_ANSWER, Reply, error_reply, openai_chat_completions

Outcome = Literal["ok", "429", "500", "timeout", "other"]
FAULTS: tuple[Outcome, ...] = ("429", "500", "timeout")


@dataclass(frozen=True, slots=True)
class Logged:
    key: str  # content_key of the request's messages
    output_name: str
    outcome: Outcome
    at: float  # time.time() when it arrived


class ChaosModelServer(TailModelServer):
    """See the module docstring; ``rate`` 0 injects nothing (a plain logged stand-in)."""

    def __init__(
        self,
        *,
        rate: float = 0.1,
        seed: int = 38,
        hang_s: float = 20.0,
        retry_after_s: int = 1,
        latency: LatencyModel | None = None,
    ) -> None:
        super().__init__(latency or LatencyModel(0.0))
        if not 0.0 <= rate <= 1.0:
            raise ValueError("rate is a probability: between 0 and 1")
        self.rate, self.seed, self.hang_s, self.retry_after_s = rate, seed, hang_s, retry_after_s
        self._log_lock = threading.Lock()
        self._arrivals = 0
        self._log: list[Logged] = []
        self._closing = threading.Event()

    def _draw(self) -> Outcome | None:
        with self._log_lock:
            n, self._arrivals = self._arrivals, self._arrivals + 1
        rng = random.Random(f"{self.seed}:model:{n}")
        return rng.choice(FAULTS) if rng.random() < self.rate else None

    def _respond(self, request: Any) -> Reply:
        body = request.body or {}
        messages = tuple(Message(m["role"], m.get("content") or "") for m in body["messages"])
        key = content_key(messages)
        schema = (body.get("response_format") or {}).get("json_schema") or {}
        output_name = str(schema.get("name") or "text")
        at = time.time()
        with self._lock:  # the stand-in keeps its own light log, not every request's body
            self._requests.clear()
        fault = self._draw()
        if fault == "429":
            reply = error_reply(
                429,
                "rate limit reached (chaos stand-in)",
                headers={
                    "Retry-After": str(self.retry_after_s),
                    "retry-after-ms": str(self.retry_after_s * 1000),
                },
            )
        elif fault == "500":
            reply = error_reply(500, "the model server failed (chaos stand-in)")
        elif fault == "timeout":
            self._closing.wait(self.hang_s)  # the call hangs; a closing server lets it go
            reply = Reply(NO_ANSWER)
        elif body.get("stream"):  # a chat turn: the wire stand-in's streamed answer
            reply = openai_chat_completions(request)
        else:
            reply = super()._respond(request)
        outcome: Outcome = fault or ("ok" if reply.status == 200 else "other")
        with self._log_lock:
            self._log.append(Logged(key, output_name, outcome, at))
        return reply

    @property
    def log(self) -> list[Logged]:
        with self._log_lock:
            return list(self._log)

    def close(self) -> None:
        self._closing.set()
        super().close()
