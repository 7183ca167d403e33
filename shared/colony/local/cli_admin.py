"""``colony org icp|sequences|settings``: the admin API's org data operations, for the
operator. Each reads the org's current value, or with ``--set FILE`` (JSON, ``-`` for stdin)
replaces it through the same contract and flow the admin API uses (``flows.tenants.org_admin``), so
a file the API would refuse with a 422 is refused here naming the same field."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from colony.settings import Settings

WHAT = {
    "icp": "the ICP definition and anti-ICP rules (a replace writes a new version)",
    "sequences": "the sequence library (ENT-004): named sequences of channel steps",
    "settings": "competitors (CONST-006), sending limits, research and the monthly budget",
}


def _read(path: str) -> Any:
    from colony.errors import ValidationFailed

    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationFailed(f"{path}: not JSON ({error.msg} at line {error.lineno})") from None


def cmd_org_data(settings: Settings, args: argparse.Namespace) -> int:
    import pydantic

    from colony.contracts.admin import IcpReplace, OrgSettingsReplace, SequenceLibrary
    from colony.errors import Unprocessable, describe_validation
    from colony.flows.tenants import org_admin
    from colony.local.db import connect_factory
    from colony.runtime.deps import build_deps
    from colony.store import Database

    table: dict[str, tuple[Callable[..., Any], Callable[..., Any], type[pydantic.BaseModel]]]
    table = {
        "icp": (org_admin.icp, org_admin.replace_icp, IcpReplace),
        "sequences": (org_admin.sequences, org_admin.replace_sequences, SequenceLibrary),
        "settings": (org_admin.settings, org_admin.replace_settings, OrgSettingsReplace),
    }
    read, replace, model = table[args.what]
    body = None
    if args.set is not None:
        try:
            body = model.model_validate(_read(args.set))
        except pydantic.ValidationError as error:
            raise Unprocessable(f"invalid {args.what}: {describe_validation(error)}") from None
    deps = build_deps(settings, db=Database(connect_factory(settings, "app")))
    try:
        result = read(deps, args.org_id) if body is None else replace(deps, args.org_id, body)
    finally:
        deps.db.close()
    print(json.dumps(result, indent=2, sort_keys=True, default=str), flush=True)
    return 0


def add_commands(org: Any) -> None:
    """Register ``icp``, ``sequences`` and ``settings`` under ``colony org``."""
    for what, help_text in WHAT.items():
        command = org.add_parser(what, help=f"show or replace {help_text}")
        command.add_argument("org_id")
        command.add_argument(
            "--set", metavar="FILE", help="replace it with this JSON file ('-': stdin)"
        )
        command.set_defaults(run=cmd_org_data, what=what)
