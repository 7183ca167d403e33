"""One chaos soak, start to end: tenants, the stack, campaigns launched, people acting,
faults injected until the settle phase, then every check (``colony.local.soak.checks``).

The run is bounded by ``minutes``: faults stop at ``FAULTS_UNTIL`` of it, so the retries
they caused can finish, and it ends early once everything has settled (every contact's
chain done, every click made, nothing left to deliver). Its own PostgreSQL cluster (in a
scratch directory) is the one restarted, so no other user of the machine's clusters is hit.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from colony.adapters.embedding import OfflineHashEmbedder
from colony.flows.campaigns import campaign
from colony.flows.outbound.sending import LEASE_SECONDS as SEND_LEASE_SECONDS
from colony.knowledge import KnowledgeStore
from colony.local import embedded
from colony.local.brief_demo import local_storage
from colony.local.knowledge_demo import knowledge_stand_ins
from colony.local.soak import checks, world
from colony.local.soak.injector import VICTIMS, Injector, Sampler
from colony.local.soak.person import People
from colony.local.soak.stack import Faults, Stack, soak_stack
from colony.local.soak.work import Work
from colony.registry.functions import FUNCTIONS
from colony.runtime.steps import INVOCATION_SLACK, LEASE_MARGIN
from colony.settings import Settings
from colony.store import Database, connect_factory
from colony.store import soak as rows
from colony.testing.inline import local_deps

FAULTS_UNTIL = 0.8  # of the run at most: then only the retries of what the faults broke
# A step whose holder was killed waits out its lease (colony.runtime.steps: the invocation's
# time and a slack) before the event put back for it takes it over: faults end that long (and
# two minutes) before the bound.
_STEP_LEASE = max(FUNCTIONS[name].timeout_seconds for name in VICTIMS) + INVOCATION_SLACK
SETTLE_S = max(_STEP_LEASE, SEND_LEASE_SECONDS) + LEASE_MARGIN + 120  # a send's lease too
DUE_S = 30.0
OWN_POOL = 8


@dataclass(frozen=True, slots=True)
class Config:
    orgs: int = 5
    contacts: int = 5000
    minutes: float = 20.0
    seed: int = 38
    kill_every_s: float = 45.0  # on average, one function server SIGKILLed
    restart_pg_at: float = 0.35  # of the run
    warm_up: float = 0.25  # of the run: memory is compared after it
    faults: Faults = field(default_factory=Faults)
    push_backoff: tuple[float, float] = (10.0, 600.0)  # Pub/Sub's retry policy (pubsub.tf)
    task_backoff: tuple[float, float] = (5.0, 80.0)  # Cloud Tasks' (tasks.tf)
    settle_s: float = SETTLE_S  # faults end this long before the bound
    min_faults_s: float = 60.0  # but last at least this long
    victims: tuple[str, ...] = VICTIMS
    sample_every_s: float = 2.0  # connections and memory


def run_soak(
    config: Config,
    say: Callable[[str], None],
    *,
    before_checks: Callable[[Stack], None] | None = None,
    keep: Path | None = None,
) -> dict[str, Any]:
    """Run the soak; ``keep``: a directory for its data (the functions' logs under
    ``logs/``) left afterwards, instead of a scratch one."""
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/colony-runtime-{os.getuid()}")
    with tempfile.TemporaryDirectory(prefix="colony-soak-") as scratch:
        data_dir = Path(keep or scratch)
        pgdata = (data_dir / "pgdata").resolve()
        try:
            return _run(config, _database(data_dir), pgdata, say, before_checks)
        finally:
            embedded.stop_cluster(pgdata)


def _database(data_dir: Path) -> Settings:
    """A cluster of the soak's own (it is the one restarted), migrated."""
    base = Settings.from_env({"COLONY_DATA_DIR": str(data_dir)})
    settings = Settings.from_env(
        {
            "COLONY_DB_MODE": "dsn",
            "COLONY_DB_DSN": embedded.embedded_dsn(base, "app"),
            "COLONY_DB_OWNER_DSN": embedded.embedded_dsn(base, "owner"),
            "COLONY_DATA_DIR": str(data_dir),
        }
    )
    embedded.migrate_database(settings)
    return settings


def _run(
    config: Config,
    settings: Settings,
    pgdata: Path,
    say: Callable[[str], None],
    before_checks: Callable[[Stack], None] | None,
) -> dict[str, Any]:
    started = time.monotonic()
    deadline = started + config.minutes * 60
    db = Database(connect_factory(settings, "app"), pool_size=OWN_POOL)
    knowledge = KnowledgeStore(db, OfflineHashEmbedder())
    say(f"{config.orgs} orgs, {config.contacts} contacts…")
    tenants = world.build(db, knowledge, config.orgs, config.contacts, say)
    orgs = [t.org_id for t in tenants]
    with (
        local_storage(settings, say),  # the recording's transcript is stored in GCS
        knowledge_stand_ins(settings, orgs[0]) as stand_ins,
        soak_stack(
            settings,
            db,
            config.faults,
            say,
            push_backoff=config.push_backoff,
            task_backoff=config.task_backoff,
            extra_env=stand_ins,
        ) as stack,
    ):
        deps = local_deps(settings, db, stack.transport, knowledge=knowledge)
        people = People.for_orgs(
            db, deps, stack.servers.urls["approval"], stack.smtp, orgs, config.faults.seed
        )
        work = Work.plan(settings, db, stack.servers.urls, people.tokens)
        runs = {}
        for tenant in tenants:
            campaign_id = campaign.create_campaign(
                deps,
                tenant.org_id,
                name="soak",
                angle=world.ANGLE,
                tier=world.TIER,
                contact_ids=list(tenant.contact_ids),
            )
            runs[tenant.org_id] = campaign.launch(deps, tenant.org_id, campaign_id)
        span = deadline - time.monotonic()
        window = max(min(FAULTS_UNTIL * span, span - config.settle_s), config.min_faults_s)
        say(f"launched {len(runs)} campaigns; faults for the first {window:.0f}s")
        injector = Injector(
            stack.servers,
            pgdata,
            seed=config.faults.seed,
            kill_every_s=config.kill_every_s,
            restart_pg_at_s=min(config.restart_pg_at * span, window / 2),
            victims=config.victims,
            say=say,
        ).start()
        sampler = Sampler(
            stack.servers,
            connect_factory(settings, "owner"),
            settings.db_app_role,
            settings.db_name,
            every_s=config.sample_every_s,
        ).start()
        faults_end = time.monotonic() + window
        driving = time.monotonic()
        progress, settled_at = _drive(
            stack, people, work, tenants, runs, deadline, faults_end, injector, say
        )
        injector.stop()
        sampler.stop()
        if before_checks is not None:
            before_checks(stack)
        # memory is compared after the warm-up share of the run as it went (it may settle early)
        ran = time.monotonic() - driving
        warm_after = time.time() - ran + config.warm_up * ran
        report = _report(config, stack, people, tenants, runs, injector, sampler, warm_after)
        report["work"] = work.check(db)
        report["ok"] = report["ok"] and report["work"]["ok"]
        report["seconds"] = round(time.monotonic() - started, 1)
        report["settled_in_s"] = settled_at
        report["progress"] = progress
        people.close()
    db.close()
    return report


def _drive(
    stack: Stack,
    people: People,
    work: Work,
    tenants: list[world.Tenant],
    runs: dict[str, str],
    deadline: float,
    faults_end: float,
    injector: Injector,
    say: Callable[[str], None],
) -> tuple[dict[str, int], float | None]:
    """People act until everything settles or the time is up; the injector stops at
    ``faults_end``. Returns the last progress reading and when it settled (None: never)."""
    total = sum(len(t.contact_ids) for t in tenants)
    begun = time.monotonic()
    last_said = 0.0
    progress: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=8) as pool, httpx.Client(timeout=120) as http:
        while time.monotonic() < deadline:
            if time.monotonic() >= faults_end and injector.kill_every_s:
                injector.stop()
                injector.kill_every_s = 0
                say("faults stopped: settling")
            people.decide_queues(pool)
            people.react(say)
            work.step(http)
            progress = _progress(stack, tenants, runs, people)
            if time.monotonic() - last_said > 30:
                last_said = time.monotonic()
                say(f"  {time.monotonic() - begun:.0f}s: {progress}")
            if (
                progress.get("contacts_done") == total
                # the faults' whole window is part of every run, however quick its work
                and time.monotonic() >= faults_end
                and _quiet(stack, people, progress)
                and work.settled(stack.db)
            ):
                return progress, round(time.monotonic() - begun, 1)
            time.sleep(1.0)  # the people's pace between looks at their queues
    return progress, None


def _progress(
    stack: Stack, tenants: list[world.Tenant], runs: dict[str, str], people: People
) -> dict[str, int]:
    done = 0
    try:
        for tenant in tenants:
            with stack.db.transaction(tenant.org_id) as cur:
                done += rows.done_contacts(cur, [runs[tenant.org_id]])
    except Exception:  # the database restarting: the next look reads it
        return {"unreadable": 1}
    return {
        "contacts_done": done,
        "decided": sum(1 for d in people.decided.values() if d != "wait"),
        "received": len(stack.smtp.received),
        "reacted": len(people.reacted),
        "queued_deliveries": stack.queues.undelivered(),
        # a step's event put back for when a lease lapses is not due yet: with every
        # contact done it finds its step done, so settling does not wait for it
        "due_deliveries": stack.queues.undelivered(within=DUE_S),
    }


def _quiet(stack: Stack, people: People, progress: dict[str, int]) -> bool:
    """Nothing left to deliver, every message read, and no decision the person still owes."""
    if progress.get("due_deliveries") or progress["reacted"] < progress["received"]:
        return False
    try:
        owed = 0
        for org in people.tokens:
            with stack.db.transaction(org) as cur:
                owed += sum(1 for i in rows.pending_items(cur) if people.decided.get(i) != "wait")
    except Exception:
        return False
    return owed == 0


def _report(
    config: Config,
    stack: Stack,
    people: People,
    tenants: list[world.Tenant],
    runs: dict[str, str],
    injector: Injector,
    sampler: Sampler,
    warm_after: float,
) -> dict[str, Any]:
    db, orgs = stack.db, [t.org_id for t in tenants]
    log = stack.model.log
    sink = stack.queues.pushes.dead_letter
    unrecorded = len(getattr(sink, "unrecorded", []))
    in_memory = len(stack.queues.pushes.dead_letters) + len(stack.queues.tasks.dead_letters)
    found = {
        "contacts": checks.contacts(db, tenants, runs),
        "exactly_once": checks.exactly_once(db, orgs, stack.smtp.received),
        "model_calls": checks.model_calls(db, orgs, log, injector.injected),
        "leases": checks.leases(db, orgs),
        "dead_letters": checks.dead_letters(db, orgs, in_memory, unrecorded),
        "rss": checks.rss(sampler.rss, warm_after),
        "db_connections": checks.connections(
            sampler.connections,
            stack.servers.names,
            OWN_POOL + 1,
            stack.settings.recording_parallelism,
        ),
    }
    kinds = {f: sum(1 for e in log if e.outcome == f) for f in ("429", "500", "timeout")}
    faults = {
        "sigkills": len(injector.injected.kills),
        "restarts_by_supervisor": sum(stack.supervisor.restarts().values()),
        "pg_restarts": len(injector.injected.pg_restarts),
        "model_429": kinds["429"],
        "model_500": kinds["500"],
        "model_timeouts": kinds["timeout"],
        "smtp_4xx": stack.smtp.deferred,
        "pushes_duplicated": stack.duplicated.hits,
        "tasks_delayed": stack.delayed.hits,
        "fault_errors": injector.injected.errors,
    }
    return {
        "bench": "soak",
        "ok": all(c["ok"] for c in found.values()),
        "config": {
            **{k: v for k, v in dataclasses.asdict(config).items() if k != "faults"},
            "faults": dataclasses.asdict(config.faults),
        },
        **found,
        "faults": faults,
        "people": {"clicks": dict(people.clicks), "reactions": _count(people.reacted)},
        "runs": {org: runs[org] for org in orgs},
    }


def _count(reacted: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for what in reacted.values():
        out[what] = out.get(what, 0) + 1
    return out
