"""``colony research <domain>``: research one company for an org here and now (issue 33), the
same pass the ``research`` function works, printing each fetch as it happens, then what was
kept. ``--force`` researches again inside the freshness window (unchanged pages are asked
conditionally and not downloaded again); ``--show`` prints what is stored without fetching.

The open web is read politely and safely as in production; locally ``COLONY_RESEARCH_WEB``
points the stand-in web's hostnames at it (docs/research.md)."""

from __future__ import annotations

import argparse
from typing import Any

from colony.settings import Settings


def cmd_research(settings: Settings, args: argparse.Namespace) -> int:
    from colony.flows.research import requests, runner
    from colony.local.db import connect_factory
    from colony.local.demo import read_json
    from colony.runtime.compose.research import parts
    from colony.runtime.deps import build_deps
    from colony.store import Database

    org = args.org or read_json("org.json")["id"]
    deps = build_deps(settings, db=Database(connect_factory(settings, "app")), parts=parts())
    try:
        if not args.show:

            def fetched(event: dict[str, Any]) -> None:
                status = event["status"] or "-"
                print(
                    f"  {event['role']:<10} {event['outcome']:<18} {status:>4}  {event['url']}",
                    flush=True,
                )

            domain = requests.domain_of(args.domain) or args.domain  # refused below, if None
            print(f"researching {domain} for {org}…", flush=True)
            answer = runner.run_to_end(
                deps, org, args.domain, force=args.force, requested_by="cli", on_fetch=fetched
            )
            if answer["status"] == "fresh":
                print(
                    "  researched within the freshness window: nothing fetched"
                    " (--force to research again)",
                    flush=True,
                )
        print(render(requests.status(deps, org, args.domain)), flush=True)
    finally:
        deps.db.close()
    return 0


def render(status: dict[str, Any]) -> str:
    job = status["job"]
    if job is None:
        return f"{status['domain']}: not researched for this org"
    lines = [
        f"{status['domain']}: pass {job['pass']} {job['status']}"
        + (f", {job['outcome']}" if job["outcome"] else "")
        + f" ({job['pages']} fetches, {job['downloads']} downloaded)"
    ]
    for s in status["sources"]:
        when = s["published_at"] or "undated"
        what = s["problem"] or ("needs a browser" if s["needs_browser"] else "")
        lines.append(
            f"  {s['role']:<10} {s['outcome']:<14} {s['kind'] or '-':<9} {when:<10}"
            f" {s['text_chars'] or 0:>6} chars  {s['final_url']}" + (f"  [{what}]" if what else "")
        )
    return "\n".join(lines)


def add_commands(sub: Any) -> None:
    """Register ``colony research``."""
    command = sub.add_parser("research", help="research a company's website for an org, now")
    command.add_argument("domain", help="the company's domain (or its website's URL)")
    command.add_argument("--org", help="org id (default: the demo org)")
    command.add_argument("--force", action="store_true", help="research again, even if fresh")
    command.add_argument("--show", action="store_true", help="show what is stored; fetch nothing")
    command.set_defaults(run=cmd_research)
