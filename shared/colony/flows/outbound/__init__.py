"""Outbound: approved messages out, and everything that comes back (issue 18; ENT-012).

Owns sending (``sending``: once, within limits, never to a suppressed address, from a
verified domain of the org; the unsubscribe link), sender mailboxes (``mailboxes``: an org's
addresses, limits and warm-up; ``senders``: which one a message goes from, rotation within
today's limits, a contact kept on its first mailbox; ``mailbox_grants``: the OAuth grant of
its own Gmail or Microsoft 365 mailbox), sending domains (``sending_domains``:
checked in DNS, keyed, bound to one org, re-checked daily, paused when broken), sequences
(``sequences``: step by step as the org wrote them, email steps sent and LinkedIn or call
steps left to a person as tasks, stopped by any sign the contact does not want it), bounces
by their codes (``bounces``: retried with back-off or suppressed), delivery events
(``delivery``), the circuit breaker per campaign, mailbox and domain, resumed only by a
person (``breaker``, CONST-005), the org's postal address in every footer
(``postal_address``), /overview's alerts (``alerts``), replies (``replies``), the mail
provider's webhook (``mail_events``) and inbound mail held until it can be read (``held_mail``).

Offers ``sending`` (``schedule_send``, ``queue_approved``, the ``outbound_message`` applier's
first half) and ``sequences`` to campaigns and approvals, ``sending_domains``,
``mailboxes`` and ``mailbox_grants`` to the admin API, the CLI, /overview's alerts and the
daily schedule, ``senders.on_cards`` to the approval cards, ``breaker`` (alerts, a person's
resume) to /overview and the admin API, ``postal_address`` to them and to a launch,
``alerts`` to /overview; the rest is reached only through its functions (``send``,
``delivery-events``, ``data-lifecycle``'s reply poll).
"""
