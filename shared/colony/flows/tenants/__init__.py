"""Tenants: an org's life with us, from Clerk's webhook to its erasure.

Owns orgs from Clerk (``clerk_orgs``), what an org's admins set (``org_admin``: ICP, sequence
library, settings), imports and their progress (``imports``, ``import_progress``), erasure
and retention (``erasure``, ``retention``), the schedules' fan-out to one task per org
(``schedules``), and what an org spends: its usage report (``usage``) and its monthly budget,
with the campaign work held while it is spent and that work's release (``budget``).

Offers ``org_admin`` (every agent reads the org's ICP, sequences and competitors through
it), ``erasure``, ``retention``, ``imports``, ``import_progress`` and ``usage`` to the admin
API, the CLI and /overview, and ``budget`` to campaigns and the chat (a launch refused, a
step held) and to the function that releases held work. Knows no other capability: what an
erasure must undo outside our database (Drive channels, Notion tokens) is handed to it
(``erasure.OrgConnections``).
"""
