"""A provider's own reason for failing a call, kept short and without prompt text.

An error body usually says exactly what went wrong: a local server refusing our
``response_format`` with a 500 said so in its body, which was thrown away, so the refusal
looked like an outage and no log said why (issue 37 item 6). A body may also quote what it was
sent, and that is customer data. ``reason`` keeps the body's type, code and message, cut at
``MAX_REASON`` characters, with each run of its words that also occurs in the prompt replaced
by ``[…]`` when the run could be data: three words or more, or one with a capital, a digit
or eight letters. Ordinary words ("must be one of") stay readable; a name or a sentence of
the prompt does not get through.

``says_invalid`` reads whether a server error's reason says the request itself is at fault:
a server that refuses a parameter with a 500 answers the same however often it is asked, so
such an error is not worth a retry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from colony.ports import ModelRequest

MAX_REASON = 200
MAX_READ = 2000  # of a body's text: enough for any reason worth keeping
_WORD = re.compile(r"\w+")
_INVALID = re.compile(
    r"\b(invalid|unsupported|not supported|must be one of|validation error|input should be"
    r"|unknown (?:field|parameter|argument)|unrecognized|bad request|not allowed)\b",
    re.IGNORECASE,
)


def _parts(body: Any) -> list[str]:
    if isinstance(body, Mapping):
        inner = body.get("error")
        error = inner if isinstance(inner, Mapping) else body
        found = [error.get(k) for k in ("type", "status", "code", "message", "detail")]
        if isinstance(inner, str):
            found.append(inner)
        return [str(p) for p in found if isinstance(p, str | int) and str(p).strip()]
    if isinstance(body, str) and body.strip():
        return [body]
    return []


def _could_be_data(words: list[str]) -> bool:
    return len(words) >= 3 or any(
        len(w) >= 8 or w.lower() != w or any(c.isdigit() for c in w) for w in words
    )


def scrub(text: str, prompt: str) -> str:
    """``text`` with every run of words that occurs in ``prompt`` and could be data as ``[…]``."""
    seen = " " + " ".join(_WORD.findall(prompt.lower())) + " "
    words = list(_WORD.finditer(text))
    cuts: list[tuple[int, int]] = []
    i = 0
    while i < len(words):
        j = i
        while (
            j < len(words)
            and (" " + " ".join(w.group().lower() for w in words[i : j + 1]) + " ") in seen
        ):
            j += 1
        if j > i and _could_be_data([w.group() for w in words[i:j]]):
            cuts.append((words[i].start(), words[j - 1].end()))
            i = j
        else:
            i += 1
    for start, end in reversed(cuts):
        text = text[:start] + "[…]" + text[end:]
    return text


def reason(body: Any, prompt: str) -> str | None:
    """The body's reason (type, code, message), bounded, with prompt text cut out; None
    when the body says nothing."""
    text = " ".join(": ".join(_parts(body)).split())[:MAX_READ]
    if not text:
        return None
    text = scrub(text, prompt)
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def says_invalid(text: str | None) -> bool:
    """Whether a reason says the request itself is invalid (not worth sending again)."""
    return bool(text) and _INVALID.search(text or "") is not None


def prompt_text(request: ModelRequest) -> str:
    """Everything of ``request`` a provider could quote back: its messages and tool calls."""
    parts = [m.content for m in request.messages]
    parts += [str(dict(c.arguments)) for m in request.messages for c in m.tool_calls]
    return "\n".join(parts)
