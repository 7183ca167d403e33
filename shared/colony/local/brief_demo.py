"""``make run``'s issue-7 scenario: a deal closes and gets its deployment kit (GCS, signed
URL), a content piece is written and published, the daily brief is printed, and the
knowledge graph summarised.

Wiring (in ``cmd_demo``)::

    with local_storage(settings, say):                  # before the functions start
        with demo_functions(...) as (servers, token):
            run_demo_campaign(...)
            run_brief_demo(settings, db, org_id, servers, token, say)

``local_storage`` starts ``gcp-storage-emulator`` with the assets bucket and sets
``STORAGE_EMULATOR_HOST`` in this process, which the function processes inherit; they sign
URLs with the key generated under the data dir, as this process does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from colony.errors import ConfigError, NotFound
from colony.local.functions import FunctionServers
from colony.local.progress import wait_until
from colony.settings import Settings
from colony.store import Database, fetch_one

Say = Callable[[str], None]
KIT_OF_DEAL = """
SELECT k.object_name, k.gcs_uri, k.status, k.approval_item_id, a.payload FROM deployment_kits k
JOIN approval_items a ON a.id = k.approval_item_id WHERE k.deal_id = %s
"""


@contextmanager
def local_storage(settings: Settings, say: Say) -> Iterator[str]:
    """The assets bucket on a local GCS emulator whose objects live under
    ``<data_dir>/gcs`` (beside the embedded database that refers to them); yields
    ``STORAGE_EMULATOR_HOST``."""
    from colony.adapters.storage import local_signing_key_path
    from colony.local.stack import update_stack
    from colony.testing.emulators import storage_emulator

    started = time.perf_counter()
    with storage_emulator(settings.assets_bucket, data_dir=settings.data_dir / "gcs") as url:
        previous = os.environ.get("STORAGE_EMULATOR_HOST")
        os.environ["STORAGE_EMULATOR_HOST"] = url
        say(
            f"GCS emulator (gcp-storage-emulator) at {url}, bucket {settings.assets_bucket!r},"
            f" ready in {time.perf_counter() - started:.1f}s; V4 URLs signed with"
            f" {local_signing_key_path(settings)}"
        )
        update_stack(settings, storage_emulator_host=url)
        try:
            yield url
        finally:
            if previous is None:
                os.environ.pop("STORAGE_EMULATOR_HOST", None)
            else:
                os.environ["STORAGE_EMULATOR_HOST"] = previous


def run_brief_demo(
    settings: Settings,
    db: Database,
    org_id: str,
    servers: FunctionServers,
    token: str,
    say: Say,
    *,
    deal_external_id: str = "D-005",
) -> None:
    """Close a deal over HTTP → kit link; a content piece → published; the daily brief; the
    graph summary. Every step goes through the running functions."""
    from colony.adapters.storage import blob_store_from_settings
    from colony.adapters.transport_local import LocalTransport
    from colony.flows import content
    from colony.flows.pipeline import deals
    from colony.registry.graph import build_graph
    from colony.testing.inline import local_deps

    auth = {"Authorization": f"Bearer {token}"}
    transport = LocalTransport(servers.urls)
    flow_deps = local_deps(settings, db, transport)
    try:
        with httpx.Client(timeout=60) as http:
            with db.transaction(org_id) as cur:
                deal = fetch_one(
                    cur,
                    "SELECT id, name, stage FROM deals WHERE external_id = %s",
                    (deal_external_id,),
                )
            if deal is None:
                raise ConfigError(f"the demo org has no deal {deal_external_id}")
            item = deals.propose_deal_update(
                flow_deps,
                org_id,
                deal["id"],
                {"stage": "closed_won"},
                source={"demo": "make run"},
                source_agent="AGT-006",
            )
            reply = http.post(
                servers.urls["approval"], json={"item_id": item, "action": "approve"}, headers=auth
            )
            say(
                f"deal {deal['name']!r}: {deal['stage']} → closed_won approved over HTTP:"
                f" {reply.status_code}; AGT-009 builds its deployment kit…"
            )

            def kit() -> Any:
                with db.transaction(org_id) as cur:
                    return fetch_one(cur, KIT_OF_DEAL, (deal["id"],))

            found = wait_until("the deployment kit", kit, alive=servers.check)
            try:
                head = blob_store_from_settings(settings).get(found["object_name"])
                first = repr(head.decode().splitlines()[0][:60]) + "…"
            except NotFound:  # stored by a run whose emulator kept objects in memory only
                first = "object missing from the local bucket; `rm -rf .colony` starts afresh"
            # the link as a reviewer gets it: the chat function's queue signs it afresh
            queue = http.get(
                f"{servers.urls['chat']}/approvals", params={"kind": "deployment_kit"}, headers=auth
            ).json()
            card = next(i for i in queue["items"] if i["id"] == found["approval_item_id"])
            say(
                f"  kit {found['gcs_uri']} ({found['payload']['title']!r}, {first}),"
                f" {found['status']}; in the approval"
                f" queue with a V4 signed link valid until {card['link']['expires_at']}:"
            )
            say(f"  {card['link']['url']}")

            request_id = content.request_content(
                flow_deps,
                org_id,
                "what a 90-day utilization pilot proves to a CFO",
                "linkedin_post",
            )

            def queued() -> Any:
                return content.queued_item(flow_deps, org_id, request_id)

            piece = wait_until("the content piece", queued, alive=servers.check)
            http.post(
                servers.urls["approval"],
                json={"item_id": piece["id"], "action": "approve"},
                headers=auth,
            )
            say(
                f"AGT-008 content piece {piece['payload']['title']!r} (grounded in "
                + ", ".join(sorted({g["domain"] for g in piece["payload"]["grounding"]}))
                + ") approved and published"
            )

            reply = http.post(servers.urls["daily-brief"], json={"org_id": org_id})
            brief = reply.json()
            if reply.status_code != 200:
                raise ConfigError(f"the daily brief failed: {brief}")
            say(
                f"AGT-010 daily brief for {brief['brief_date']} ({len(brief['content'].split())}"
                f" words{'' if brief['created'] else ', already stored today'}):"
            )
            for line in brief["content"].splitlines():
                say(f"  {line}")
    finally:
        transport.close()
    say(f"knowledge graph (from the registries): {build_graph().summary()}  (colony graph --help)")
