"""The team's CRM (issue 36): an org's HubSpot connection, what Colony reads from it and what
it writes there.

Owns ``connections``: connecting HubSpot through OAuth (``start``, ``complete``: the state
bound to the org and the person), the tokens in Secret Manager refreshed before they expire
(``access_token``), pausing a connection whose token HubSpot refused (``pause``, and
``with_client``, which does it for any CRM call), disconnecting (``disconnect``), ``status``.

Owns what goes out (``pushes``: one durable task per write, after the act commits):
``deal_writes`` (an approved deal update written back, a conflict put to a person) and
``engagements`` (sent messages, replies and call summaries logged on the contact and deal).

Owns what comes in: ``stages`` (the org's one stage mapping, edited by admins, which
write-back reads too), ``apply`` (what a record becomes here), ``backfill`` (a resumable
import job), ``webhook`` and ``events`` (HubSpot's events kept, then applied), ``reconcile``
(the daily search for what webhooks missed) and ``limits`` (HubSpot's per-portal limit
counted in PostgreSQL).

Offers ``connections``, ``stages`` and ``backfill`` to the admin API and the CLI;
``webhook.receive`` to the admin function; ``deal_writes.read_later``,
``write_later`` and ``apply_conflict`` to the deal flows and the approval table;
``engagements.log_later`` to sending, replies and recordings; ``outgoing.run``,
``deal_writes.read_card``, ``backfill.run_job``, ``events.drain`` and ``reconcile.run`` to the
CRM queue's target (the crm function). The CRM itself is the
``colony.ports.CrmClient`` port; this package never imports its adapter: a function's
composition hands it the builders (``Connector``, ``pushes.CrmParts``,
``backfill.CrmAccess``).
"""
