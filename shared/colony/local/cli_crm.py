"""``colony crm hubspot status|connect|callback|disconnect ORG``: the admin API's HubSpot
connection, for the operator, through the same flows (``flows.crm.connections``). The
operator acts as the org's admin named by ``--as`` (the audit log says who): ``connect``
prints the URL a person of the org opens to allow the app; ``callback`` takes the ``code``
and ``state`` HubSpot sent their browser back with (the state is bound to the same
``--as``); ``disconnect`` revokes and deletes the org's tokens and says what it stopped."""

from __future__ import annotations

import argparse
import json
from typing import Any

from colony.settings import Settings

ACTIONS = {
    "status": "show the org's HubSpot connection",
    "connect": "print the URL that allows the app on a HubSpot portal",
    "callback": "finish connecting with the code and state HubSpot sent back",
    "disconnect": "revoke and delete the org's HubSpot tokens",
}


def cmd_crm(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import SecretStr

    from colony.adapters.hubspot_oauth import hubspot_oauth
    from colony.contracts.admin import CrmCallback
    from colony.flows.crm import connections, outgoing
    from colony.local.db import connect_factory
    from colony.runtime.deps import build_deps
    from colony.runtime.notion_clients import secret_store
    from colony.store import Database

    deps = build_deps(settings, db=Database(connect_factory(settings, "app")))
    result: Any
    try:
        if args.action == "status":
            result = connections.status(deps, args.org_id)
        else:
            auth = hubspot_oauth(settings)
            try:
                secrets = secret_store(settings)
                if args.action == "connect":
                    result = connections.start(deps, auth, args.org_id, args.actor)
                elif args.action == "disconnect":
                    result = connections.disconnect(deps, secrets, auth, args.org_id, args.actor)
                else:
                    body = CrmCallback(code=SecretStr(args.code), state=SecretStr(args.state))
                    result = outgoing.complete(deps, secrets, auth, args.org_id, args.actor, body)
            finally:
                auth.close()
    finally:
        deps.db.close()
    print(json.dumps(result, indent=2, sort_keys=True, default=str), flush=True)
    return 0


def add_commands(sub: Any) -> None:
    """Register ``colony crm hubspot …``."""
    crm = sub.add_parser("crm", help="the team's CRM").add_subparsers(dest="crm", required=True)
    hubspot = crm.add_parser("hubspot", help="an org's HubSpot connection")
    actions = hubspot.add_subparsers(dest="action", required=True)
    for action, help_text in ACTIONS.items():
        command = actions.add_parser(action, help=help_text)
        command.add_argument("org_id")
        if action != "status":
            command.add_argument(
                "--as", dest="actor", default="operator", help="the admin acting (audited)"
            )
        if action == "callback":
            command.add_argument("--code", required=True)
            command.add_argument("--state", required=True)
        command.set_defaults(run=cmd_crm)
