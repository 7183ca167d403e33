"""CONST-006: the outbound message shape, checked deterministically.

``check_outbound`` returns human-readable problems (an empty list means the message passes):

- body sentences: at most 3 for T1/T2, at most 5 for T3-T5. The greeting line ("Hi Dana,") and
  the sign-off block ("Best," / "Marcus" / "Marcus, ZoomProp") are not counted; the sentence
  counter does not split on abbreviations ("e.g.", "Dr.", "U.S."), initials or decimals
  ("18.5%", "$3.1M"), and semicolons do not end sentences;
- subject: at most 8 words, not counting a leading "Re:" (a later step of a sequence
  threads under the first email, and the prefix is the mail client's, not the writer's);
- exactly one signal: ``signal_referenced`` matches exactly one of the contact's signals
  (normalised containment, or high overlap of key tokens), the body shares that signal's key
  tokens, and the body does not also carry another signal's distinctive tokens;
- no competitor named, case-insensitively and as whole words, in subject or body. A
  multi-word name also matches its coined single word ("CareSpace" for "CareSpace
  Analytics"), because "unlike CareSpace" names the competitor just as well.

``check_shape`` runs the sentence, subject and competitor rules alone (for text that has no
contact signals, such as KC-08 exemplars). ``sentence_spans`` is shared with callers that need
verbatim sentences (the offline provider quotes transcript sentences with it).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from colony.errors import ValidationFailed

if TYPE_CHECKING:
    from colony.contracts.outputs.campaigns import OutboundMessage

MAX_SENTENCES = {"T1": 3, "T2": 3, "T3": 5, "T4": 5, "T5": 5}
MAX_SUBJECT_WORDS = 8

# Abbreviations whose period does not end a sentence even before a capital or a digit
# (compared case-insensitively, with the period): titles before names, units and months
# before numbers. Dotted initialisms ("U.S.", "e.g.", "a.m.") and single-letter initials are
# recognised by pattern. Any other period before a lowercase word ("etc. and", "Inc. has")
# is not a boundary either; "etc." or "Inc." before a capital is.
_ABBREVIATIONS = frozenset(
    {
        "dr.",
        "mr.",
        "mrs.",
        "ms.",
        "mx.",
        "prof.",
        "sr.",
        "st.",
        "mt.",
        "vs.",
        "dept.",
        "approx.",
        "est.",
        "fig.",
        "sq.",
        "ft.",
        "min.",
        "max.",
        "avg.",
        "jan.",
        "feb.",
        "mar.",
        "apr.",
        "aug.",
        "sept.",
        "sep.",
        "oct.",
        "nov.",
        "dec.",
    }
)
_INITIALISM = re.compile(r"^(?:[A-Za-z]\.)+$")
_BOUNDARY = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s|$)")
_BULLET = re.compile(r"^\s*(?:[-*\u2022\u2013]|\d{1,2}[.)])\s+")
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|dear|greetings|good\s+(?:morning|afternoon|evening))\b"
    r"[^.!?\n]{0,60}[,:!]?\s*$",
    re.IGNORECASE,
)
_NAME_GREETING = re.compile(r"^\s*[A-Z][\w.'\-]*(?:\s+[A-Z][\w.'\-]*){0,2}\s*,\s*$")
_VALEDICTION = re.compile(
    r"^\s*(?:best|best\s+regards|regards|kind\s+regards|warm\s+regards|warmly|thanks|"
    r"thank\s+you|many\s+thanks|thanks\s+again|cheers|sincerely|all\s+the\s+best|talk\s+soon|"
    r"speak\s+soon|yours|yours\s+truly|respectfully|take\s+care)\s*[,.!\-\u2014]*"
    r"(?:\s+[A-Z][\w.'\-]*(?:\s+[A-Z][\w.'\-]*){0,2})?\s*$",
    re.IGNORECASE,
)
_REPLY_PREFIX = re.compile(r"^\s*re\s*:\s*", re.IGNORECASE)
_SIGNATURE_JOINERS = frozenset({"of", "and", "&", "|", "-", "\u2013", "\u2014", "at", "the"})


# -- sentences ---------------------------------------------------------------------------------


def _blocks(text: str) -> list[tuple[int, int]]:
    """Paragraphs and bullet items as (start, end) offsets: hard sentence boundaries."""
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    end = 0
    offset = 0
    for line in text.splitlines(keepends=True):
        line_start, offset = offset, offset + len(line)
        stripped = line.strip()
        if not stripped:
            if start is not None:
                blocks.append((start, end))
                start = None
            continue
        if start is not None and _BULLET.match(line):
            blocks.append((start, end))
            start = None
        if start is None:
            start = line_start + (len(line) - len(line.lstrip()))
        end = line_start + len(line.rstrip())
    if start is not None:
        blocks.append((start, end))
    return blocks


def _is_boundary(text: str, block_start: int, match: re.Match[str]) -> bool:
    punct = match.group(0)
    if any(ch in punct for ch in "!?\u2026") or punct.startswith(".."):
        return True
    before = text[block_start : match.start() + 1]
    words = before.split()
    token = words[-1].lstrip("(\"'\u201c\u2018[") if words else ""
    rest = text[match.end() :].lstrip()
    if token.casefold() in _ABBREVIATIONS or _INITIALISM.match(token):
        return False
    if token.casefold() == "no." and rest[:1].isdigit():  # "No. 5", but "the answer is no."
        return False
    # "e.g. something", "approx. twelve": a lowercase continuation is the same sentence.
    return not (rest and rest[0].islower())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each sentence in ``text``; ``text[start:end]`` is verbatim."""
    spans: list[tuple[int, int]] = []
    for block_start, block_end in _blocks(text):
        cursor = block_start
        for match in _BOUNDARY.finditer(text, block_start, block_end):
            if _is_boundary(text, block_start, match):
                spans.append((cursor, match.end()))
                cursor = match.end()
        spans.append((cursor, block_end))
    out: list[tuple[int, int]] = []
    for start, end in spans:
        piece = text[start:end]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece) - len(piece.rstrip())
        if any(ch.isalnum() for ch in piece):
            out.append((start + lead, end - trail))
    return out


def split_sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text)]


def _is_signature_line(line: str) -> bool:
    stripped = line.strip().lstrip("-\u2013\u2014 ").rstrip(",")
    if (
        not stripped
        or stripped.endswith((".", "?", "!", ":", ";"))
        or any(ch.isdigit() for ch in stripped)
    ):
        return False
    words = [w for w in re.split(r"[\s,]+", stripped) if w]
    if not words or len(words) > 6:
        return False
    return all(w in _SIGNATURE_JOINERS or w[0].isupper() for w in words)


def message_core(body: str) -> str:
    """The body without its greeting line and sign-off block: the text whose sentences count."""
    lines = body.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and (_GREETING.match(lines[0]) or _NAME_GREETING.match(lines[0])):
        lines.pop(0)
    removed = 0
    while lines and removed <= 4:
        last = lines[-1]
        if not last.strip():
            lines.pop()
            continue
        if _VALEDICTION.match(last) or _is_signature_line(last) or last.strip() in {"--", "-"}:
            lines.pop()
            removed += 1
            continue
        break
    return "\n".join(lines)


def count_sentences(body: str) -> int:
    """Sentences in an email body, greeting and sign-off excluded."""
    return len(sentence_spans(message_core(body)))


def count_words(text: str) -> int:
    return sum(1 for word in text.split() if any(ch.isalnum() for ch in word))


# -- tokens and signals ------------------------------------------------------------------------

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our ours out over
    own same she should so some such than that the their theirs them then there these they
    this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours new per via one two according including
    health healthcare system systems"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_TOKEN = re.compile(r"\d+(?:\.\d+)?|[a-z]+")


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4 and not word.endswith("ss"):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


# Kept per text: a queue of hundreds of drafts checks each against the same few signals.
@functools.lru_cache(maxsize=2048)
def key_tokens(text: str) -> frozenset[str]:
    """Content-bearing tokens: numbers (thousands separators dropped) and stemmed words."""
    lowered = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.casefold())
    tokens: set[str] = set()
    for token in _TOKEN.findall(lowered):
        if token[0].isdigit():
            tokens.add(token)
        elif len(token) >= 3 and token not in _STOPWORDS:
            tokens.add(_stem(token))
    return frozenset(tokens)


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.casefold()).split())


def signal_matches(reference: str, signal: str) -> bool:
    """Does ``reference`` name this signal (containment or high key-token overlap)?"""
    ref, sig = _normalise(reference), _normalise(signal)
    if not ref or not sig:
        return False
    shorter = min(ref, sig, key=len)
    if len(shorter.split()) >= 3 and (ref in sig or sig in ref):
        return True
    ref_tokens, sig_tokens = key_tokens(reference), key_tokens(signal)
    if not ref_tokens or not sig_tokens:
        return False
    shared = len(ref_tokens & sig_tokens)
    return shared >= 2 and shared / min(len(ref_tokens), len(sig_tokens)) >= 0.6


def references_signal(text: str, signal: str) -> bool:
    """Does ``text`` carry enough of the signal's key tokens to count as referencing it?"""
    signal_tokens = key_tokens(signal)
    if not signal_tokens:
        return False
    shared = len(key_tokens(text) & signal_tokens)
    needed = max(min(3, len(signal_tokens)), math.ceil(0.15 * len(signal_tokens)))
    return shared >= needed


def _also_references(text_tokens: frozenset[str], chosen: str, other: str) -> bool:
    distinct = key_tokens(other) - key_tokens(chosen)
    if len(distinct) < 3:
        return False
    shared = len(text_tokens & distinct)
    return shared >= 3 and shared / len(distinct) >= 0.4


# -- competitors -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)  # compiled once per name, not once per draft checked
def _competitor_patterns(name: str) -> tuple[re.Pattern[str], ...]:
    words = name.split()
    if not words:
        return ()
    alternatives = [r"\s+".join(re.escape(w) for w in words)]
    if len(words) > 1:
        # Coined words ("CareSpace", "LeaseLogic", "FacilityIQ"): a capital after a lowercase.
        alternatives += [re.escape(w) for w in words if len(w) >= 4 and re.search(r"[a-z][A-Z]", w)]
    return tuple(re.compile(rf"(?<!\w){alt}(?!\w)", re.IGNORECASE) for alt in alternatives)


def redact_competitors(text: str, competitors: Sequence[str], replacement: str) -> str:
    """``text`` with every competitor mention replaced (for grounding text that names one)."""
    for name in competitors:
        if isinstance(name, str):
            for pattern in _competitor_patterns(name):
                text = pattern.sub(replacement, text)
    return text


def competitor_mentions(text: str, competitors: Sequence[str]) -> list[str]:
    """The competitor names (as given) that ``text`` mentions."""
    found: list[str] = []
    for name in competitors:
        if isinstance(name, str) and any(p.search(text) for p in _competitor_patterns(name)):
            found.append(name)
    return found


# -- the checks --------------------------------------------------------------------------------


def _max_sentences(tier: str) -> int:
    if tier not in MAX_SENTENCES:
        raise ValidationFailed(f"tier {tier!r} is not one of {tuple(MAX_SENTENCES)}")
    return MAX_SENTENCES[tier]


def check_shape(subject: str, body: str, *, tier: str, competitors: Sequence[str]) -> list[str]:
    """The sentence, subject and competitor rules (CONST-006 minus the signal rule)."""
    limit = _max_sentences(tier)
    problems: list[str] = []
    sentences = count_sentences(body)
    if sentences == 0:
        problems.append("body has no sentences besides the greeting and sign-off")
    elif sentences > limit:
        problems.append(f"body has {sentences} sentences; {tier} allows at most {limit}")
    words = count_words(_REPLY_PREFIX.sub("", subject, count=1))
    if words > MAX_SUBJECT_WORDS:
        problems.append(f"subject has {words} words; the limit is {MAX_SUBJECT_WORDS}")
    for where, text in (("subject", subject), ("body", body)):
        for name in competitor_mentions(text, competitors):
            problems.append(f"{where} names competitor {name!r}")
    return problems


def check_outbound(
    message: OutboundMessage,
    *,
    tier: str,
    contact_signals: Sequence[str],
    competitors: Sequence[str],
) -> list[str]:
    """Every CONST-006 problem with ``message``; an empty list means it may be queued."""
    if isinstance(contact_signals, str) or isinstance(competitors, str):
        raise ValidationFailed("contact_signals and competitors must be lists of strings")
    problems = check_shape(message.subject, message.body, tier=tier, competitors=competitors)
    signals = list(dict.fromkeys(s for s in contact_signals if isinstance(s, str) and s.strip()))
    if not signals:
        problems.append("the contact has no signals, so no signal can be referenced")
        return problems
    matched = [s for s in signals if signal_matches(message.signal_referenced, s)]
    if not matched:
        problems.append("signal_referenced does not match any of the contact's signals")
        return problems
    if len(matched) > 1:
        problems.append(
            f"signal_referenced matches {len(matched)} of the contact's signals; "
            "it must name exactly one"
        )
        return problems
    chosen = matched[0]
    core = message_core(message.body)
    if not references_signal(core, chosen):
        problems.append("the body does not reference the signal named in signal_referenced")
    core_tokens = key_tokens(core)
    others = [s for s in signals if s != chosen and _also_references(core_tokens, chosen, s)]
    if others:
        problems.append(
            f"the body also references {len(others)} other signal(s); exactly one is allowed"
        )
    return problems
