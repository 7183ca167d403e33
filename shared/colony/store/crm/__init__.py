"""The CRM capability's data (issue 36): each org's CRM connection and its OAuth flows in
progress (``connections``), and what was written to the CRM under an idempotency key
(``writes``).

Every function takes a cursor from ``Database.transaction(org_id)`` (RLS scopes it)."""
