"""What the deployment's providers allow: requests and tokens per minute per model, the
sending pace per mailbox and per domain, and each org's weight in the fair shares
(``colony.runtime.limiter``; docs/limits.md).

A provider's limits belong to the account (its tier), not to the code, so nothing is packaged:
``COLONY_LIMITS_FILE`` names a JSON file, and without one no call is limited here (the
provider's own 429s and the runner's back-off remain). The shape::

    {"models": {"gpt-4o-mini": {"requests_per_minute": 600, "tokens_per_minute": 200000}},
     "sending": {"mailbox": {"requests_per_minute": 2}, "domain": {"requests_per_minute": 20}},
     "org_weights": {"org_big_plan": 3}}

An org not in ``org_weights`` weighs 1 (a plan sets more where there is one). A file that
cannot be read or does not fit is a ``ConfigError`` naming the file and the entry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colony.errors import ConfigError

_RATE_KEYS = {"requests_per_minute", "tokens_per_minute"}
SENDING_KINDS = ("mailbox", "domain")


@dataclass(frozen=True, slots=True)
class Rate:
    """One provider limit: requests a minute, and tokens a minute (None: not counted)."""

    per_minute: float
    tokens_per_minute: float | None = None


@dataclass(frozen=True, slots=True)
class LimitTable:
    models: Mapping[str, Rate] = field(default_factory=dict)
    sending: Mapping[str, Rate] = field(default_factory=dict)  # "mailbox", "domain"
    org_weights: Mapping[str, float] = field(default_factory=dict)

    def weight(self, org_id: str) -> float:
        return self.org_weights.get(org_id, 1.0)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{where} must be a positive number, not {value!r}")
    return float(value)


def _rate(entry: Any, where: str, *, tokens: bool) -> Rate:
    if not isinstance(entry, dict) or "requests_per_minute" not in entry:
        raise ConfigError(f"{where} must be an object with requests_per_minute")
    allowed = _RATE_KEYS if tokens else {"requests_per_minute"}
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise ConfigError(f"{where} has unknown keys {', '.join(map(repr, unknown))}")
    per_token = entry.get("tokens_per_minute")
    return Rate(
        _number(entry["requests_per_minute"], f"{where} requests_per_minute"),
        None if per_token is None else _number(per_token, f"{where} tokens_per_minute"),
    )


def parse_limits(raw: Any, origin: str) -> LimitTable:
    """The table ``raw`` (a limits file's JSON) describes; ``origin`` names it in errors."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin} must be a JSON object")
    unknown = sorted(
        k for k in raw if k not in ("models", "sending", "org_weights") and not k.startswith("_")
    )
    if unknown:
        raise ConfigError(f"{origin} has unknown keys {', '.join(map(repr, unknown))}")
    models = raw.get("models", {})
    sending = raw.get("sending", {})
    weights = raw.get("org_weights", {})
    if not all(isinstance(part, dict) for part in (models, sending, weights)):
        raise ConfigError(f"{origin}: models, sending and org_weights must be objects")
    bad = sorted(set(sending) - set(SENDING_KINDS))
    if bad:
        raise ConfigError(f"{origin}: sending has unknown kinds {', '.join(map(repr, bad))}")
    return LimitTable(
        {m: _rate(e, f"{origin}: models {m!r}", tokens=True) for m, e in models.items()},
        {k: _rate(e, f"{origin}: sending {k!r}", tokens=False) for k, e in sending.items()},
        {o: _number(w, f"{origin}: org_weights {o!r}") for o, w in weights.items()},
    )


def load_limits(path: Path | None) -> LimitTable:
    """The deployment's limits (``COLONY_LIMITS_FILE``); an empty table without one."""
    if path is None:
        return LimitTable()
    origin = f"COLONY_LIMITS_FILE {str(path)!r}"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{origin} is unreadable ({type(error).__name__})") from error
    except json.JSONDecodeError as error:
        raise ConfigError(f"{origin} is not JSON (line {error.lineno})") from error
    return parse_limits(raw, origin)
