"""Erasure (issue 14 item 6): an org, or one prospect of it, removed everywhere we keep it.

A job is a row in ``erasure_jobs`` (``store.tenants.erasure``) run by ``run_job`` as a sequence of
phases, each idempotent and marked done when it finishes; a crash (or a failed Cloud Tasks
attempt) anywhere re-runs the job from the first phase not marked, and the phase it was in
simply finds less to do. It ends with a verification report, stored on the job and returned.

Org phases, in order:

0. ``connections``: the org's Drive watch channels stopped at Drive (``channels.stop``; a
   disabled org must stop receiving notifications first), and its Notion workspaces' and
   CRM connection's tokens and its sending domains' DKIM private keys deleted from Secret
   Manager (``OrgConnections``; None: nothing outside to undo);
1. ``traces``: every Langfuse trace tagged ``org:<org>`` (``ports.TraceArchive``) deleted;
2. ``objects``: every object under the org's folders (``ORG_PREFIXES``) and every object an
   org row names (transcript URIs, kit objects), deleted;
3. ``indexes``: the org's per-(org, domain) HNSW indexes dropped (``knowledge.indexes``);
4. ``rows``: every row of the org in every org-scoped table, children first (the order is
   read from the catalog's foreign keys), and the rejections that claimed it; one
   transaction, so a crash leaves all of them or none.

Contact phases: ``objects`` (its calls' transcripts, and the stored research pages that name
it, with their rows), then ``rows``
(``store.tenants.erasure_contact.erase``: its rows, its messages, its calls' approval items and KC
chunks, and its id, email and name redacted wherever else they appear).

Objects are deleted before the rows that name them, so a resumed job can still find them.
The job runs with the role it is given (``deps.db``: the application role in production,
scoped to the org by RLS; the two owner-only steps go through SECURITY DEFINER functions).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from colony.contracts.lifecycle import ErasureTask, LifecycleBody
from colony.errors import NotFound
from colony.flows.deps import FlowDeps
from colony.knowledge.indexes import check_org_literal, existing_org_indexes
from colony.ports import SecretStore, TraceArchive, org_tag
from colony.registry.functions import ERASURE_QUEUE, QUEUES
from colony.store.crm import connections as crm_connections
from colony.store.knowledge import notion_workspaces
from colony.store.outbound import mailboxes as sender_mailboxes
from colony.store.outbound import sending_domains
from colony.store.research import sources as research_sources
from colony.store.tenants import erasure, erasure_contact


@dataclass(frozen=True, slots=True)
class OrgConnections:
    """What an org connected outside our database, and how to undo it: what stops its Drive
    channels (given by the composition: ``flows.recordings.drive_channels.stop_org`` bound to
    a Drive client, so erasing an org does not depend on the recordings capability), and the
    secret store that holds its Notion tokens, its CRM connection's and its sending domains'
    DKIM keys."""

    stop_drive_channels: Callable[[str], int] | None = None
    secrets: SecretStore | None = None


ORG_PREFIXES = (
    "transcripts/{org}/",
    "deployment-kits/{org}/",
    "imports/{org}/",
    "research/{org}/",  # the pages research stored (colony.flows.research.keep)
)
ORG_PHASES = ("connections", "traces", "objects", "indexes", "rows")
CONTACT_PHASES = ("objects", "rows")


def request_org(deps: FlowDeps, org_id: str, requested_by: str) -> str:
    """Open (or find the open) erasure job for ``org_id``; ``NotFound`` for an unknown org.
    The open job is found first: a job that crashed after deleting the org's row resumes."""
    check_org_literal(org_id)
    with deps.db.transaction(org_id) as cur:
        if (running := erasure.open_job(cur, org_id, None)) is not None:
            return running
        if not erasure.org_exists(cur, org_id):
            raise NotFound(f"org {org_id!r} does not exist")
        return erasure.create_job(cur, org_id, None, requested_by)


def request_contact(deps: FlowDeps, org_id: str, contact_id: str, requested_by: str) -> str:
    """Open (or find) the erasure job for one contact of ``org_id``."""
    check_org_literal(org_id)
    with deps.db.transaction(org_id) as cur:
        if (running := erasure.open_job(cur, org_id, contact_id)) is not None:
            return running
        if erasure_contact.contact(cur, contact_id) is None:
            raise NotFound(f"contact {contact_id!r} does not exist in this org")
        return erasure.create_job(cur, org_id, contact_id, requested_by)


def schedule(deps: FlowDeps, job_id: str) -> str:
    """Put the job on the erasure queue (named by the job: created once)."""
    body = LifecycleBody(task=ErasureTask(job_id=job_id)).model_dump(mode="json")
    return deps.transport.schedule(
        ERASURE_QUEUE,
        QUEUES[ERASURE_QUEUE].target,
        json.dumps(body).encode(),
        task_id=f"erasure-{job_id}",
    )


def job(deps: FlowDeps, job_id: str) -> dict[str, Any]:
    with deps.db.transaction(None) as cur:
        row = erasure.get_job(cur, job_id)
    if row is None:
        raise NotFound(f"erasure job {job_id!r} does not exist")
    return {
        "job_id": row["id"],
        "org_id": row["target_org"],
        "contact_id": row["contact_id"],
        "status": row["status"],
        "phases_done": list(row["phases_done"]),
        "report": row["report"],
        "created_at": row["created_at"].isoformat(),
        "finished_at": row["finished_at"].isoformat() if row["finished_at"] else None,
    }


def run_job(
    deps: FlowDeps,
    job_id: str,
    traces: TraceArchive | None,
    connections: OrgConnections | None = None,
) -> dict[str, Any]:
    """Run the job's remaining phases and its verification; returns the job with its report.
    ``traces`` None: tracing is off in this deployment, so no trace was ever kept."""
    current = job(deps, job_id)
    if current["status"] == "done":
        return current
    org, contact_id = current["org_id"], current["contact_id"]
    done = set(current["phases_done"])
    phases: dict[str, Callable[[], None]]
    if contact_id is None:
        phases = _org_phases(deps, org, traces, connections or OrgConnections())

        def verify() -> dict[str, Any]:
            return verify_org(deps, org, traces)
    else:
        contact = phases = _contact_phases(deps, org, contact_id)

        def verify() -> dict[str, Any]:
            return verify_contact(deps, org, contact_id, contact.needles, contact.objects)

    for name, work in phases.items():
        if name in done:
            continue
        work()
        deps.faults.check(f"erasure.after_{name}", job_id)  # crash-and-resume tests
        with deps.db.transaction(None) as cur:
            erasure.mark_phase(cur, job_id, name)
    report = verify()
    with deps.db.transaction(None) as cur:
        erasure.finish_job(cur, job_id, report)
    return job(deps, job_id)


# -- an org


def _org_phases(
    deps: FlowDeps, org: str, traces: TraceArchive | None, connections: OrgConnections
) -> dict[str, Callable[[], None]]:
    def erase_connections() -> None:
        if connections.stop_drive_channels is not None:
            connections.stop_drive_channels(org)
        if connections.secrets is not None:
            with deps.db.transaction(org) as cur:
                # Notion tokens, CRM tokens (issue 36), DKIM private keys (issue 39 item 3)
                # and mailbox grants (issue 39 item 2)
                names = (
                    notion_workspaces.secret_names(cur)
                    + crm_connections.secret_names(cur)
                    + sending_domains.secret_names(cur)
                    + sender_mailboxes.secret_names(cur)
                )
            for name in names:
                connections.secrets.delete(name)

    def erase_traces() -> None:
        if traces is not None and (ids := traces.trace_ids(org_tag(org))):
            traces.delete(ids)

    def erase_objects() -> None:
        names = set(_org_object_names(deps, org))
        with deps.db.transaction(org) as cur:
            names |= {n for uri in erasure.org_object_uris(cur) if (n := _object(deps, uri))}
        for name in sorted(names):
            deps.blobs.delete(name)

    def erase_indexes() -> None:
        with deps.db.transaction(org) as cur:
            erasure.drop_org_indexes(cur, org)

    def erase_rows() -> None:
        with deps.db.transaction(org) as cur:
            for table in erasure.org_delete_order(cur):
                erasure.delete_org_rows(cur, table, org)
            erasure.erase_rejections(cur, org)

    return {
        "connections": erase_connections,
        "traces": erase_traces,
        "objects": erase_objects,
        "indexes": erase_indexes,
        "rows": erase_rows,
    }


def _org_object_names(deps: FlowDeps, org: str) -> list[str]:
    return [name for p in ORG_PREFIXES for name in deps.blobs.names(p.format(org=org))]


def _object(deps: FlowDeps, uri: str) -> str | None:
    """The object name of ``gs://<our bucket>/<name>``; None for anything else."""
    prefix = f"gs://{deps.blobs.bucket}/"
    return uri[len(prefix) :] if uri.startswith(prefix) and len(uri) > len(prefix) else None


def verify_org(deps: FlowDeps, org: str, traces: TraceArchive | None) -> dict[str, Any]:
    """Rows left per org-scoped table, references to the org id left in their text, objects
    and indexes and traces left: all zero for a complete erasure."""
    with deps.db.transaction(org) as cur:
        rows = erasure.count_org_rows(cur, org)
        references = erasure.references(cur, [org], tables=erasure.scoped_tables())
        indexes = existing_org_indexes(cur, org)
    objects = len(_org_object_names(deps, org))
    traces_left = len(traces.trace_ids(org_tag(org))) if traces is not None else 0
    complete = not any(rows.values()) and not references and not objects and not indexes
    return {
        "kind": "org",
        "org_id": org,
        "rows_left": rows,
        "references_left": references,
        "objects_left": objects,
        "indexes_left": len(indexes),
        "traces_left": traces_left,
        "traces_checked": traces is not None,
        "complete": complete and not traces_left,
    }


# -- one contact


class _ContactPhases(dict[str, Callable[[], None]]):
    """The contact's phases, remembering what they learnt for the verification."""

    def __init__(self) -> None:
        super().__init__()
        self.needles: list[str] = []
        self.objects: list[str] = []


def _contact_phases(deps: FlowDeps, org: str, contact_id: str) -> _ContactPhases:
    phases = _ContactPhases()
    phases.needles.append(contact_id)

    def erase_objects() -> None:
        with deps.db.transaction(org) as cur:
            uris = erasure_contact.call_transcripts(cur, contact_id)
            row = erasure_contact.contact(cur, contact_id)
            # stored pages that name the person (a leadership page): gone with their copies
            pages = research_sources.mentioning(cur, erasure_contact.tokens(row)) if row else []
        names = {n for uri in uris if (n := _object(deps, uri))}
        names |= {n for p in pages for n in research_sources.objects(p)}
        phases.objects = sorted(names)
        for name in phases.objects:
            deps.blobs.delete(name)
        with deps.db.transaction(org) as cur:
            research_sources.forget(cur, [p["id"] for p in pages])

    def erase_rows() -> None:
        with deps.db.transaction(org) as cur:
            row = erasure_contact.contact(cur, contact_id)
            if row is None:
                return  # erased by an earlier attempt that crashed before marking it
            phases.needles[:] = erasure_contact.tokens(row)
            erasure_contact.erase(cur, row)

    phases["objects"] = erase_objects
    phases["rows"] = erase_rows
    return phases


def verify_contact(
    deps: FlowDeps, org: str, contact_id: str, needles: list[str], names: list[str]
) -> dict[str, Any]:
    """References left to the contact in every org table (``needles``: its id always, its
    email and name when this run read them before deleting the row), and which of its
    transcripts (``names``) are still in the bucket."""
    with deps.db.transaction(org) as cur:
        references = erasure.references(cur, needles, tables=erasure.scoped_tables())
        still = erasure_contact.contact(cur, contact_id) is not None
    objects = 0
    for name in names:
        folder = name.rsplit("/", 1)[0] + "/"
        objects += name in deps.blobs.names(folder)
    return {
        "kind": "contact",
        "org_id": org,
        "contact_id": contact_id,
        "contact_left": still,
        "references_left": references,
        "identifiers_checked": len(needles),
        "objects_left": objects,
        "complete": not still and not references and not objects,
    }
