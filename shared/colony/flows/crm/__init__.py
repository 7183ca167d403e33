"""The team's CRM (issue 36): an org's HubSpot connection, and what Colony writes there.

Owns ``connections``: connecting HubSpot through OAuth (``start``, ``complete``: the state
bound to the org and the person), the tokens in Secret Manager refreshed before they expire
(``access_token``), pausing a connection whose token HubSpot refused (``pause``, and
``with_client``, which does it for any CRM call), disconnecting (``disconnect``), ``status``.

Owns what goes out (``pushes``: one durable task per write, after the act commits):
``deal_writes`` (an approved deal update written back, a conflict put to a person) and
``engagements`` (sent messages, replies and call summaries logged on the contact and deal).

Offers ``connections`` to the admin API and the CLI; ``deal_writes.read_later``,
``write_later`` and ``apply_conflict`` to the deal flows and the approval table;
``engagements.log_later`` to sending, replies and recordings; ``pushes.run`` and
``deal_writes.read_card`` to the CRM queue's target. The CRM itself is the
``colony.ports.CrmClient`` port; this package never imports its adapter: a function's
composition hands it the builders (``Connector``, ``pushes.CrmParts``).
"""
