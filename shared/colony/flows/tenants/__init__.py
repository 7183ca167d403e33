"""Tenants: an org's life with us, from Clerk's webhook to its erasure.

Owns orgs from Clerk (``clerk_orgs``), what an org's admins set (``org_admin``: ICP, sequence
library, settings), imports and their progress (``imports``, ``import_progress``), erasure
and retention (``erasure``, ``retention``) and the schedules' fan-out to one task per org
(``schedules``).

Offers ``org_admin`` (every agent reads the org's ICP, sequences and competitors through
it), ``erasure``, ``retention``, ``imports`` and ``import_progress`` to the admin API, the
CLI and /overview. Knows no other capability: what an erasure must undo outside our
database (Drive channels, Notion tokens) is handed to it (``erasure.OrgConnections``).
"""
