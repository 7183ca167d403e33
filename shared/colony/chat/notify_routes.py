"""The chat function's notification routes: a person's own settings, and Slack's button
clicks (``colony.flows.notifications``).

    GET  /notifications           the signed-in person's channel per kind, their Slack
                                  identity, what could not reach them lately (failed or
                                  held: /overview shows it) and whether Slack is paused
    PUT  /notifications           {"channels": {kind: "email" | "slack" | "off"}}: their own
    PUT  /notifications/slack     {"slack_user_id"?, "webhook_url"?}: who they are in Slack
    POST /slack/interactions      Slack's block actions (form body, Slack-signed; no bearer):
                                  Approve / Reject decided as the mapped person

A person sets only their own settings: the routes act as the bearer token's person, and no
body names a user.
"""

from __future__ import annotations

from typing import Any

from colony.contracts.notifications import PreferencesUpdate, SlackIdentity
from colony.errors import ConfigError, NotFound
from colony.flows.deps import FlowDeps
from colony.flows.notifications import settings
from colony.runtime.auth import Principal
from colony.runtime.edge import JsonRequest, MethodNotAllowed

INTERACTIONS = "/slack/interactions"


def _allow(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)


def interactions(deps: Any, request: JsonRequest) -> dict[str, Any]:
    """A Slack button click (public: Slack's signature is the credential)."""
    _allow(request.method, "POST")
    secret = deps.settings.slack_signing_secret
    if not secret:
        raise ConfigError("COLONY_SLACK_SIGNING_SECRET is required to accept Slack's clicks")
    # lazy: deciding (each kind's edit rules, the appliers) loads with the first click, as it
    # loads with the first POST /approvals (the page's first load does not pay for it)
    from colony.flows.notifications import slack_actions

    raw = request.raw.get_data(cache=True)
    return slack_actions.act(deps, deps.rejections, secret, request.headers, raw)


def handle(deps: FlowDeps, who: Principal, request: JsonRequest) -> dict[str, Any]:
    """``/notifications`` and ``/notifications/slack``, as ``who``."""
    if request.path == "/notifications":
        _allow(request.method, "GET", "PUT")
        if request.method == "GET":
            return settings.preferences(deps, who.org_id, who.user_id)
        body = request.parse(PreferencesUpdate)
        return settings.set_preferences(deps, who.org_id, who.user_id, body)
    if request.path == "/notifications/slack":
        _allow(request.method, "PUT")
        # lazy: Secret Manager's client loads with the first webhook a person sets
        from colony.runtime.org_secrets import secret_store

        identity = request.parse(SlackIdentity)
        store = secret_store(deps.settings)
        return settings.set_slack_identity(deps, store, who.org_id, who.user_id, identity)
    raise NotFound("there is nothing at this path")
