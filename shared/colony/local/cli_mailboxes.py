"""``colony org mailboxes ORG [--add ADDRESS --name NAME --limit N ...] [--set ID ...]``: an
org's sender mailboxes, for the operator, through the flows the admin API uses
(``flows.outbound.mailboxes``). Without an option it lists them (today's limit, what each
sent today, and why one waits). ``--add`` adds one on a verified sending domain of the org
(``--kind gmail|graph`` for the org's own Google Workspace / Microsoft 365 mailbox, connected
through the admin API; ``--owner USER_ID``: a person's own); ``--set ID`` changes one
(``--pause`` / ``--resume``, ``--owner`` / ``--no-owner`` included). A
refusal is printed with its reason and the command exits 2."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from colony.settings import Settings


def cmd_org_mailboxes(settings: Settings, args: argparse.Namespace) -> int:
    from colony.contracts.mailboxes import MailboxAdd, MailboxChange
    from colony.errors import CallerError
    from colony.flows.outbound import mailboxes
    from colony.local.db import connect_factory
    from colony.runtime.deps import build_deps
    from colony.store import Database

    deps = build_deps(settings, db=Database(connect_factory(settings, "app")))
    ramp = {
        k: v
        for k, v in (
            ("display_name", args.name),
            ("daily_limit", args.limit),
            ("warmup_start", args.warmup_start),
            ("warmup_days", args.warmup_days),
            ("warmup_first", args.warmup_first),
            ("user_id", args.owner),
        )
        if v is not None
    }
    if args.no_owner:
        ramp["user_id"] = None
    result: Any
    try:
        if args.add is not None:
            body = MailboxAdd.model_validate({"address": args.add, "kind": args.kind, **ramp})
            result = mailboxes.add(deps, args.org_id, body, "cli")
        elif args.set is not None:
            status = "paused" if args.pause else "active" if args.resume else None
            changes = ramp | ({"status": status} if status else {})
            result = mailboxes.change(
                deps, args.org_id, args.set, MailboxChange.model_validate(changes), "cli"
            )
        else:
            result = mailboxes.listing(deps, args.org_id)
    except (CallerError, ValueError) as refused:  # pydantic's ValidationError is a ValueError
        print(f"colony: {refused}", file=sys.stderr, flush=True)
        return 2
    finally:
        deps.db.close()
    print(json.dumps(result, indent=2, sort_keys=True, default=str), flush=True)
    return 0


def add_commands(org: Any) -> None:
    """Register ``mailboxes`` under ``colony org``."""
    command = org.add_parser("mailboxes", help="list, add or change an org's sender mailboxes")
    command.add_argument("org_id")
    action = command.add_mutually_exclusive_group()
    action.add_argument("--add", metavar="ADDRESS", help="add a mailbox on a verified domain")
    action.add_argument("--set", metavar="ID", help="change a mailbox")
    command.add_argument("--kind", choices=("provider", "gmail", "graph"), default="provider")
    command.add_argument("--name", help="the display name recipients see")
    command.add_argument("--limit", type=int, help="messages a day once warmed up")
    command.add_argument("--warmup-start", help="the day the ramp begins (YYYY-MM-DD)")
    command.add_argument("--warmup-days", type=int, help="days the ramp takes to the limit")
    command.add_argument("--warmup-first", type=int, help="messages on the ramp's first day")
    whose = command.add_mutually_exclusive_group()
    whose.add_argument("--owner", metavar="USER_ID", help="the person the mailbox belongs to")
    whose.add_argument("--no-owner", action="store_true", help="with --set: the team's again")
    state = command.add_mutually_exclusive_group()
    state.add_argument("--pause", action="store_true", help="with --set: stop sending")
    state.add_argument("--resume", action="store_true", help="with --set: send again")
    command.set_defaults(run=cmd_org_mailboxes)
