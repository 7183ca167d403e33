"""The team's CRM (issue 36): an org's HubSpot connection, and (later) the backfill, the
webhook, reconciliation and write-back built on it.

Owns ``connections``: connecting HubSpot through OAuth (``start``, ``complete``: the state
bound to the org and the person), the tokens in Secret Manager refreshed before they expire
(``access_token``), pausing a connection whose token HubSpot refused (``pause``, and
``with_client``, which does it for any CRM call), disconnecting (``disconnect``), ``status``.

Offers ``connections`` to the admin API and the CLI. The CRM itself is the
``colony.ports.CrmClient`` port; this package never imports its adapter: a function's
composition hands it the builders (``Connector``).
"""
