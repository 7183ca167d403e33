"""Asking for a company's research (issue 33 item 1): ``request`` starts a pass (or joins the
running one, or answers ``ready`` when a pass ended within ``FRESH_DAYS``: research again
fetches nothing) and schedules the ``research`` function's task (``runner`` works it);
``status`` is what was kept, as the CLI and the admin API show it; ``wake_stalled`` is the
research-sweep schedule's share for an org (a pass whose tasks were lost).

Apart from the runner so that what only asks (the campaign chain, the admin API) does not
carry the reader and its parsers in its bundle (``colony.deploy.imports``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date, datetime
from typing import Any

from colony.contracts.research import ResearchTask, domain_of
from colony.errors import ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.research import plan
from colony.registry.functions import RESEARCH_QUEUE
from colony.runtime.transport import enqueue
from colony.store.research import jobs, sources

FRESH_DAYS = 7  # a company researched this recently is not fetched again
SWEEP_PAGE = 200  # stalled passes one sweep task wakes (each is one task to enqueue)


@dataclass(frozen=True, slots=True)
class Waiter:
    """A message to publish when a company's research ends: the event a campaign's
    contact waits with (its data is ids, never text), and a key that makes it one."""

    key: str
    topic: str
    data: str
    attributes: Mapping[str, str]


def request(
    deps: FlowDeps,
    org_id: str,
    company: str,
    *,
    requested_by: str,
    waiter: Waiter | None = None,
    force: bool = False,
    dispatch: bool = True,
) -> str:
    """Research ``company`` (a domain or a URL) for ``org_id``: ``ready`` (a pass ended
    within the freshness window and ``force`` is not set: nothing to fetch), ``running``
    (a pass is under way: ``waiter`` is published when it ends) or ``started``.
    ``dispatch=False`` queues no task: the caller works the pass itself (``run_to_end``)."""
    domain = domain_of(company)
    if domain is None:
        raise ValidationFailed(f"{company!r} is not a company domain (e.g. example.com)")
    with deps.db.transaction(org_id) as cur:
        job = jobs.get(cur, domain, FRESH_DAYS * 86400)
        if job is not None and job["fresh"] and not force:
            return "ready"
        pass_no = None
        if job is None or job["status"] == "done":
            pass_no = jobs.start(cur, org_id, domain, plan.first(domain), requested_by)
        joined = waiter is not None and jobs.add_waiter(cur, domain, asdict(waiter))
        if pass_no is None and waiter is not None and not joined:
            return "ready"  # the pass ended between our two statements
        # a running pass no task has touched for STALLED_AFTER (its tasks' retries ran out,
        # a queue was purged): woken with a task of its own, so its waiters are not stranded
        stalled = pass_no is None and job is not None and job["stalled"]
        woken = jobs.wake(cur, domain, int(job["pass"])) if stalled and job else None
    if woken is not None and job is not None and dispatch:
        schedule(deps, org_id, domain, int(job["pass"]), woken, 0.0)
    if pass_no is None:
        return "running"
    if dispatch:
        schedule(deps, org_id, domain, pass_no, 0, 0.0)
    return "started"


def wake_stalled(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    """The research-sweep schedule's share for ``org_id``: each stalled pass (no task has
    held or touched it for ``jobs.STALLED_AFTER``) handed to a new task, so the contacts
    waiting on it are not left waiting for a request that may never come. ``SWEEP_PAGE``
    at most each run; the next run takes the rest."""
    with deps.db.transaction(org_id) as cur:
        found = jobs.stalled(cur, SWEEP_PAGE)
        woken = [(d, p, jobs.wake(cur, d, p)) for d, p in found]
    for domain, pass_no, wake in woken:
        if wake is not None:  # it ended between the two statements otherwise
            schedule(deps, org_id, domain, pass_no, wake, 0.0)
    return {"org_id": org_id, "woken": sum(w is not None for _, _, w in woken)}


def status(deps: FlowDeps, org_id: str, company: str) -> dict[str, Any]:
    """The company's research as the CLI and the admin API show it: the job and each
    source (URL, role, outcome, dates; never a page's text)."""
    domain = domain_of(company)
    if domain is None:
        raise ValidationFailed(f"{company!r} is not a company domain (e.g. example.com)")
    with deps.db.transaction(org_id) as cur:
        job = jobs.get(cur, domain, FRESH_DAYS * 86400)
        found = sources.for_domain(cur, domain)
    shown = ("status", "outcome", "pass", "pages", "downloads", "started_at", "finished_at")
    return {
        "domain": domain,
        "job": {k: _json(job[k]) for k in (*shown, "fresh")} if job else None,
        "sources": [{k: _json(s[k]) for k in sources.SHOWN} for s in found],
    }


def _json(value: Any) -> Any:
    """Dates and times as ISO text: the status is JSON as it is."""
    return value.isoformat() if isinstance(value, date | datetime) else value


def schedule(
    deps: FlowDeps, org_id: str, domain: str, pass_no: int, wake: int, delay: float
) -> str:
    task = ResearchTask(org_id=org_id, domain=domain, pass_no=pass_no)
    name = f"research-{org_id}-{domain}-{pass_no}-{wake}"
    return enqueue(deps.transport, RESEARCH_QUEUE, task, task_id=name, delay_seconds=delay)
