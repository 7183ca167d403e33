"""What a model's tokens cost: the price table, per model, in USD per million input, cached
input and output tokens.

The table ships as ``prices.json`` beside this module (the providers' published prices for
the models the registry names, the offline model at 0) and is editable per deployment:
``COLONY_PRICES_FILE`` names a JSON file of the same shape whose entries replace or add to
the packaged ones (an entry set to ``null`` removes one, ``as_of`` says whose prices they
are). A file that cannot be read or does not fit is a ``ConfigError`` naming the file and
the entry.

A call is priced from the usage its provider reported (``colony.ports.Usage``): the input
tokens the prompt cache served at the cached rate, the rest of the input at the input rate,
the output (thinking included) at the output rate; a model with a ``long_context`` entry is
priced at those rates once its prompt is over that many tokens. Which entry prices a call is
never guessed: the model's own name, or an OpenAI dated snapshot of it (``gpt-4o-2024-08-06``
is ``gpt-4o``). A model the table does not name has no price: its cost is ``None``, kept as
unknown and reported as an unpriced call, never as 0 (docs/costs.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from importlib import resources
from pathlib import Path
from typing import Any

from colony.errors import ConfigError

PER = Decimal(1_000_000)  # the table's prices are per this many tokens
# A call's cost is kept to this many decimal places (``llm_calls.cost_usd`` is
# numeric(20, 12)), so what is computed here is what the database sums.
COST_PLACES = Decimal(1).scaleb(-12)
_SNAPSHOT = re.compile(r"^(?P<model>.+)-\d{4}-\d{2}-\d{2}$")  # OpenAI's dated snapshots
_RATES = ("input", "cached_input", "output")
_HIGHEST = Decimal(100_000)  # no model costs more than this per million tokens: a typo


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens."""

    input: Decimal
    cached_input: Decimal
    output: Decimal


@dataclass(frozen=True, slots=True)
class ModelPrice:
    rates: Rates
    long_above: int | None = None  # a prompt over this many tokens is priced at ``long``
    long: Rates | None = None

    def cost(self, tokens_in: int, tokens_cached: int, tokens_out: int) -> Decimal:
        """The USD a call costs: ``tokens_in`` counts the prompt whole (the cached part
        included, as both providers report it), ``tokens_cached`` the part the cache served."""
        rates = self.rates
        if self.long is not None and self.long_above is not None and tokens_in > self.long_above:
            rates = self.long
        prompt, out = max(tokens_in, 0), max(tokens_out, 0)
        cached = min(max(tokens_cached, 0), prompt)
        total = (prompt - cached) * rates.input + cached * rates.cached_input + out * rates.output
        return (total / PER).quantize(COST_PLACES, rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True, slots=True)
class PriceTable:
    as_of: str
    models: Mapping[str, ModelPrice]

    def price(self, model: str) -> ModelPrice | None:
        """The entry that prices ``model`` (its own, or its dated snapshot's), or None."""
        found = self.models.get(model)
        if found is None and (snapshot := _SNAPSHOT.match(model)):
            found = self.models.get(snapshot.group("model"))
        return found

    def cost(
        self, model: str, tokens_in: int, tokens_cached: int, tokens_out: int
    ) -> Decimal | None:
        """What a call of ``model`` cost in USD, or None when the table has no price for it."""
        price = self.price(model)
        return None if price is None else price.cost(tokens_in, tokens_cached, tokens_out)


def _rate(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise ConfigError(f"{where} must be a number of USD per million tokens, not {value!r}")
    rate = Decimal(value)
    if not rate.is_finite() or not 0 <= rate <= _HIGHEST:
        raise ConfigError(f"{where} must be between 0 and {_HIGHEST} USD per million tokens")
    return rate


def _rates(entry: Mapping[str, Any], where: str) -> Rates:
    missing = [name for name in _RATES if name not in entry]
    if missing:
        raise ConfigError(f"{where} has no {', '.join(missing)} price")
    return Rates(*(_rate(entry[name], f"{where} {name}") for name in _RATES))


def _entry(model: str, entry: Any, origin: str) -> ModelPrice:
    where = f"{origin}: models {model!r}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object of prices (or null to remove it)")
    unknown = sorted(set(entry) - {*_RATES, "long_context"})
    if unknown:
        raise ConfigError(f"{where} has unknown keys {', '.join(map(repr, unknown))}")
    long = entry.get("long_context")
    if long is None:
        return ModelPrice(_rates(entry, where))
    if not isinstance(long, dict) or set(long) - {*_RATES, "above_input_tokens"}:
        raise ConfigError(f"{where} long_context must hold above_input_tokens and the three rates")
    above = long.get("above_input_tokens")
    if isinstance(above, bool) or not isinstance(above, int) or above < 1:
        raise ConfigError(f"{where} long_context above_input_tokens must be a positive integer")
    return ModelPrice(_rates(entry, where), above, _rates(long, f"{where} long_context"))


def _merge(raw: Any, origin: str, models: dict[str, ModelPrice]) -> str | None:
    """Apply ``raw``'s entries to ``models``; its ``as_of`` (None when it names none)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("models"), dict):
        raise ConfigError(f"{origin} must be a JSON object with a 'models' object")
    unknown = sorted(k for k in raw if k not in ("models", "as_of") and not k.startswith("_"))
    if unknown:
        raise ConfigError(f"{origin} has unknown keys {', '.join(map(repr, unknown))}")
    for model, entry in raw["models"].items():
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"{origin}: a model name must be a non-empty string")
        if entry is None:
            models.pop(model, None)
        else:
            models[model] = _entry(model, entry, origin)
    as_of = raw.get("as_of")
    if as_of is not None and not isinstance(as_of, str):
        raise ConfigError(f"{origin}: as_of must be a string (the date of the prices)")
    return as_of


def _parse(text: str, origin: str) -> Any:
    try:
        # Decimal, not float: 0.075 is kept as written, so sums match the provider's invoice.
        return json.loads(text, parse_float=Decimal)
    except ValueError as error:
        raise ConfigError(f"{origin} is not JSON: {error}") from None


def load_prices(override: Path | None = None) -> PriceTable:
    """The packaged table, with ``override`` (``COLONY_PRICES_FILE``) applied over it."""
    packaged = resources.files("colony.registry").joinpath("prices.json").read_text("utf-8")
    models: dict[str, ModelPrice] = {}
    as_of = _merge(_parse(packaged, "packaged prices.json"), "packaged prices.json", models)
    if override is not None:
        origin = f"COLONY_PRICES_FILE {str(override)!r}"
        try:
            text = override.read_text(encoding="utf-8")
        except (OSError, ValueError) as error:
            raise ConfigError(f"{origin} is unreadable: {error}") from None
        as_of = _merge(_parse(text, origin), origin, models) or as_of
    return PriceTable(as_of or "unknown", dict(models))
