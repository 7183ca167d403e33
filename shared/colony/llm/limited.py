"""The provider's limits around the ``ChatModel`` port: every call of a limited model takes
its org's turn first (``colony.runtime.limiter``; docs/limits.md).

    request ─► acquire(model's limit, the request's org, prompt tokens + output cap)
        ├─ RateWait ─► raised as it is: nothing sent; the edge books the retry durably
        └─ granted ─► the inner model (traced) ─► settle(the tokens the provider reported)
                                                └─ 429 ─► throttled: every org slowed (AIMD),
                                                          and the call waits as RateWait

A streamed call (the chat's turn: a person is waiting) is never refused: it is admitted and
charged to its org's share, so the org's campaign work waits a little longer instead.

A call whose model the limits file does not name, or that carries no org (``metadata``'s
``org_id``), goes through unlimited. A 429 becomes a ``RateWait`` rather than the runner's
sleep-and-retry: the limiter has just emptied everyone's bucket for the provider's
``Retry-After``, so asking again sooner would only be refused, and the work waits as a
scheduled retry, not in a sleeping instance.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from colony.errors import DatabaseError, ProviderRateLimited, error_summary
from colony.ports import ChatModel, Counter, ModelRequest, ModelResponse, TextSink
from colony.registry.limits import LimitTable
from colony.runtime.limiter import Grant, Limit, Limiter, RateWait

logger = logging.getLogger(__name__)


def model_key(model: str) -> str:
    return f"model:{model}"


class LimitedChatModel:
    """A ``ChatModel`` whose calls take their org's share of the provider's limits."""

    def __init__(
        self, inner: ChatModel, limiter: Limiter, limits: LimitTable, counter: Counter
    ) -> None:
        self._inner = inner
        self._limiter = limiter
        self._limits = limits
        self._counter = counter

    def request(self, request: ModelRequest) -> ModelResponse:
        return self._limited(request, self._inner.request, urgent=False)

    def stream(self, request: ModelRequest, on_text: TextSink) -> ModelResponse:
        """The chat's turn (the one agent answered as a stream): a person is waiting, so it is
        admitted whatever the org's share holds, and charged to it (``Limiter.acquire``)."""
        return self._limited(request, lambda r: self._inner.stream(r, on_text), urgent=True)

    def estimate(self, request: ModelRequest) -> int:
        """The tokens a call may use: its prompt's count and everything it may answer."""
        prompt = sum(self._counter.count(m.content) for m in request.messages)
        return prompt + request.max_output_tokens + request.thinking_budget

    def _limited(
        self,
        request: ModelRequest,
        call: Callable[[ModelRequest], ModelResponse],
        *,
        urgent: bool,
    ) -> ModelResponse:
        rate = self._limits.models.get(request.model)
        org_id = request.metadata.get("org_id")
        if rate is None or not isinstance(org_id, str) or not org_id:
            return call(request)
        limit = Limit(model_key(request.model), rate.per_minute, rate.tokens_per_minute)
        weight = self._limits.weight(org_id)
        grant = self._limiter.acquire(
            limit, org_id, tokens=self.estimate(request), weight=weight, urgent=urgent
        )
        try:
            response = call(request)
        except ProviderRateLimited as error:
            self._limiter.throttled(limit, error.retry_after)
            wait = error.retry_after if error.retry_after is not None else 1.0
            raise RateWait(
                f"{limit.key} answered 429; every org's rate lowered, retry in {wait:.1f} s",
                key=limit.key,
                retry_after=wait,
            ) from error
        self._settle(grant, response)
        return response

    def _settle(self, grant: Grant, response: ModelResponse) -> None:
        used = response.usage.tokens_in + response.usage.tokens_out
        try:
            self._limiter.settle(grant, used)
        except DatabaseError as error:
            # The answer is paid for and in hand: losing it to a bookkeeping write would
            # repeat the call. Unsettled, the reservation (an over-estimate) stands: the
            # limit errs towards fewer calls, never more.
            logger.warning(
                "%s: the reservation stands unsettled (%s)", grant.limit.key, error_summary(error)
            )
