"""The mail-events function's part: the provider's reader of received mail (Resend's, for the
replies its inbound webhook names: ``colony.adapters.resend_mail``), built on first use. It
sends nothing, so it is composed with no sender. The data-lifecycle function builds it too,
to read the replies that were held while there was none (``colony.flows.outbound.held_mail``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.runtime.deps import Parts

if TYPE_CHECKING:
    from colony.ports import ReceivedMail
    from colony.settings import Settings


def inbound(settings: Settings) -> ReceivedMail | None:
    """Resend's reader, or None without ``COLONY_RESEND_API_KEY``: a deployment that never
    set up inbound mail still gets signed ``email.received`` events (anyone can write to the
    reply address), and those are held, not failed."""
    if not settings.resend_api_key:
        return None
    # lazy: the provider's SDK loads with the first inbound reply, not at cold start
    from colony.adapters.resend_mail import resend_from_settings

    return resend_from_settings(settings)


def parts() -> Parts:
    return Parts(inbound=inbound)
