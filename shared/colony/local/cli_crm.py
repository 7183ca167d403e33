"""``colony crm hubspot status|connect|callback|disconnect|stages|map|backfill ORG``: the admin
API's HubSpot routes, for the operator, through the same flows (``flows.crm.connections``,
``flows.crm.stages``, ``flows.crm.backfill``). ``map ORG PIPELINE STAGE OURS`` maps one
HubSpot stage (``OURS`` ``none`` removes it); ``backfill`` runs the org's backfill here to
its end (waiting out HubSpot's limits) and prints the job. The
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
    "stages": "show the stage mapping and the unmapped stages deals wait in",
    "map": "map one HubSpot pipeline stage to a deal stage of ours ('none' removes it)",
    "backfill": "backfill the org's contacts, companies and deals from HubSpot, here",
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
        elif args.action in ("stages", "map", "backfill"):
            result = _sync(deps, args)
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


def _sync(deps: Any, args: argparse.Namespace) -> Any:
    import time

    from colony.contracts.admin import CrmStageMapping
    from colony.errors import ValidationFailed
    from colony.flows.crm import backfill, stages

    if args.action == "stages":
        return stages.view(deps, args.org_id)
    if args.action == "map":
        ours = None if args.ours == "none" else args.ours
        if ours is not None and ours not in stages.OUR_STAGES:
            known = ", ".join((*stages.OUR_STAGES, "none"))
            raise ValidationFailed(f"{ours!r} is not a deal stage of ours: one of {known}")
        entry = {"pipeline_id": args.pipeline, "stage_id": args.stage, "stage": ours}
        edit = CrmStageMapping.model_validate({"stages": [entry]})
        return stages.put(deps, args.org_id, edit, args.actor)
    from colony.runtime.crm_access import HubSpotAccess

    access = HubSpotAccess(deps)
    try:
        job = backfill.start(deps, args.org_id, args.actor, schedule=False)
        while job["status"] in ("queued", "running"):
            job = backfill.run_job(deps, access, args.org_id, job["id"], schedule=False)
            wait = job.pop("waiting_seconds", None)
            if wait:
                time.sleep(min(float(wait), 60.0))  # the operator's terminal waits, no task
        return job
    finally:
        access.close()


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
        if action == "map":
            command.add_argument("pipeline")
            command.add_argument("stage")
            command.add_argument(
                "ours", help="discovery|demo|proposal|negotiation|closed_won|closed_lost|none"
            )
        if action == "callback":
            command.add_argument("--code", required=True)
            command.add_argument("--state", required=True)
        command.set_defaults(run=cmd_crm)
