"""AGT-001 chat's HTTP edge: the chat function's routes and its instance's live notifications.

``api`` maps requests onto the chat flow, ``hub`` holds the one ``LISTEN`` connection per
instance that wakes the event streams. The turn itself (hydrate → model → tools → approval
gates), its history, tools and event log are ``colony.flows.chat``: this package imports the
flow, the flow never imports it (the ``layers`` import contract in ``pyproject.toml``).
"""
