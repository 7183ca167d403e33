"""The ``llm_calls`` record of each model call: kept in its own transaction by
``CallRecorder``, or held (``deferred_records``) for the caller's next one.

``TracedChatModel`` (``colony.observability.tracing``) hands every successful call's
``LlmCallRecord`` to a ``CallRecorder``, which prices it (``cost_usd``, from the price table:
``colony.registry.prices``; None for a model the table does not name) before it is kept or
held. Both ways a row is written (``store_records``, and ``record_row`` for the chat turn's one
statement) pass the record through ``trace_schema.check_record`` first, so what is kept can be
analysed by agent and section.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from colony.observability.trace_schema import check_record
from colony.ports import LlmCallRecord
from colony.registry.prices import PriceTable, load_prices
from colony.store import llm_calls

if TYPE_CHECKING:
    from colony.store.db import Database


_DEFERRED: ContextVar[list[LlmCallRecord] | None] = ContextVar("colony_deferred", default=None)


@contextmanager
def deferred_records(into: list[LlmCallRecord]) -> Iterator[None]:
    """Inside it, ``CallRecorder`` keeps each record in ``into`` rather than opening a
    transaction of its own: the caller stores them (``store_records``) in the transaction it
    writes next (the chat turn's, which saves two round trips a call). Until then they are
    the caller's to keep: a caller that fails stores them with its error."""
    token = _DEFERRED.set(into)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def record_row(record: LlmCallRecord) -> dict[str, Any]:
    """``record`` as an ``llm_calls`` row (JSON-ready: ``store.llm_calls.ADD_MANY``), checked
    first (``check_record``): one that breaks the trace schema is refused, not kept."""
    check_record(record)
    return {
        "org_id": record.org_id,
        "agent_id": record.agent_id,
        "run_id": record.run_id,
        "model": record.model,
        "kc_domains_queried": list(record.kc_domains_queried),
        "tokens_in": record.tokens_in,
        "tokens_out": record.tokens_out,
        "context_budget_used": dict(record.context_budget_used),
        "latency_ms": record.latency_ms,
        "call_id": record.call_id,
        "provenance": dict(record.provenance),
        "tokens_cached": record.tokens_cached,
        # a string: the database reads it as numeric, exactly as priced
        "cost_usd": None if record.cost_usd is None else str(record.cost_usd),
    }


def store_records(cur: Any, records: Sequence[LlmCallRecord]) -> None:
    """Keep ``records`` in ``llm_calls`` on the caller's cursor (scoped to their org), all
    checked first (``check_record``): if one breaks the trace schema, none is kept."""
    for record in [check_record(r) for r in records]:
        llm_calls.add(
            cur,
            org_id=record.org_id,
            agent_id=record.agent_id,
            run_id=record.run_id,
            model=record.model,
            kc_domains_queried=record.kc_domains_queried,
            tokens_in=record.tokens_in,
            tokens_out=record.tokens_out,
            context_budget_used=record.context_budget_used,
            latency_ms=record.latency_ms,
            call_id=record.call_id,
            provenance=record.provenance,
            tokens_cached=record.tokens_cached,
            cost_usd=record.cost_usd,
        )


class CallRecorder:
    """Prices each call's record and keeps it in ``llm_calls``, in its own org-scoped
    transaction (or, in ``deferred_records``, in the caller's next one). ``prices``: the
    deployment's table (``load_prices(settings.prices_file)``); the packaged one by default."""

    def __init__(self, db: Database, prices: PriceTable | None = None) -> None:
        self._db = db
        self._prices = prices if prices is not None else load_prices()

    def priced(self, record: LlmCallRecord) -> LlmCallRecord:
        """``record`` with its cost in USD (None: the table has no price for its model)."""
        cost = self._prices.cost(
            record.model, record.tokens_in, record.tokens_cached, record.tokens_out
        )
        return replace(record, cost_usd=cost)

    def record(self, record: LlmCallRecord) -> None:
        record = self.priced(record)
        deferred = _DEFERRED.get()
        if deferred is not None:
            deferred.append(record)
            return
        with self._db.transaction(record.org_id) as cur:
            store_records(cur, [record])
