"""``colony org team ORG [--set FILE]``, ``colony org members ORG [--sync]``, ``colony org
owner ORG contact|deal ID USER --by ADMIN`` and ``colony org assign ORG``: an org's team for
the operator, through the flows the admin API uses (``flows.tenants.team``, ``.owners``,
``.clerk_members``). A reassignment is audited as the admin named by ``--by``; a refusal (a
person who is not an active member of the org, a record the org does not have) exits 2 with
the reason."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from colony.settings import Settings


def _deps(settings: Settings) -> Any:
    from colony.local.db import connect_factory
    from colony.runtime.deps import build_deps
    from colony.store import Database

    return build_deps(settings, db=Database(connect_factory(settings, "app")))


def cmd_org_team(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from colony.contracts.team import Reassign, TeamSettings
    from colony.errors import CallerError
    from colony.flows.tenants import clerk_members, owners, team

    deps = _deps(settings)
    try:
        if args.org == "team" and args.set:
            body = TeamSettings.model_validate_json(Path(args.set).read_text(encoding="utf-8"))
            result = team.replace(deps, args.org_id, body)
        elif args.org == "team":
            result = team.read(deps, args.org_id)
        elif args.org == "members" and args.sync:
            from colony.adapters.clerk_backend import clerk_backend_from_settings

            directory = clerk_backend_from_settings(settings)
            try:
                result = clerk_members.resync(deps, directory, args.org_id, "cli")
            finally:
                directory.close()
        elif args.org == "members":
            result = team.people(deps, args.org_id)
        elif args.org == "owner":
            change = Reassign(subject=args.subject, id=args.id, owner=args.user)
            result = owners.reassign(
                deps, args.org_id, change.subject, change.id, change.owner, args.by
            )
        else:
            result = owners.assign_unowned(deps, args.org_id, args.by)
    except (CallerError, ValidationError) as refused:
        print(f"colony: {refused}", file=sys.stderr, flush=True)
        return 2
    finally:
        deps.db.close()
    print(json.dumps(result, indent=2, sort_keys=True, default=str), flush=True)
    return 0


def add_commands(org: Any) -> None:
    """Register ``team``, ``members``, ``owner`` and ``assign`` under ``colony org``."""
    team = org.add_parser("team", help="an org's time zone, brief time, backup, rules")
    team.add_argument("org_id")
    team.add_argument("--set", metavar="FILE", help="replace them with this JSON file")
    people = org.add_parser("members", help="an org's people (--sync: from Clerk now)")
    people.add_argument("org_id")
    people.add_argument("--sync", action="store_true", help="resync from Clerk's Backend API")
    owner = org.add_parser("owner", help="give a prospect or a deal to a person (audited)")
    owner.add_argument("org_id")
    owner.add_argument("subject", choices=("contact", "deal"))
    owner.add_argument("id")
    owner.add_argument("user", help="the new owner: an active person of the org (user id)")
    owner.add_argument("--by", required=True, help="the admin making the change (user id)")
    assign = org.add_parser("assign", help="assign every unowned prospect and deal by the rules")
    assign.add_argument("org_id")
    assign.add_argument("--by", default="cli", help="who is recorded as assigning")
    for command in (team, people, owner, assign):
        command.set_defaults(run=cmd_org_team)
