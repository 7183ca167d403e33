"""What every ``make run`` scene works with (``DemoContext``), and the wait for a campaign run
that more than one scene follows.

Apart from ``campaign_demo`` so that the scenes it hands on to (``outbound_demo``) and the ones
that launch their own campaign (``customer_demo``) import these without importing it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from colony.errors import ConfigError
from colony.knowledge import KnowledgeStore
from colony.local.functions import FunctionServers
from colony.local.progress import Progress
from colony.settings import Settings
from colony.store import Database, fetch_one
from colony.testing.smtp_server import SmtpServer


@dataclass(frozen=True)
class DemoContext:
    """What each ``make run`` scenario step works with: the demo org's stores, the functions
    served locally with a JWT for them, and where to print."""

    settings: Settings
    db: Database
    knowledge: KnowledgeStore
    org_id: str
    servers: FunctionServers
    token: str
    say: Callable[[str], None]
    mail: SmtpServer | None = None  # the local mail server the send function sends through


def wait_for_run(
    db: Database,
    org_id: str,
    run_id: str,
    total: int,
    timeout: float,
    *,
    alive: Callable[[], object] | None = None,
) -> Any:
    """The campaign run once it has completed or failed, its progress shown meanwhile;
    ``alive`` as for ``wait_until``."""
    progress = Progress("campaign contacts", max(total, 1))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None:
            alive()
        with db.transaction(org_id) as cur:
            run = fetch_one(
                cur,
                "SELECT status, contacts_done, contacts_total FROM campaign_runs WHERE id = %s",
                (run_id,),
            )
        while run and progress.done < run["contacts_done"]:
            progress.advance(run["status"])
        if run and run["status"] in ("completed", "failed"):
            return run
        time.sleep(0.2)  # polling the run's progress for display, bounded by the deadline
    raise ConfigError(f"the demo campaign did not finish within {timeout:.0f}s")
