"""The send function's part: the sender the settings choose (``COLONY_MAIL_PROVIDER``: the
SMTP relay, ``colony.adapters.smtp``, or Resend, ``colony.adapters.resend_mail``), built on
first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from colony.runtime.deps import Parts

if TYPE_CHECKING:
    from colony.ports import Sender
    from colony.settings import Settings


def sender(settings: Settings) -> Sender:
    if settings.mail_provider == "resend":
        # lazy: the provider's SDK loads with the first send, not at cold start
        from colony.adapters.resend_mail import resend_from_settings

        return resend_from_settings(settings)
    # lazy: smtplib loads with the first send
    from colony.adapters.smtp import sender_from_settings

    return sender_from_settings(settings)


def parts() -> Parts:
    return Parts(sender=sender)
