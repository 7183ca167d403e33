"""What a reply says, decided by rules (a model proposes, policy decides): its own text with
the quoted history stripped, and a deterministic sentiment the Knowledge Core's outcomes
use. The text is untrusted: these rules read it, nothing here obeys it.

Sentiment, in order: an opt-out or a refusal is ``negative``; interest (a call, a time, a
"yes", "tell me more") is ``positive``; anything else (an out-of-office, a question we cannot
sort) is ``unknown``. Negative wins a tie: a reply saying "not interested, but thanks for
reaching out" must never count as interest.
"""

from __future__ import annotations

import re
from typing import Literal

Sentiment = Literal["positive", "negative", "unknown"]
MAX_BODY = 4000  # stored and shown; a reply's own text is short, a longer one is clipped

_NEGATIVE = re.compile(
    r"\b(not interested|no thanks|no thank you|unsubscribe|remove me|stop (emailing|contacting"
    r"|sending)|take me off|do not (contact|email)|don't (contact|email)|not a fit|no need"
    r"|not (right )?now|we('re| are) (all )?set|already have|please stop)\b",
    re.IGNORECASE,
)
_POSITIVE = re.compile(
    r"\b(interested|sounds (good|great|interesting)|let'?s (talk|chat|meet|connect)|happy to"
    r" (talk|chat|meet|connect)|book|schedule|calendar|call|demo|meeting|tell me more|more"
    r" (info|information|details)|yes|sure|available|free (on|at|next)|works for me)\b",
    re.IGNORECASE,
)
_AUTO = re.compile(r"\b(out of (the )?office|auto(matic)?[- ]?reply|on (annual )?leave)\b", re.I)


def own_text(text: str) -> str:
    """The reply's own words: the quoted history and signature stripped by a well-kept reply
    parser (``mail-parser-reply``), clipped to ``MAX_BODY``."""
    # lazy: the parser's language tables load with the first reply
    from mailparser_reply import EmailReplyParser

    stripped = EmailReplyParser(languages=["en"]).parse_reply(text=text or "") or ""
    return stripped.strip()[:MAX_BODY]


def sentiment(text: str) -> Sentiment:
    """``positive`` / ``negative`` / ``unknown`` for a reply's own text (``own_text``)."""
    if _AUTO.search(text):
        return "unknown"
    if _NEGATIVE.search(text):
        return "negative"
    if _POSITIVE.search(text):
        return "positive"
    return "unknown"
