"""AGT-001 chat: the session event log, its live notifications, history and tools.

The turn itself (hydrate → model → tools → approval gates) is ``colony.flows.chat``.
"""
