"""What a run's tokens cost: list prices per million tokens, by model name.

Prices are the providers' published list prices for standard (not batch, not cached) input
and output tokens, as of ``AS_OF``; a model not listed costs ``None`` (unknown, shown as
such), and the offline model and a local server cost nothing. ``colony eval run --price-in
--price-out`` prices any other model. Thinking tokens are billed as output by both providers
and are in the output count the adapters report.
"""

from __future__ import annotations

AS_OF = "2026-01"
# model name prefix → (USD per 1M input tokens, USD per 1M output tokens); longest prefix wins
PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.00),
    "offline-deterministic-v1": (0.0, 0.0),
}


def per_million(model: str, *, local: bool = False) -> tuple[float, float] | None:
    """The price of ``model`` (``local``: a server on this machine costs nothing)."""
    if local:
        return (0.0, 0.0)
    found = [p for p in PER_MILLION if model.startswith(p)]
    return PER_MILLION[max(found, key=len)] if found else None


def cost(price: tuple[float, float] | None, tokens_in: int, tokens_out: int) -> float | None:
    if price is None:
        return None
    return round((tokens_in * price[0] + tokens_out * price[1]) / 1_000_000, 6)
