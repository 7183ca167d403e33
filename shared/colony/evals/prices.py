"""What a run's tokens cost: the packaged price table's (``colony.registry.prices``) input and
output rates, per million tokens, by model name.

A run reports standard (not cached) input and output tokens, so it is priced at those two
rates; a model the table does not name costs ``None`` (unknown, shown as such), and the
offline model and a local server cost nothing. ``colony eval run --price-in --price-out``
prices any other model. Thinking tokens are billed as output by both providers and are in
the output count the adapters report.
"""

from __future__ import annotations

from functools import cache

from colony.registry.prices import PriceTable, load_prices


@cache
def _table() -> PriceTable:
    return load_prices()


def per_million(model: str, *, local: bool = False) -> tuple[float, float] | None:
    """The price of ``model`` (``local``: a server on this machine costs nothing)."""
    if local:
        return (0.0, 0.0)
    price = _table().price(model)
    return None if price is None else (float(price.rates.input), float(price.rates.output))


def cost(price: tuple[float, float] | None, tokens_in: int, tokens_out: int) -> float | None:
    if price is None:
        return None
    return round((tokens_in * price[0] + tokens_out * price[1]) / 1_000_000, 6)
