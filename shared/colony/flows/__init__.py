"""End-to-end flows, one package per capability a user would name, called by the thin
function adapters (``functions/<name>/main.py``) and the HTTP edges.

    handlers                 which flow handles each Pub/Sub-triggered function's events
    campaigns | chat | content | pipeline | recordings    what the agents do; none knows another
    approvals                people decide (what approving does is each capability's applier,
                             joined by ``colony.runtime.appliers``)
    knowledge | outbound | tenants | insights    the base; none knows another
    deps, call_link          what every flow shares: the composition's protocol, the model
                             call's id carried to the item it made

Each capability package's docstring says what it owns and what it offers; a capability
imports another's offered modules only, never its internals, and only downwards in the list
above. ``pyproject.toml``'s import contracts hold all three (docs/architecture.md).
"""
