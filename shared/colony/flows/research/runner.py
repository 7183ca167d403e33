"""The research of one company for one org, as a resumable job (issue 33 item 1).

A pass is asked for with ``requests.request``; ``run`` is the ``research`` function's task:
it takes the pass's lease, then fetches the best entry of the frontier (``plan``) and keeps
what it got (``keep``) until the frontier or the page budget is spent, saving its progress
after every fetch. A site that asks for a pause of a second or two is waited for here (as a
visit waits between its own requests); a longer one ends the task, which schedules itself
for when the site is free. A task that runs out of its time budget hands the pass to a new
one. A crash loses at most one fetch: the next task (Cloud Tasks' retry) claims the pass
when the lease lapses and goes on.

When the pass ends its waiters (the campaign's handoffs of contacts at this company) are
published, then cleared: a crash in between publishes them again.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from colony.errors import ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.research import plan
from colony.flows.research.keep import keep
from colony.flows.research.requests import FRESH_DAYS, domain_of, request, schedule
from colony.store.research import jobs, sources

logger = logging.getLogger(__name__)

TASK_BUDGET = 200.0  # seconds a task fetches for (the function's timeout is 300)
LEASE = TASK_BUDGET + 60.0  # a crashed task's pass is taken up after this
SHORT_WAIT = 2.5  # a site's pause up to this is waited for in the task
UNREACHED = frozenset({"unreachable", "timeout", "refused_address", "bad_url"})


def run(
    deps: FlowDeps,
    org_id: str,
    domain: str,
    pass_no: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
    reschedule: bool = True,
    on_fetch: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The ``research`` function's task: work pass ``pass_no`` of ``domain`` (module
    docstring). Answers what it did: ``finished``, ``waiting`` (scheduled again),
    ``continued`` (handed on at its time budget) or ``skipped`` (not this task's to work).
    ``reschedule=False`` hands the pass on without scheduling a task (``run_to_end``);
    ``on_fetch`` is told each fetch's role, URL and outcome (progress for a person)."""
    with deps.db.transaction(org_id) as cur:
        job = jobs.claim(cur, domain, pass_no, LEASE)
    if job is None:
        return {"status": "skipped", "domain": domain, "pass": pass_no}
    if job["status"] == "done":  # ended, its waiters not yet published (a crash)
        return _publish(deps, org_id, domain, pass_no, job["waiters"], job["outcome"])
    with deps.db.transaction(org_id) as cur:
        previous = {s["url"]: s for s in sources.for_domain(cur, domain)}
    work = _Pass(deps, org_id, domain, pass_no, job, previous, reschedule, on_fetch)
    started = time.monotonic()
    while True:
        head, rest = plan.take(work.frontier, work.roles)
        if head is None or work.pages >= plan.MAX_PAGES:
            return work.finish()
        if time.monotonic() - started > TASK_BUDGET:
            return work.hand_on(0.0, "continued")
        work.frontier = rest
        pause = work.fetch(head)
        if pause is not None:  # the site asks for a pause: ``head`` is fetched after it
            work.frontier = [head, *work.frontier]
            if pause > SHORT_WAIT or time.monotonic() - started + pause > TASK_BUDGET:
                return work.hand_on(pause, "waiting")
            sleep(pause)
            continue
        work.save()


class _Pass:
    """One task's share of a pass: the frontier and counts, kept on the job's row."""

    def __init__(
        self,
        deps: FlowDeps,
        org_id: str,
        domain: str,
        pass_no: int,
        job: Mapping[str, Any],
        previous: dict[str, Any],
        reschedule: bool = True,
        on_fetch: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.deps, self.org_id, self.domain, self.pass_no = deps, org_id, domain, pass_no
        self.reschedule, self.on_fetch = reschedule, on_fetch
        self.frontier: list[dict[str, Any]] = list(job["frontier"])
        self.visited: list[list[str]] = [list(v) for v in job["visited"]]
        self.pages, self.downloads = int(job["pages"]), int(job["downloads"])
        self.previous = previous
        self.roles = Counter(role for _, role in self.visited)

    def fetch(self, head: dict[str, Any]) -> float | None:
        """Fetch and keep ``head``; the pause a site asked for (None: fetched)."""
        url, role = head["url"], head["role"]
        before = self.previous.get(url)
        # validators only for a copy we kept: a 304 must have something to confirm
        held = before if before is not None and before["raw_object"] else None
        result = self.deps.web.fetch(
            url,
            etag=held["etag"] if held else None,
            last_modified=held["last_modified"] if held else None,
        )
        if result.outcome == "wait":
            retry = result.retry_at or result.fetched_at
            return max((retry - result.fetched_at).total_seconds(), 0.05)
        self.visited.append([url, role])
        self.pages += 1
        tried = [u for u, _ in self.visited]
        if result.outcome == "redirected":  # another site (or a pause mid-chain): its own page
            moved = plan.site(result.final_url) != plan.site(url)
            again = plan.entry(result.final_url, "moved" if moved else role)
            self.frontier = plan.merge(self.frontier, [again], tried)
        else:
            self.roles[role] += 1
        kept = keep(self.deps, self.org_id, self.domain, self.pass_no, role, result, before)
        self.downloads += kept.downloaded
        if self.on_fetch is not None:
            self.on_fetch(
                {
                    "role": role,
                    "url": url,
                    "outcome": result.outcome,
                    "status": result.status,
                    "detail": result.detail,
                }
            )
        if role == "home" and result.outcome in UNREACHED and plan.plain_http(url):
            # no https here: the site's pages (the sitemap too) are asked over http
            self.frontier = plan.over_http(self.frontier, self.domain, url)
        if kept.doc is not None:
            reading_as = "home" if role == "moved" else role
            found = plan.follow(kept.doc, reading_as, self.domain)
            self.frontier = plan.merge(self.frontier, found, tried)
        return None

    def save(self) -> None:
        with self.deps.db.transaction(self.org_id) as cur:
            jobs.save(
                cur,
                self.domain,
                self.pass_no,
                self.frontier,
                self.visited,
                self.pages,
                self.downloads,
            )

    def hand_on(self, delay: float, why: str) -> dict[str, Any]:
        """Save, and schedule the pass's next task ``delay`` seconds from now."""
        self.save()
        with self.deps.db.transaction(self.org_id) as cur:
            wakes = jobs.wake(cur, self.domain, self.pass_no)
        if wakes is not None and self.reschedule:
            schedule(self.deps, self.org_id, self.domain, self.pass_no, wakes, delay)
        return {
            "status": why,
            "domain": self.domain,
            "pass": self.pass_no,
            "pages": self.pages,
            "retry_in_s": round(delay, 2),
        }

    def finish(self) -> dict[str, Any]:
        self.save()
        with self.deps.db.transaction(self.org_id) as cur:
            kept = [s for s in sources.for_domain(cur, self.domain) if s["pass"] == self.pass_no]
            outcome = _outcome(kept)
            waiters = jobs.finish(cur, self.domain, self.pass_no, outcome)
        if waiters is None:
            return {"status": "skipped", "domain": self.domain, "pass": self.pass_no}
        return _publish(
            self.deps,
            self.org_id,
            self.domain,
            self.pass_no,
            waiters,
            outcome,
            pages=self.pages,
            downloads=self.downloads,
        )


def run_to_end(
    deps: FlowDeps,
    org_id: str,
    company: str,
    *,
    force: bool = False,
    requested_by: str,
    sleep: Callable[[float], None] = time.sleep,
    on_fetch: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Research ``company`` here and now, to the end of its pass (``colony research``, the
    local demo): the same pass a task works, waiting in this process for each site's pace
    instead of scheduling itself. A pass within the freshness window (without ``force``) is
    answered as it stands."""
    state = request(deps, org_id, company, requested_by=requested_by, force=force, dispatch=False)
    domain = str(domain_of(company))
    with deps.db.transaction(org_id) as cur:
        job = jobs.get(cur, domain, FRESH_DAYS * 86400)
    if job is None:  # request started one: only an erasure in between would remove it
        raise ValidationFailed(f"the research of {domain} was removed while it started")
    if state == "ready":
        return {"status": "fresh", "domain": domain, "pass": job["pass"], "outcome": job["outcome"]}
    while True:
        answer = run(
            deps, org_id, domain, int(job["pass"]), sleep=sleep, reschedule=False, on_fetch=on_fetch
        )
        if answer["status"] == "finished":
            return answer
        # waiting for a site, handed on at its time budget, or another worker holds the pass
        sleep(max(float(answer.get("retry_in_s") or 0.0), 0.5))
        with deps.db.transaction(org_id) as cur:
            now = jobs.get(cur, domain, FRESH_DAYS * 86400)
        if now is None or now["pass"] != job["pass"] or now["status"] == "done":
            return {
                "status": "finished",
                "domain": domain,
                "pass": job["pass"],
                "outcome": now["outcome"] if now else None,
            }


def _outcome(kept: list[Any]) -> str:
    """``researched`` when some text was read (or confirmed), ``no_website`` when the home
    page was never reached, else ``nothing_read`` (refused by robots.txt, 404s...)."""
    if any(s["text_chars"] for s in kept if s["outcome"] in ("ok", "not_modified")):
        return "researched"
    homes = [s for s in kept if s["role"] == "home"]
    if homes and all(s["outcome"] in UNREACHED for s in homes):
        return "no_website"
    return "nothing_read"


def _publish(
    deps: FlowDeps,
    org_id: str,
    domain: str,
    pass_no: int,
    waiters: Sequence[Mapping[str, Any]],
    outcome: str,
    **counts: int,
) -> dict[str, Any]:
    for waiter in waiters:
        deps.transport.publish(waiter["topic"], waiter["data"].encode(), dict(waiter["attributes"]))
    with deps.db.transaction(org_id) as cur:
        jobs.clear_waiters(cur, domain, pass_no)
    logger.info(
        "research pass ended",
        extra={"org_id": org_id, "pass": pass_no, "outcome": outcome, "waiters": len(waiters)},
    )
    return {
        "status": "finished",
        "domain": domain,
        "pass": pass_no,
        "outcome": outcome,
        "released": len(waiters),
        **counts,
    }
