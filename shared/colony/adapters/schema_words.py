"""A schema limit a provider's dialect cannot carry, said in words in its node's description.

OpenAI's strict mode and Gemini's ``responseJsonSchema`` each enforce a subset of JSON Schema,
so each adapter's conversion drops the keywords outside it (a string's ``maxLength``, a
``pattern``). Dropped silently, the model is never told the limit and the runner then rejects
an answer for breaking it: the first run against a real model lost 9 of its 12 failed answers
that way (``reasoning`` over 400 characters, ``observed_on`` not a date; issue 37 item 6). So
a conversion hands each node to ``describe`` with what it drops, and the node's description
(which both dialects keep, and which their models read) says the limit: ``"Why, in at most
two sentences. (1 to 400 characters)"``. A ``format`` is said in words whether or not the
dialect keeps it: a model told "an ISO date" writes one, where a grammar alone would only
refuse the tokens of anything else.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

# The keywords this module can say in words (what the dialects drop is a subset).
LIMIT_KEYWORDS = frozenset(
    {
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "pattern",
        "format",
    }
)
FORMATS = {
    "date": "an ISO date, YYYY-MM-DD",
    "date-time": "an ISO date and time, YYYY-MM-DDTHH:MM:SSZ",
    "time": "an ISO time, HH:MM:SS",
    "email": "an email address",
    "uri": "an absolute URL",
    "uuid": "a UUID",
}


def _between(low: Any, high: Any, unit: str = "") -> str | None:
    tail = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{low} to {high}{tail}"
    if high is not None:
        return f"at most {high}{tail}"
    if low is not None:
        return "not empty" if unit and low == 1 else f"at least {low}{tail}"
    return None


def words(node: Mapping[str, Any], dropped: Collection[str]) -> list[str]:
    """The limits of ``node`` among ``dropped`` (and its format, always), in words."""

    def value(key: str) -> Any:
        return node.get(key) if key in dropped else None

    said = [
        _between(value("minLength"), value("maxLength"), "characters"),
        _between(value("minItems"), value("maxItems"), "items"),
        _between(value("minimum"), value("maximum")),
    ]
    if value("exclusiveMinimum") is not None:
        said.append(f"more than {value('exclusiveMinimum')}")
    if value("exclusiveMaximum") is not None:
        said.append(f"less than {value('exclusiveMaximum')}")
    if value("pattern") is not None:
        said.append(f"matching the pattern {value('pattern')}")
    form = node.get("format")
    if isinstance(form, str):
        said.append(FORMATS.get(form, f"in the {form} format"))
    return [s for s in said if s]


def describe(node: Mapping[str, Any], kept: Collection[str]) -> str | None:
    """``node``'s description with every limit outside ``kept`` (and its format) appended in
    words; None when there is neither a description nor anything to say."""
    dropped = [k for k in LIMIT_KEYWORDS if k in node and k not in kept]
    said = words(node, dropped)
    description = node.get("description")
    text = description.strip() if isinstance(description, str) else ""
    if not said:
        return text or None
    limits = "; ".join(said)
    return f"{text} ({limits})" if text else limits[0].upper() + limits[1:] + "."
