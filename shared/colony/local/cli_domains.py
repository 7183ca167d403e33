"""``colony org domains ORG [--add DOMAIN | --check]``: an org's sending domains, for the
operator, through the flow the admin API uses (``flows.outbound.sending_domains``).

Without an option it lists the domains and what each must publish. ``--add`` adds one (or
checks it again): once its DNS passes it is printed as verified; while it does not, each
problem and the TXT records to publish are printed (zone-file lines, to copy) and the
command exits 2. ``--check`` runs the daily re-check now (a broken domain is paused)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from colony.settings import Settings


def cmd_org_domains(settings: Settings, args: argparse.Namespace) -> int:
    from colony.adapters.dns import resolver_from_settings
    from colony.errors import DomainUnverified
    from colony.flows.outbound import sending_domains
    from colony.local.db import connect_factory
    from colony.runtime.deps import build_deps
    from colony.runtime.org_secrets import secret_store
    from colony.store import Database

    deps = build_deps(settings, db=Database(connect_factory(settings, "app")))
    try:
        if args.add is not None:
            dns, secrets = resolver_from_settings(settings), secret_store(settings)
            try:
                result = sending_domains.add(deps, dns, secrets, args.org_id, args.add, "cli")
            except DomainUnverified as refused:
                _refused(refused.detail)
                return 2
        elif args.check:
            result = sending_domains.recheck(deps, resolver_from_settings(settings), args.org_id)
        else:
            result = sending_domains.domains(deps, args.org_id)
    finally:
        deps.db.close()
    print(json.dumps(result, indent=2, sort_keys=True, default=str), flush=True)
    return 0


def _refused(detail: dict[str, Any]) -> None:
    out = sys.stderr
    print(f"colony: {detail['domain']} cannot send yet:", file=out)
    for problem in detail["problems"]:
        print(f"  - {problem['message']}", file=out)
    print("publish these TXT records, then run --add again:", file=out)
    for record in detail["publish"]:
        print(f"  {record['zone']}", file=out)
    out.flush()


def add_commands(org: Any) -> None:
    """Register ``domains`` under ``colony org``."""
    command = org.add_parser("domains", help="list, add or re-check an org's sending domains")
    command.add_argument("org_id")
    action = command.add_mutually_exclusive_group()
    action.add_argument("--add", metavar="DOMAIN", help="add a domain (again: check it again)")
    action.add_argument(
        "--check", action="store_true", help="check every verified domain again now"
    )
    command.set_defaults(run=cmd_org_domains)
