"""The admin API: an org's admins erase their org or one prospect, read the report, set
retention periods, and read and replace the ICP definition, the sequence library and the
org's settings.

Routes (JSON; ``Authorization: Bearer <Clerk session JWT>``):

- ``POST /orgs/{org}/erasure`` → 202 ``{"job_id", "status"}``: erase the whole org;
- ``POST /orgs/{org}/contacts/{contact}/erasure`` → 202: erase one prospect;
- ``GET /erasures/{job}`` → the job, with its verification report once done;
- ``GET /orgs/{org}/retention``, ``PUT /orgs/{org}/retention`` (``{"days": {...}}``);
- ``GET``/``PUT /orgs/{org}/icp``: the active ICP definition and anti-ICP rules
  (``contracts.admin.IcpReplace``; a replace writes a new version);
- ``GET``/``PUT /orgs/{org}/sequences``: the sequence library (``SequenceLibrary``);
- ``GET``/``PUT /orgs/{org}/settings``: competitors and sending limits (``OrgSettingsReplace``);
- ``POST /orgs/{org}/notion`` → 202: connect a Notion workspace (``NotionConnect``: its id, its
  token, its KC mapping) and start its backfill; 403 ``ownership_unproven`` if the token is
  not that workspace's or cannot read a mapped id, 403 ``owned_by_another_org`` if another
  org connected it first (both audited; ``flows.knowledge.notion_workspaces``);
- ``GET /orgs/{org}/notion``: the org's workspaces and their backfill / reconciliation runs;
- ``GET /orgs/{org}/drive/folders/{folder}``: the marker file that proves a Drive folder is
  the org's, and whether it is yet (``flows.recordings.drive_folders``);
- ``POST /orgs/{org}/drive/watch`` → 201 (``{"folder_id"}``): watch the org's recordings
  folder (a Drive channel, renewed by the scheduler); 403 ``ownership_unproven`` until the
  marker is in the folder, 403 ``owned_by_another_org`` if another org proved it first (both
  audited); ``GET /orgs/{org}/drive/channels``.
- ``/orgs/{org}/imports…``: prospect and deal imports (``colony.admin.imports``);
- ``/orgs/{org}/research…``: research a company's website now, and read what was kept
  (``colony.admin.research``);
- ``GET``/``POST /orgs/{org}/sending-domains``: the org's sending domains, and adding one,
  which checks its SPF, DKIM and DMARC in DNS (``colony.admin.sending_domains``).
- ``/orgs/{org}/mailboxes…``: the org's sender mailboxes, their limits and warm-up, and
  connecting a Google Workspace or Microsoft 365 mailbox (``colony.admin.mailboxes``).
- ``/orgs/{org}/crm/hubspot…``: connect HubSpot through OAuth, its status, disconnect it,
  the stage mapping and the backfill (``colony.admin.crm``);
- ``POST /crm/hubspot/webhook``: HubSpot's webhook, authenticated by HubSpot's v3 signature
  instead of a bearer token (``colony.admin.crm.webhook``).
- ``/orgs/{org}/team``, ``/members…``, ``/owners…``: the team's settings (time zone, brief
  time, backup, escalation, assignment rules), its people (and a resync from Clerk), and
  who owns which prospect or deal (``colony.admin.team``).
- ``PUT /orgs/{org}/notifications/slack|brief``: the org's Slack workspace and bot token, the
  brief's local time (``colony.admin.notifications``).
- ``GET``/``PUT /orgs/{org}/postal-address`` and ``POST /orgs/{org}/sending/resume``: the
  postal address mail's footer prints, and resuming what the circuit breaker paused
  (``colony.admin.deliverability``).

A replace body with an unknown field, or a rule that cannot work, is a 422 naming it.

Who may: a verified bearer token (``runtime.auth.verify_bearer``) whose org is the target
org (else 403) and which carries the org admin role (``runtime.auth.require_org_admin``;
else 403). A change of the ICP, the sequences or the settings is on the audit log. A refusal
is recorded (``RejectionRecorder``: ids and the reason, never the token) and changes
nothing. The erasure itself runs on the erasure queue (``flows.tenants.erasure.schedule``).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel

from colony.admin import (
    crm,
    deliverability,
    imports,
    mailboxes,
    notifications,
    research,
    sending_domains,
    team,
)
from colony.contracts.admin import (
    DriveWatch,
    IcpReplace,
    NotionConnect,
    OrgSettingsReplace,
    SequenceLibrary,
)
from colony.contracts.lifecycle import RetentionUpdate
from colony.errors import NotFound, Unauthorized, Unprocessable, ValidationFailed
from colony.flows.knowledge import notion_workspaces
from colony.flows.recordings import drive_channels, drive_folders
from colony.flows.tenants import erasure, org_admin, retention
from colony.runtime.auth import Principal, require_org_admin, verify_bearer
from colony.runtime.deps import Deps
from colony.runtime.edge import JsonRequest
from colony.runtime.edge.responses import MethodNotAllowed

M = TypeVar("M", bound=BaseModel)
FUNCTION = "admin"
_ID = r"[A-Za-z0-9_.:-]{1,128}"
ORG_ERASURE = re.compile(rf"^/orgs/(?P<org>{_ID})/erasure$")
CONTACT_ERASURE = re.compile(rf"^/orgs/(?P<org>{_ID})/contacts/(?P<contact>{_ID})/erasure$")
JOB = re.compile(rf"^/erasures/(?P<job>{_ID})$")
RETENTION = re.compile(rf"^/orgs/(?P<org>{_ID})/retention$")
ORG_DATA = re.compile(rf"^/orgs/(?P<org>{_ID})/(?P<what>icp|sequences|settings)$")
NOTION = re.compile(rf"^/orgs/(?P<org>{_ID})/notion$")
DRIVE = re.compile(rf"^/orgs/(?P<org>{_ID})/drive/(?P<what>watch|channels)$")
DRIVE_FOLDER = re.compile(rf"^/orgs/(?P<org>{_ID})/drive/folders/(?P<folder>[^/]{{1,200}})$")


def _admin_of(deps: Deps, request: JsonRequest, org: str) -> Principal:
    """The caller, if an admin of ``org``; else the refusal, recorded, raised."""
    try:
        principal = verify_bearer(request.authorization, deps.settings)
    except Unauthorized as error:
        deps.rejections.record(FUNCTION, None, org, f"unauthorized: {error}")
        raise
    require_org_admin(principal, org, lambda why: deps.rejections.record(FUNCTION, None, org, why))
    return principal


def _method(request: JsonRequest, *allowed: str) -> None:
    if request.method not in allowed:
        raise MethodNotAllowed("this method is not allowed here", allow=allowed)


def _replacement(request: JsonRequest, model: type[M]) -> M:
    """The body as ``model``; a body that parses as JSON but breaks the model is a 422."""
    try:
        return request.parse(model)
    except ValidationFailed as error:
        raise Unprocessable(str(error)) from None


def _org_data(deps: Deps, request: JsonRequest, who: Principal, what: str) -> dict[str, Any]:
    read, replace, model = _ORG_DATA[what]
    org = who.org_id
    if request.method == "GET":
        return read(deps, org)
    return replace(deps, org, _replacement(request, model), actor=who.user_id, channel="admin")


_ORG_DATA: dict[str, tuple[Any, Any, type[Any]]] = {
    "icp": (org_admin.icp, org_admin.replace_icp, IcpReplace),
    "sequences": (org_admin.sequences, org_admin.replace_sequences, SequenceLibrary),
    "settings": (org_admin.settings, org_admin.replace_settings, OrgSettingsReplace),
}


def handle(deps: Deps, request: JsonRequest) -> tuple[dict[str, Any], int] | dict[str, Any]:
    path = request.path
    if path == crm.WEBHOOK:  # signed by HubSpot, not by a person: no bearer token
        return crm.webhook(deps, request)
    if match := ORG_ERASURE.match(path):
        _method(request, "POST")
        org = match["org"]
        principal = _admin_of(deps, request, org)
        job_id = erasure.request_org(deps, org, principal.user_id)
        erasure.schedule(deps, job_id)
        return {"job_id": job_id, "status": "pending"}, 202
    if match := CONTACT_ERASURE.match(path):
        _method(request, "POST")
        org = match["org"]
        principal = _admin_of(deps, request, org)
        job_id = erasure.request_contact(deps, org, match["contact"], principal.user_id)
        erasure.schedule(deps, job_id)
        return {"job_id": job_id, "status": "pending"}, 202
    if match := JOB.match(path):
        _method(request, "GET")
        principal = verify_bearer(request.authorization, deps.settings)
        found = erasure.job(deps, match["job"])
        if found["org_id"] != principal.org_id:  # another org's job: as if it did not exist
            raise NotFound(f"erasure job {match['job']!r} does not exist")
        _admin_of(deps, request, found["org_id"])
        return found
    if match := RETENTION.match(path):
        _method(request, "GET", "PUT")
        org = match["org"]
        _admin_of(deps, request, org)
        if request.method == "GET":
            return retention.periods(deps, org)
        update = request.parse(RetentionUpdate)
        return retention.set_periods(deps, org, dict(update.days.items()))
    if match := ORG_DATA.match(path):
        _method(request, "GET", "PUT")
        principal = _admin_of(deps, request, match["org"])
        return _org_data(deps, request, principal, match["what"])
    if match := NOTION.match(path):
        _method(request, "GET", "POST")
        org = match["org"]
        principal = _admin_of(deps, request, org)
        if request.method == "GET":
            return notion_workspaces.status(deps, org)
        return _notion_connect(deps, request, org, principal), 202
    if match := DRIVE.match(path):
        org = match["org"]
        if match["what"] == "channels":
            _method(request, "GET")
            _admin_of(deps, request, org)
            return drive_channels.channels(deps, org)
        _method(request, "POST")
        principal = _admin_of(deps, request, org)
        watch = _replacement(request, DriveWatch)
        folder = watch.folder_id
        return drive_channels.watch(deps, _drive(deps), org, folder, principal.user_id), 201
    if match := DRIVE_FOLDER.match(path):
        _method(request, "GET")
        _admin_of(deps, request, match["org"])
        return drive_folders.proof(deps, match["org"], match["folder"])
    if match := research.RESEARCH.match(path):
        org = match["org"]
        principal = _admin_of(deps, request, org)
        return research.handle(deps, request, principal, org, match["domain"])
    if match := sending_domains.SENDING_DOMAINS.match(path):
        org = match["org"]
        principal = _admin_of(deps, request, org)
        return sending_domains.handle(deps, request, principal, org)
    if match := mailboxes.MAILBOXES.match(path):
        org = match["org"]
        principal = _admin_of(deps, request, org)
        return mailboxes.handle(deps, request, principal, org, match["id"], match["what"])
    if match := crm.CRM.match(path):
        org = match["org"]
        principal = _admin_of(deps, request, org)
        return crm.handle(deps, request, principal, org, match["what"])
    if match := deliverability.DELIVERABILITY.match(path):
        org = match["org"]
        principal = _admin_of(deps, request, org)
        return deliverability.handle(deps, request, principal, org, match["what"])
    if match := team.TEAM.match(path):
        org = match["org"]
        principal = _admin_of(deps, request, org)
        return team.handle(deps, request, principal, org, match["what"])
    if match := notifications.NOTIFICATIONS.match(path):
        principal = _admin_of(deps, request, match["org"])
        what = match["what"]
        return notifications.handle(deps, request, match["org"], what, principal.user_id)
    if match := imports.IMPORTS.match(path):
        org = match["org"]
        principal = _admin_of(deps, request, org)
        return imports.handle(deps, request, principal, org, match["job"], match["what"] or "")
    raise NotFound("there is nothing at this path")


def _notion_connect(
    deps: Deps, request: JsonRequest, org: str, principal: Principal
) -> dict[str, Any]:
    """Connect a workspace, proving it with a client that reads with the token given."""
    # lazy: Secret Manager's client and httpx load with the first connect
    from colony.adapters.notion import notion_for_token
    from colony.runtime.org_secrets import secret_store

    body = _replacement(request, NotionConnect)
    notion = notion_for_token(deps.settings, body.token.get_secret_value())
    try:
        secrets = secret_store(deps.settings)
        return notion_workspaces.connect(deps, secrets, notion, org, body, principal.user_id)
    finally:
        notion.close()


# The settings each client was built from are kept with it: an id alone can be reused by a
# later Settings once the first is gone, which would hand that one a client of the other's.
_drives: dict[int, tuple[Any, Any]] = {}


def _drive(deps: Deps) -> Any:
    """This instance's Drive client (built on the first Drive call)."""
    # lazy: httpx and google-auth, for the first Drive call
    from colony.adapters.drive import drive_from_settings

    cached = _drives.get(id(deps.settings))
    if cached is None or cached[0] is not deps.settings:
        cached = (deps.settings, drive_from_settings(deps.settings))
        _drives[id(deps.settings)] = cached
    return cached[1]
