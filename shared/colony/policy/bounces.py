"""What a refusal means for the address and the sender (issue 39 item 4): one classification
every send path and every bounce report goes through.

A mail server's refusal carries an SMTP reply code (RFC 5321: 4xx for now, 5xx for good) and,
from nearly every server today, an enhanced status code ``class.subject.detail`` (RFC 3463):
``5.1.1`` "bad destination mailbox address", ``4.2.2`` "mailbox full", ``5.7.1`` "delivery not
authorised, message refused". Its class decides what we do, as the RFC defines it:

    2.x.x  success                  ─► nothing to do
    4.x.x  persistent transient     ─► ``transient``: the message is tried again later, with
                                        back-off; an address that keeps refusing (``SOFT_LIMIT``
                                        tries, or refusals spread over ``SOFT_WINDOW``) is
                                        suppressed as bounced
    5.x.x  permanent                ─► ``permanent``: the address is suppressed now

The subject and detail only name the bounce (``label``: ``bad_mailbox``, ``mailbox_full``,
``policy``…) for the record and for /overview; they never override the class. ``5.2.2``
(mailbox full, reported as permanent) is permanent because its server said so, and ``4.2.2``
is transient. Where the two disagree (``550 4.2.2``, against the RFC) the reply code decides
the class. A reply without an enhanced code is judged by its reply code's first digit; a
provider's report without either (Resend's ``bounce.type``) by the type it names.

Only codes are kept: a server's reply text can quote the recipient and is never stored or
logged (``parse`` reads the codes out of it and drops the rest).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

BounceClass = Literal["permanent", "transient"]

SOFT_LIMIT = 5  # transient refusals of one address before it is treated as a hard bounce
SOFT_WINDOW = timedelta(days=3)  # ... or refusals that have gone on this long
RETRY_BASE_SECONDS = 600  # the first retry after a transient refusal; doubled each time
RETRY_MAX_SECONDS = 6 * 3600

# RFC 3463 §3.3-3.9 (and RFC 3886/5248 additions), subject.detail → a name for the record.
_LABELS: dict[str, str] = {
    "1.0": "address",
    "1.1": "bad_mailbox",
    "1.2": "bad_domain",
    "1.3": "bad_address_syntax",
    "1.6": "mailbox_moved",
    "1.10": "null_mx",
    "2.0": "mailbox",
    "2.1": "mailbox_disabled",
    "2.2": "mailbox_full",
    "2.3": "message_too_large",
    "3.0": "mail_system",
    "3.1": "mail_system_full",
    "3.4": "message_too_large",
    "4.0": "routing",
    "4.1": "no_answer",
    "4.2": "bad_connection",
    "4.4": "unable_to_route",
    "4.7": "message_expired",
    "5.0": "protocol",
    "5.3": "too_many_recipients",
    "6.0": "content",
    "7.0": "policy",
    "7.1": "policy",
    "7.25": "reverse_dns",
    "7.26": "authentication",
    "7.27": "null_mx",
}
_SUBJECTS = {
    "1": "address",
    "2": "mailbox",
    "3": "mail_system",
    "4": "routing",
    "5": "protocol",
    "6": "content",
    "7": "policy",
}
_ENHANCED = re.compile(r"(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.])")
_REPLY = re.compile(r"(?<!\d)([245]\d\d)(?!\d)")


@dataclass(frozen=True, slots=True)
class Bounce:
    """One refusal, classified: ``klass`` decides what happens; ``status`` (``5.1.1``) and
    ``smtp`` (550) are what the server said, as codes; ``label`` names it."""

    klass: BounceClass
    label: str
    status: str | None = None
    smtp: int | None = None

    @property
    def code(self) -> str:
        """The codes as one short text (``550 5.1.1``), for a row or an audit entry."""
        return " ".join(str(p) for p in (self.smtp, self.status) if p) or "no code"


def parse(text: str | None) -> tuple[int | None, str | None]:
    """The SMTP reply code and the enhanced status code in a server's reply or a DSN's
    ``Diagnostic-Code`` (``smtp; 550 5.1.1 <…> no such user``); either may be missing."""
    if not text:
        return None, None
    head = text[:500]
    enhanced = _ENHANCED.search(head)
    reply = _REPLY.search(head[: enhanced.start()] if enhanced else head)
    return (
        int(reply.group(1)) if reply else None,
        ".".join(enhanced.groups()) if enhanced else None,
    )


def classify(
    smtp: int | None = None, status: str | None = None, *, reported: str | None = None
) -> Bounce:
    """The refusal's class and name. ``status`` (an enhanced code) decides when it is there,
    else ``smtp`` (a reply code), else ``reported``: a provider's own word for it
    (``permanent`` / ``hard``; anything else, ``transient``, ``undetermined``, is soft)."""
    if status is not None and not _ENHANCED.fullmatch(status):
        status = None  # a malformed code says nothing; never guessed from
    if smtp is not None and not 200 <= smtp <= 599:
        smtp = None
    if status is not None:
        cls, subject, detail = status.split(".")
        label = _LABELS.get(f"{subject}.{detail}") or _SUBJECTS.get(subject, "other")
        if cls == "2":
            label = "delivered"
        # RFC 3463 asks the class to agree with the reply code; where a server breaks that,
        # the reply code decides, as it decides what the SMTP exchange itself means
        decided = str(smtp)[0] if smtp is not None and str(smtp)[0] in "45" else cls
        return Bounce(_class(decided, reported), label, status, smtp)
    if smtp is not None:
        return Bounce(_class(str(smtp)[0], reported), "smtp_reply", None, smtp)
    word = (reported or "").strip().lower()
    klass: BounceClass = "permanent" if word in ("permanent", "hard") else "transient"
    return Bounce(klass, "reported_" + (word or "unknown")[:20], None, None)


def _class(digit: str, reported: str | None) -> BounceClass:
    if digit == "5":
        return "permanent"
    if digit == "4":
        return "transient"
    # a 2.x.x "refusal" is a contradiction: trust what the report calls it, else soft
    return "permanent" if (reported or "").lower() in ("permanent", "hard") else "transient"


def retry_delay(soft_bounces: int) -> int:
    """Seconds before the next try of a message refused for now ``soft_bounces`` times."""
    tries = max(1, soft_bounces)
    return int(min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** (tries - 1)))


def exhausted(bounces: int, lasting: timedelta) -> bool:
    """Whether an address refused for now ``bounces`` times, the first ``lasting`` ago, is
    to be treated as a hard bounce (suppressed)."""
    return bounces >= SOFT_LIMIT or (bounces >= 2 and lasting >= SOFT_WINDOW)
