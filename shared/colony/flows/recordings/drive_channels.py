"""Drive watch channels that live (issue 17 item 5): create, renew before expiry, stop.

    admin ``POST /orgs/{org}/drive/watch`` ─► ``watch``: the folder proven the org's
        (``flows.recordings.drive_folders``; 403 and audited if not) ─► ``files.watch`` on it, its
        token bound to (org, folder) (``webhooks.watch_token``), the channel id and expiry
        stored ─► the Drive webhook accepts only notifications of a stored, active,
        unexpired channel of that org and of a folder bound to it (``check``)
    the drive-renew schedule's task ``{"task": {"kind": "drive.renew", "org_id"}}``
        ─► ``renew``: every active channel's folder re-checked (a channel from before
        folders were proven is stopped unless its marker is there), then every channel
        expiring within ``RENEW_WITHIN`` gets a successor for its folder first, then is
        stopped, so the folder is never unwatched
    org erased (Clerk ``organization.deleted`` → erasure, phase ``channels``) ─► ``stop_org``:
        ``channels.stop`` for each active channel, then marked stopped

Drive caps a file channel at a day (``CHANNEL_SECONDS``); the renewal runs every few hours
(terraform ``drive_renew_schedule``), well inside ``RENEW_WITHIN``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from colony.errors import ConfigError, OwnershipUnproven, Unauthorized
from colony.flows.deps import FlowDeps
from colony.flows.recordings import drive_folders
from colony.ports import DriveChannels, DriveWatcher
from colony.store.recordings import drive_channels as repo
from colony.webhooks import watch_token

CHANNEL_SECONDS = 86_400
RENEW_WITHIN = timedelta(hours=12)
WEBHOOK = "drive-webhook"


def watch(
    deps: FlowDeps, drive: DriveWatcher, org_id: str, folder_id: str, actor: str
) -> dict[str, Any]:
    """Watch ``folder_id`` for the org (once it is proven theirs): a new channel, stored with
    its expiry. ``actor``: the person who asked (or ``system`` for a renewal)."""
    drive_folders.ensure_owned(deps, drive, org_id, drive_folders.valid_folder(folder_id), actor)
    secret = deps.settings.drive_channel_token
    if not secret:
        raise ConfigError("COLONY_DRIVE_CHANNEL_TOKEN is required to create Drive channels")
    address = deps.settings.function_urls.get(WEBHOOK)
    if not address:
        raise ConfigError(f"COLONY_FUNCTION_URLS names no URL for {WEBHOOK!r} (Drive's address)")
    now = deps.clock()
    channel_id = f"colony-{uuid.uuid4().hex}"
    asked = int((now.timestamp() + CHANNEL_SECONDS) * 1000)
    token = watch_token(secret, org_id, folder_id)
    created = drive.watch_folder(folder_id, channel_id, address, token, asked)
    expires = datetime.fromtimestamp((created.expiration_ms or asked) / 1000, UTC)
    with deps.db.transaction(org_id) as cur:
        repo.add(cur, created.id, org_id, folder_id, created.resource_id, expires)
    return {"channel_id": created.id, "folder_id": folder_id, "expires_at": expires.isoformat()}


def renew(deps: FlowDeps, drive: DriveWatcher, org_id: str) -> dict[str, Any]:
    """Stop every channel of a folder the org has not proven, then replace every channel
    that expires within ``RENEW_WITHIN``."""
    with deps.db.transaction(org_id) as cur:
        live = repo.active(cur)
    stopped = []
    for channel in live:
        if not drive_folders.recheck(deps, drive, org_id, str(channel["folder_id"])):
            _stop(deps, drive, org_id, channel)
            stopped.append(channel["id"])
    horizon = deps.clock() + RENEW_WITHIN
    with deps.db.transaction(org_id) as cur:
        due = repo.expiring(cur, horizon)
    renewed = []
    for old in due:
        new = watch(deps, drive, org_id, str(old["folder_id"]), "system")  # successor first
        _stop(deps, drive, org_id, old)
        renewed.append({"old": old["id"], "new": new["channel_id"]})
    return {"org_id": org_id, "renewed": renewed, "stopped_unproven": stopped}


def stop_org(deps: FlowDeps, drive: DriveChannels, org_id: str) -> int:
    """Stop every active channel of the org (a disabled or erased org); how many."""
    with deps.db.transaction(org_id) as cur:
        channels = repo.active(cur)
    for channel in channels:
        _stop(deps, drive, org_id, channel)
    return len(channels)


def _stop(deps: FlowDeps, drive: DriveChannels, org_id: str, channel: Any) -> None:
    drive.stop_channel(str(channel["id"]), str(channel["resource_id"]))
    with deps.db.transaction(org_id) as cur:
        repo.mark_stopped(cur, str(channel["id"]))


def check(deps: FlowDeps, org_id: str, channel_id: str | None, folder_id: str) -> None:
    """``Unauthorized`` unless ``channel_id`` is an active, unexpired channel we created for
    this org's ``folder_id`` (a valid token of a stopped or expired channel is refused)."""
    if not channel_id or len(channel_id) > 64:
        raise Unauthorized("the Drive notification names no channel we created")
    with deps.db.transaction(org_id) as cur:
        row = repo.get(cur, channel_id)
        proven = drive_folders.owned(cur, folder_id)
    if row is None or row["folder_id"] != folder_id:
        raise Unauthorized("the Drive notification names no channel we created")
    if row["status"] != "active":
        raise Unauthorized("the Drive channel was stopped")
    if row["expires_at"] <= deps.clock():
        raise Unauthorized("the Drive channel has expired")
    if not proven:  # a channel from before folders were proven (migration 0039)
        raise OwnershipUnproven("the Drive folder is not proven to be this organisation's")


def channels(deps: FlowDeps, org_id: str) -> dict[str, Any]:
    with deps.db.transaction(org_id) as cur:
        rows = repo.recent(cur)
    return {
        "channels": [
            {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.items()}
            for r in rows
        ]
    }
