"""Knowledge flows: what keeps an org's Knowledge Core current (SPEC §6.4, §6.7). The engine
itself (retrieve, upsert, chunking) is ``colony.knowledge``; this package moves knowledge in.

Owns the KC update lifecycle (``kc_lifecycle``: approved candidates, exemplars and kits grow
KC-08..10), tiering an org that outgrew the shared partition (``kc_tiering``), and Notion:
workspaces per org (``notion_workspaces``), the webhook (``notion_webhook``), the re-embed
worker (``notion_reembed``), backfill and reconciliation (``notion_backfill``) and what the
last two share (``notion_pages``).

Offers ``kc_lifecycle`` (the appliers of KC candidates, exemplars kept from approved
messages and kits) and ``notion_workspaces`` (connect, status) to the admin API; the rest is
reached only through its functions.
"""
