"""Which Drive folders are an org's (issue 31): proven by a marker file, bound to one org.

Every org's folders are read through one Drive identity, so that identity reaching a folder
says nothing about whose it is: without a proof, an admin who learnt another org's folder id
could watch it and receive that org's call transcripts. A folder becomes an org's when a
file named after the org's marker (``colony.webhooks.folder_marker``: an HMAC of the org and
the folder, so no other org can compute it) is in it, which only someone who can write to
the folder can do; it is then bound to that org (``store.claims``) and refused to any other.

    admin ``GET /orgs/{org}/drive/folders/{folder}`` ─► ``proof``: the marker's name and
        whether the folder is the org's yet
    admin ``POST /orgs/{org}/drive/watch`` ─► ``ensure_owned`` ─► bound to this org: go on
        ─► bound to another org: ``OwnedElsewhere`` (403), audited
        ─► the marker is in the folder (listed through our identity): bind it, go on
        ─► else ``OwnershipUnproven`` (403) naming the marker, audited
    the drive-renew task ─► ``recheck`` (``drive_channels.renew``): an active channel
        whose folder is not bound to its org (one created before migration 0039) is bound
        if the marker is there, else stopped, and the stop audited
    a Drive notification ─► ``drive_channels.check``: a channel of a folder that is not
        bound to its org is refused before anything is listed or stored

The marker may stay in the folder or be removed once the folder is bound; the webhook never
takes it for a transcript (``webhooks.is_transcript``).
"""

from __future__ import annotations

from typing import Any

from colony.errors import (
    ConfigError,
    NotFound,
    OwnedElsewhere,
    OwnershipUnproven,
    ValidationFailed,
)
from colony.flows.deps import FlowDeps
from colony.ports import DriveClient
from colony.store import claims, orgdata
from colony.store.approvals import audit
from colony.webhooks import folder_marker

KIND = "drive_folder"
METHOD = "marker"


def valid_folder(folder_id: str) -> str:
    """``folder_id`` if it has the shape of a Drive id; ``ValidationFailed`` otherwise."""
    if (
        not folder_id
        or len(folder_id) > 200
        or not folder_id.replace("-", "").replace("_", "").isalnum()
        or not folder_id.isascii()
    ):
        raise ValidationFailed("folder_id is not a Drive folder id")
    return folder_id


def marker(deps: FlowDeps, org_id: str, folder_id: str) -> str:
    """The file name that proves ``folder_id`` is the org's."""
    secret = deps.settings.drive_channel_token
    if not secret:
        raise ConfigError("COLONY_DRIVE_CHANNEL_TOKEN is required to watch Drive folders")
    return folder_marker(secret, org_id, valid_folder(folder_id))


def owned(cur: Any, folder_id: str) -> bool:
    """Whether the cursor's org holds ``folder_id``."""
    return claims.held(cur, KIND, folder_id)


def proof(deps: FlowDeps, org_id: str, folder_id: str) -> dict[str, Any]:
    """What the admin needs to prove the folder: the marker's name, and whether it is done."""
    name = marker(deps, org_id, folder_id)
    with deps.db.transaction(org_id) as cur:
        proven = owned(cur, folder_id)
    return {
        "folder_id": folder_id,
        "marker_name": name,
        "status": "proven" if proven else "unproven",
        "how": (
            f"create a file named {name!r} (any type, it may be empty) in the folder, then"
            " watch it; the file may be removed once the folder is watched"
        ),
    }


def ensure_owned(
    deps: FlowDeps,
    drive: DriveClient,
    org_id: str,
    folder_id: str,
    actor: str,
    channel: audit.Channel = "admin",
) -> None:
    """Return once ``folder_id`` is bound to the org; raise (and audit) when it is not."""
    with deps.db.transaction(org_id) as cur:
        if owned(cur, valid_folder(folder_id)):
            return
        if not orgdata.org_exists(cur, org_id):  # (nor could its refusal be audited)
            raise NotFound(f"org {org_id!r} does not exist")
    name = marker(deps, org_id, folder_id)
    if not _marker_present(drive, folder_id, name):
        _refuse(deps, org_id, folder_id, actor, channel, "ownership_unproven")
        raise OwnershipUnproven(
            f"Drive folder {folder_id!r} is not proven to be this organisation's: create a file"
            f" named {name!r} in it (any type, it may be empty), then ask again"
        )
    with deps.db.transaction(org_id) as cur:
        held = claims.claim(cur, org_id, KIND, folder_id, METHOD, actor)
    if held is claims.Claim.ELSEWHERE:
        _refuse(deps, org_id, folder_id, actor, channel, "owned_by_another_org")
        raise OwnedElsewhere(
            f"Drive folder {folder_id!r} is already connected to another organisation"
        )


def recheck(deps: FlowDeps, drive: DriveClient, org_id: str, folder_id: str) -> bool:
    """Whether an existing channel's folder is (or now becomes) the org's; ``False`` after
    auditing why not. Used by the renewal for channels created before folders were proven."""
    try:
        ensure_owned(deps, drive, org_id, folder_id, "system", "system")
    except (OwnershipUnproven, OwnedElsewhere):
        return False
    return True


def _marker_present(drive: DriveClient, folder_id: str, name: str) -> bool:
    try:
        return any(f.name == name for f in drive.list_folder(folder_id))
    except NotFound:  # our identity cannot see the folder at all
        return False


def _refuse(
    deps: FlowDeps,
    org_id: str,
    folder_id: str,
    actor: str,
    channel: audit.Channel,
    reason: str,
) -> None:
    """The refusal on the org's audit log, in a transaction of its own."""
    entry = audit.Entry(
        event="refusal",
        actor=actor,
        channel=channel,
        action="drive.watch",
        reason=reason,
        detail={"resource": KIND, "folder_id": folder_id},
    )
    with deps.db.transaction(org_id) as cur:
        audit.append(cur, org_id, entry)
