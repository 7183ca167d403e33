"""The send function's part: the mail relay (``colony.adapters.smtp``), built on first use."""

from __future__ import annotations

from colony.runtime.deps import Parts


def parts() -> Parts:
    # lazy: smtplib and the adapter load on the first request, not at cold start
    from colony.adapters.smtp import sender_from_settings

    return Parts(sender=sender_from_settings)
