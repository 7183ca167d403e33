"""``colony explain <output-id>``: the model calls behind an approval item, a chat answer
(its turn id) or a daily brief (its date), and what each one's context was built from."""

from __future__ import annotations

import argparse
from typing import Any

from colony.settings import Settings


def cmd_explain(settings: Settings, args: argparse.Namespace) -> int:
    from colony.flows.insights import explain
    from colony.local.db import connect_factory
    from colony.local.demo import read_json
    from colony.runtime.compose.assets import parts
    from colony.runtime.deps import build_deps
    from colony.store import Database

    org = args.org or read_json("org.json")["id"]
    # the assets bucket: a signal read from a web page links our stored copy of it
    deps = build_deps(settings, db=Database(connect_factory(settings, "app")), parts=parts())
    try:
        print(explain.render(explain.explain(deps, org, args.output_id)), flush=True)
    finally:
        deps.db.close()
    return 0


def add_commands(sub: Any) -> None:
    """Register ``colony explain``."""
    command = sub.add_parser(
        "explain", help="show what an output's model calls were built from (provenance)"
    )
    command.add_argument("output_id", help="an approval item id, a chat turn id or a brief date")
    command.add_argument("--org", help="org id (default: the demo org)")
    command.set_defaults(run=cmd_explain)
